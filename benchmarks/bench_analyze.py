"""Benchmark `tileport analyze` on the example corpus.

For each example, the wall time to analyse all its variants for two targets *excluding* tileiras
(static inspection, the child process that imports the module and exports every instance for
both targets, tileirdisasm, hashing, analysis.json), measured two ways:

* cold: a fresh child process, as `tileport analyze OP.py` runs one op (it pays cuda-tile's
  import, about a second of CPU);
* warm: the child is forked from the warm export server, as `tileport analyze` (the whole
  corpus) and `analyze_examples` run.

Then tileiras alone on the same bytecode, one module at a time, so its figure is the backend's
own time per module. Target: under 2 s per example excluding tileiras.

    .venv/bin/python benchmarks/bench_analyze.py [--repeat 3] [--targets sm_90 sm_100] [op ...]

With `--corpus DIR [--python PY] [--parallel N]` it instead analyses every cuTile op file under DIR (as
`tileport analyze DIR` finds them: modules defining @ct.kernel; tests, wrappers and helpers are not ops) once,
unmodified, N at a time, in interpreter PY, and prints per op whether it was analysed whole (every kernel it
launches), the kernels analysed / missing, the static-path time and the launch-capture time, how many configurations
came from the op's own tests / `__main__` / scripts and whether tolerances did, then the totals with the slowest op
and the wall time; `--tests PATH` gives a source to every op and `--no-discover` turns off finding its tests:

    .venv/bin/python benchmarks/bench_analyze.py --corpus tests/data/heldout_ops --python ~/.cache/tileport/torch-venv/bin/python
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from tileport.analysis import analyze_op, find_examples
from tileport.analysis.backend import BackendJob, run_backend
from tileport.analysis.loader import shared_warm_child
from tileport.analysis.pipeline import toolchain_for
from tileport.config import Config

TARGET_S = 2.0


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _median_run(path: Path, out_base: Path, repeat: int, warm: bool, **kwargs):
    """(wall, cpu, analysis, out) of the median-wall run. CPU: this process, its children (the cold
    child, tileirdisasm) and, when warm, the forked child the server reports."""
    runs = []
    for i in range(repeat):
        out = out_base.with_name(f"{out_base.name}-{i}")
        c0, t0 = _cpu(), time.perf_counter()
        a = analyze_op(path, out_dir=out, run_tileiras=False, warm=warm, **kwargs)
        wall = time.perf_counter() - t0
        cpu = _cpu() - c0 + (a.timings.child_cpu_s if warm else 0.0)
        runs.append((wall, cpu, a, out))
    runs.sort(key=lambda r: r[0])
    return runs[len(runs) // 2]


def corpus_ops(root: Path) -> list[Path]:
    """The cuTile op files of a library, as `tileport analyze DIR` finds them (modules defining @ct.kernel; tests,
    wrappers and helpers are not ops)."""
    from tileport.analysis.library import find_library

    return [f.path for f in find_library(root).ops if f.kind == "cutile"]


def run_corpus(root: Path, python: str | None, targets: list[str], tests: list[str] | None = None,
               discover: bool = True, parallel: int = 1) -> int:
    from tileport.analysis.library import Library, analyze_library, find_library

    lib = find_library(root)
    lib = Library(root=lib.root, ops=[f for f in lib.ops if f.kind == "cutile"], skipped=lib.skipped)
    config = Config()
    print(f"tileport analyze on {len(lib.ops)} op files under {root} (unmodified), python {python or sys.executable}, "
          f"targets {', '.join(targets)}, no tileiras; {parallel} at a time on {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}")
    print(f"tests: {', '.join(tests or []) or 'none given'}; discovery of the op's tests {'on' if discover else 'off'}")
    print(f"{'op':<32} {'result':<8} {'kernels':>7} {'missing':>7} {'other':>7} {'capture':>8} {'total':>7} "
          f"{'own cfgs':>8} {'tol':>4}  note")
    print("  (own cfgs: distinct launches from the op's own tests / __main__ / scripts; tol: dtypes whose tolerance "
          "came from its tests)")
    print("  (other: wall time outside capture: static inspection, the child's imports (torch included), exports, "
          "tileirdisasm)")
    t_all = time.perf_counter()
    stats = {"whole": 0, "kernels": 0, "missing": 0, "captured": 0, "own": 0, "tracebacks": 0}
    others: list[float] = []
    cap_times: list[float] = []
    totals: list[tuple[float, str]] = []

    def done(r) -> None:
        name = str(r.path.relative_to(root))
        totals.append((r.seconds, name))
        if r.analysis is None:
            stats["tracebacks"] += "Traceback" in (r.error or "")
            print(f"{name:<32} {'FAILED':<8} {0:>7} {'?':>7} {'':>7} {'':>8} {r.seconds:>6.2f}s "
                  f"{'':>8} {'':>4}  {(r.error or '')[:220]}", flush=True)
            return
        a = r.analysis
        got = len({v.kernel for v in a.variants})
        miss = len(getattr(a, "unresolved", []) or [])
        stats["kernels"] += got
        stats["missing"] += miss
        stats["whole"] += miss == 0
        t = a.timings
        cap = getattr(t, "capture_s", 0.0) or 0.0
        others.append(t.total_s - cap)
        stats["captured"] += a.capture is not None
        own = [c for c in a.configurations() if c.source != "guess"]
        stats["own"] += len(own)
        if a.capture is not None:
            cap_times.append(cap)
        tol = sum(1 for s in a.tolerance_sources.values() if s.startswith("tests:"))
        print(f"{name:<32} {'ok' if miss == 0 else 'partial':<8} {got:>7} {miss:>7} {t.total_s - cap:>6.2f}s "
              f"{cap:>7.2f}s {t.total_s:>6.2f}s {len(own):>8} {tol:>4}  "
              f"{'; '.join(u.kernel for u in getattr(a, 'unresolved', []) or [])}", flush=True)

    with tempfile.TemporaryDirectory(prefix="tileport-bench-") as tmp:
        analyze_library(lib, out_root=Path(tmp), jobs=parallel, on_done=done, targets=targets, config=config,
                        run_tileiras=False, python=python, tests=tests, discover_tests=discover)
    slowest = max(totals, default=(0.0, "-"))
    print(f"{stats['whole']} of {len(lib.ops)} op files analysed whole, {stats['kernels']} kernels analysed, "
          f"{stats['missing']} reported missing, {stats['tracebacks']} tracebacks; {stats['captured']} ran launch "
          f"capture ({stats['own']} configurations from the ops' own code); capture time per op max "
          f"{max(cap_times, default=0):.2f} s, mean {sum(cap_times) / max(1, len(cap_times)):.2f} s; time outside "
          f"capture max {max(others, default=0):.2f} s per op; slowest op {slowest[1]} {slowest[0]:.1f} s; corpus "
          f"total {time.perf_counter() - t_all:.1f} s wall, {parallel} at a time on {os.cpu_count()} CPUs")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", metavar="DIR", help="analyse every op file under DIR once (see above)")
    ap.add_argument("--python", metavar="PY", help="interpreter for the child (with torch) in --corpus mode")
    ap.add_argument("--tests", action="append", metavar="PATH",
                    help="in --corpus mode: a pytest file/dir or script given to every op (repeatable)")
    ap.add_argument("--no-discover", action="store_true", help="in --corpus mode: no discovery of the op's tests")
    ap.add_argument("--parallel", type=int, default=1, metavar="N",
                    help="in --corpus mode: ops analysed at once (tileport analyze DIR uses 2)")
    ap.add_argument("ops", nargs="*", help="op names or paths (default: every example)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per example and mode; the median is reported")
    ap.add_argument("--targets", nargs="+", default=["sm_90", "sm_100"])
    args = ap.parse_args(argv)
    if args.corpus:
        return run_corpus(Path(args.corpus), args.python, args.targets, args.tests, not args.no_discover,
                          args.parallel)

    examples = find_examples()
    by_name = {p.stem: p for p in examples}
    paths = [by_name.get(o) or Path(o) for o in args.ops] if args.ops else examples
    config = Config()
    toolchain = toolchain_for(config)
    common = dict(targets=args.targets, config=config, toolchain=toolchain)
    t_server = time.perf_counter()
    shared_warm_child()
    t_server = time.perf_counter() - t_server
    print(f"tileport analyze benchmark: {len(paths)} ops, targets {', '.join(args.targets)}, median of "
          f"{args.repeat}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
          f"warm server started in {t_server:.2f} s")
    header = (f"{'op':<18} {'modules':>7} {'cold wall':>9} {'cpu':>6} {'warm wall':>9} {'cpu':>6} "
              f"{'export':>7} {'tileiras':>9} {'per mod':>8}  under {TARGET_S:.0f} s")
    print(header)
    print("-" * len(header))
    rows = []
    failures = 0
    with tempfile.TemporaryDirectory(prefix="tileport-bench-") as tmp:
        for path in paths:
            cold, cold_cpu, _, _ = _median_run(path, Path(tmp) / f"{path.stem}-cold", args.repeat, False, **common)
            warm, warm_cpu, a, out = _median_run(path, Path(tmp) / f"{path.stem}-warm", args.repeat, True, **common)
            jobs = [BackendJob(bytecode=out / b.bytecode.path, target=b.target,
                               text_out=Path(tmp) / "scratch.tileir", cubin_out=Path(tmp) / "scratch.cubin")
                    for _, inst in a.instances() for b in inst.builds]
            results = run_backend(jobs, tileirdisasm=toolchain.tileirdisasm, tileiras=toolchain.tileiras,
                                  env=toolchain.cargo_env(), workers=1)
            tileiras_s = sum(r.tileiras.seconds for r in results)
            rejected = sum(1 for r in results if not r.tileiras.ok)
            verdict = ", ".join(f"{name} {'ok' if v < TARGET_S else 'OVER'}"
                                for name, v in (("warm", warm), ("cold", cold)))
            failures += (warm >= TARGET_S) + rejected
            rows.append((cold, cold_cpu, warm, warm_cpu, tileiras_s, len(jobs)))
            print(f"{path.stem:<18} {len(jobs):>7} {cold:>8.2f}s {cold_cpu:>5.2f}s {warm:>8.2f}s {warm_cpu:>5.2f}s "
                  f"{a.timings.export_s:>6.2f}s {tileiras_s:>8.2f}s {tileiras_s / max(1, len(jobs)):>7.2f}s  "
                  f"{verdict}{f'; tileiras rejected {rejected}' if rejected else ''}", flush=True)
    print("-" * len(header))
    n = len(rows)
    m = [sum(r[i] for r in rows) / n for i in range(6)]
    print(f"{'mean':<18} {m[5]:>7.1f} {m[0]:>8.2f}s {m[1]:>5.2f}s {m[2]:>8.2f}s {m[3]:>5.2f}s {'':>7} {m[4]:>8.2f}s")
    print(f"excluding tileiras, max per example: warm {max(r[2] for r in rows):.2f} s wall / "
          f"{max(r[3] for r in rows):.2f} s CPU, cold {max(r[0] for r in rows):.2f} s wall / "
          f"{max(r[1] for r in rows):.2f} s CPU (target < {TARGET_S:.0f} s); tileiras {sum(r[4] for r in rows):.1f} s "
          f"for {sum(r[5] for r in rows)} modules, one at a time; load average now {os.getloadavg()[0]:.1f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
