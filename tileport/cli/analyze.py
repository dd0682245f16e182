"""`tileport analyze [OP.py]`: stage A without a model — kernels, variants, reference Tile IR, cubins.

With no OP it analyses every op in examples/ (the bundled corpus) and prints one line per op.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from tileport import service
from tileport.cli._common import config_from, int_in
from tileport.errors import UserError
from tileport.records import utcnow


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyze",
        help="analyse a cuTile Python op: kernels, variants, reference Tile IR and cubins (no model)",
        description="Find every @ct.kernel, its ct.Constant parameters, launches and structural variants; "
                    "export reference Tile IR bytecode, its text (tileirdisasm) and a cubin (tileiras) per "
                    "kernel x variant x dtype x target; write analysis.json. With no OP: every op in examples/.",
    )
    p.add_argument("op", nargs="?", metavar="OP.py|DIR",
                   help="the op module, or a library's directory: every op file in it (modules defining @ct.kernel or "
                        "@triton.jit kernels) analysed with its own tests, then a summary table per op "
                        "(default: every op in examples/)")
    p.add_argument("--kernel", metavar="NAME", help="only this kernel's variants (needs OP)")
    p.add_argument("--out", metavar="DIR",
                   help="output directory (default out/<op>/; with no OP, the root for out/<op>/ dirs)")
    p.add_argument("--target", dest="targets", action="extend", nargs="+", metavar="SM",
                   help="GPU targets, e.g. --target sm_90 sm_100 (default: tileport.toml targets)")
    p.add_argument("--no-cubin", action="store_true",
                   help="skip tileiras (faster, but no proof the backend accepts the IR)")
    p.add_argument("--python", metavar="PATH",
                   help="interpreter that imports the op (one with torch and cuda-tile for ops that import torch; "
                        "default: [analysis] python in tileport.toml, else tileport's own)")
    p.add_argument("--tests", action="append", metavar="PATH",
                   help="the op's own pytest file or directory, or a benchmark/main script: launches (shapes, dtypes, "
                        "constants) and tolerances are captured from it (repeatable; also [analysis] tests in "
                        "tileport.toml; tests/**/test_<op>.py is found automatically)")
    p.add_argument("--no-discover-tests", action="store_true",
                   help="do not look for tests/**/test_<op>.py (only --tests and [analysis] tests)")
    p.add_argument("--jobs", type=int_in(1, 256), metavar="N", help="parallel tileiras/tileirdisasm runs (default: up to 4)")
    p.add_argument("--triton", metavar="TRITON_OP.py",
                   help="the op's Triton twin (default: found by name, e.g. ops/triton/<op>.py beside ops/cutile/<op>.py); "
                        "analysed too, and the per-variant reference choice recorded")
    p.add_argument("--reference-timings", metavar="BENCH.json",
                   help="the pair benchmark's results from a GPU host: the faster side per variant becomes its reference")
    p.add_argument("--parallel", type=int_in(1, 64), metavar="N",
                   help="with DIR: ops analysed at once, each in its own process (default: 2, at most the CPUs)")
    p.add_argument("--json", action="store_true", help="with DIR: the summary as one JSON document")
    p.set_defaults(func=run)


def _fmt_s(seconds: float) -> str:
    return f"{seconds:.1f} s"


def _counts(a) -> tuple[int, int, int, int]:
    instances = sum(len(v.instances) for v in a.variants)
    return len(a.kernels), len(a.variants), instances, len(a.artifacts()) + 1


def _rel(path: str | Path) -> str:
    p = Path(path)
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def _print_op(a) -> None:
    k, v, i, n = _counts(a)
    t = a.timings
    print(f"{a.op}: {k} kernel{'s' * (k != 1)}, {v} variant{'s' * (v != 1)}, {i} instances "
          f"x {len(a.targets)} target{'s' * (len(a.targets) != 1)} ({', '.join(a.targets)}), {n} artifacts "
          f"in {_fmt_s(t.total_s)} (export {_fmt_s(t.export_s)}, backend {_fmt_s(t.backend_s)})")
    width = max((len(x.kernel) for x in a.variants), default=0)
    name_w = max((len(x.name) for x in a.variants), default=0)
    for var in a.variants:
        dtypes = ",".join(inst.dtype for inst in var.instances)
        print(f"  {var.kernel:<{width}}  {var.name or '(no constants)':<{name_w}}  {dtypes:<24} "
              f"{'; '.join(var.sources)}")
    for note in a.notes:
        print(f"  note: {note}")
    if a.capture is not None:
        c = a.capture
        print(f"  launch capture ({c.mode}): {c.calls} calls, {c.launches} launches in {_fmt_s(c.seconds)}")
        for s in c.sources:
            print(f"  ran: {_rel(s)}")
        own = [x for x in c.configurations if x.source != "guess"]
        if own:
            print(f"  configurations from the op's own code: {len(own)} "
                  f"({', '.join(sorted({x.dtype for x in own}))}); tolerances: "
                  + (", ".join(f"{d} {a.tolerance_sources.get(d, '?')}" for d in a.tolerances) or "none"))
        for e in c.errors[:3]:
            print(f"  capture: {e}")
    for u in a.unresolved:
        print(f"  NOT ANALYSED: {u.message}")
    if a.reference is not None:
        from tileport.cli._triton import print_reference

        print_reference(a.reference)
    print(f"wrote {_rel(Path(a.out_dir) / 'analysis.json')}")


def run(args: argparse.Namespace) -> int:
    from tileport.service import analyze_examples, check_targets, find_examples

    config = config_from(args)
    if args.op is None and args.targets and args.targets[-1].endswith(".py"):
        args.op = args.targets.pop()  # `--target sm_90 op.py`: nargs="+" swallowed the op
    targets = check_targets(args.targets) if args.targets else list(config.targets)
    if args.jobs is not None and args.jobs < 1:
        raise UserError("--jobs must be at least 1")
    python = args.python or config.analysis.python
    if python is not None and not (Path(python).is_file() or shutil.which(python)):
        raise UserError(f"--python {python}: no such interpreter; pass the path of a python with torch and cuda-tile "
                        "(tileport doctor shows the one in use)")
    common = dict(targets=targets, config=config, run_tileiras=not args.no_cubin, workers=args.jobs, python=python,
                  tests=args.tests, discover_tests=False if args.no_discover_tests else None)
    if args.op is None and args.tests:
        raise UserError("--tests needs an OP: tileport analyze OP.py --tests tests/test_op.py")
    if args.op is None and (args.triton or args.reference_timings):
        raise UserError("--triton and --reference-timings need an OP: tileport analyze OP.py --triton TRITON_OP.py")
    if args.op is not None and Path(args.op).is_dir():
        return _library(args, config, common)
    if args.json or args.parallel:
        raise UserError("--json and --parallel go with a library's directory: tileport analyze DIR --json")
    if args.op is not None:
        from tileport.cli._triton import analyze_triton_cli, is_triton_op

        started = utcnow()
        if args.triton and not is_triton_op(args.op):  # bad input refused before any work
            service.check_triton_op(args.triton)
        if args.reference_timings and not is_triton_op(args.op):
            service.read_bench(args.reference_timings)
        if (t := analyze_triton_cli(args, config, python, started)) is not None:
            return t
        # Bad input raises before anything is written, the store included: nothing half-written.
        bench = service.read_bench(args.reference_timings) if args.reference_timings else None
        a = service.analyze(config, args.op, out_dir=args.out, kernel=args.kernel, triton=args.triton, bench=bench,
                            started_at=started, **{k: v for k, v in common.items() if k != "config"})
        _print_op(a)
        return 0
    if args.kernel:
        raise UserError("--kernel needs an OP: tileport analyze OP.py --kernel NAME")

    paths = find_examples()
    out_root = Path(args.out) if args.out else Path("out")
    print(f"tileport analyze: {len(paths)} ops from {_rel(paths[0].parent)}/ -> {_rel(out_root)}/ "
          f"(targets {', '.join(targets)}; bytecode {config.toolchain.bytecode_version})")
    name_w = max(len(p.stem) for p in paths)
    print(f"  {'op':<{name_w}}  kernels  variants  instances  artifacts     time   export  backend")
    tty = sys.stderr.isatty()

    def progress(path: Path) -> None:
        if tty:
            print(f"  {path.stem} ...", end="\r", file=sys.stderr, flush=True)

    def done(o) -> None:
        if tty:
            print(" " * (name_w + 8), end="\r", file=sys.stderr, flush=True)
        if o.analysis is not None:
            service.record_analysis(config, o.path, None, o.analysis)
            k, v, i, n = _counts(o.analysis)
            t = o.analysis.timings
            print(f"  {o.path.stem:<{name_w}}  {k:>7}  {v:>8}  {i:>9}  {n:>9}  {_fmt_s(t.total_s):>7}  "
                  f"{_fmt_s(t.export_s):>7}  {_fmt_s(t.backend_s):>7}", flush=True)
        else:
            print(f"  {o.path.stem:<{name_w}}  FAILED: {o.error}", flush=True)

    outcomes = []
    for path in paths:
        progress(path)
        outcomes += analyze_examples([path], out_root=out_root, on_done=done, **common)
    ok = [o for o in outcomes if o.analysis is not None]
    artifacts = sum(_counts(o.analysis)[3] for o in ok)
    total = sum(o.seconds for o in outcomes)
    print(f"{len(ok)} of {len(outcomes)} ops analysed, {artifacts} artifacts in {_fmt_s(total)}; "
          f"results in {_rel(out_root)}/<op>/analysis.json")
    if len(ok) != len(outcomes):
        raise UserError(f"{len(outcomes) - len(ok)} of {len(outcomes)} ops failed (see FAILED above)")
    return 0


def _library(args: argparse.Namespace, config, common: dict) -> int:
    """`tileport analyze DIR`: every op file of the library, its summary table (or --json)."""
    import os
    import time

    from tileport import service
    from tileport.cli._library import print_rows

    if args.kernel or args.triton or args.reference_timings:
        raise UserError("--kernel, --triton and --reference-timings name one op; with a directory every op is analysed")
    lib = service.find_library(args.op)
    parallel = args.parallel or max(1, min(2, os.cpu_count() or 1))
    out_root = Path(args.out) if args.out else Path("out") / Path(args.op).resolve().name
    if not args.json:
        print(f"tileport analyze: {len(lib.ops)} op files in {_rel(lib.root)} ({len(lib.kernel_only)} kernel-only, "
              f"analysed through the tests that launch them; {len(lib.skipped)} wrappers/helpers reached through "
              f"those tests) -> {_rel(out_root)}/, {parallel} at a time", flush=True)
    t0 = time.perf_counter()
    kw = {k: v for k, v in common.items() if k != "config"}
    results = service.analyze_library(config, lib, out_root=out_root, parallel=parallel, **kw)
    rows = service.library_rows(config, lib, results)
    print_rows(rows, lib.root, time.perf_counter() - t0, parallel, as_json=args.json)
    return 0 if all(r["analysed"] == "yes" for r in rows) else 1
