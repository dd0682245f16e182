"""`tileport build-rust DIR`: build a conversion crate, dump its Tile IR, disassemble it and assemble sm_XX cubins.

DIR is a crate tileport generated (it has tileport-spec.json), or a directory with kernel.rs + spec.json
(a crate is generated under ~/.cache/tileport/crates unless --out is given). Exit status: 0 when every job
produced bytecode, text and cubin; 1 when there are diagnostics (rustc, cutile JIT, tileiras, policy);
2 for bad input or a missing toolchain part.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tileport.cli._common import config_from
from tileport.validators.rust import diagnostics as dg
from tileport.validators.rust.build import BuildOptions, RustBuildResult, build_crate, prepare_crate, shared_target_dir
from tileport.toolchain import resolve


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build-rust", help="build a cutile-rs port, dump Tile IR, disassemble, assemble cubins",
        description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("dir", metavar="DIR", help="conversion crate, or a directory with kernel.rs + spec.json")
    p.add_argument("--spec", metavar="FILE", help="spec (JSON or TOML) when DIR is a kernel.rs or has no spec.json")
    p.add_argument("--out", metavar="DIR", help="where to generate the crate (default ~/.cache/tileport/crates/...)")
    p.add_argument("--artifacts", metavar="DIR", help="where .tileirbc/.mlir/.cubin go (default <crate>/artifacts)")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON (diagnostics included)")
    p.add_argument("--no-cubin", action="store_true", help="skip tileiras")
    p.add_argument("--no-disasm", action="store_true", help="skip tileirdisasm")
    p.add_argument("--fetch", action="store_true", help="allow cargo to use the network (first build only)")
    p.add_argument("--deny-unsafe", action="store_true", help="refuse `unsafe` in kernel.rs")
    p.add_argument("--timeout", type=float, default=1200.0, metavar="S", help="cargo build time limit (s)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = config_from(args)
    paths = config.toolchain.model_dump()
    bytecode_version = paths.pop("bytecode_version", None)
    opts = BuildOptions(
        target_dir=shared_target_dir(),
        offline=False if args.fetch else None,
        cargo_timeout=args.timeout,
        disasm=not args.no_disasm,
        cubins=not args.no_cubin,
        deny_unsafe=args.deny_unsafe,
        artifacts_dir=Path(args.artifacts) if args.artifacts else None,
        bytecode_version=bytecode_version,
        toolchain=resolve(**paths),
    )
    layout = prepare_crate(args.dir, spec_path=args.spec, out=args.out)
    result = build_crate(layout, opts)
    if args.json:
        json.dump(result.model_dump(mode="json"), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_human(result)
    return 0 if result.ok else 1


def print_human(result: RustBuildResult) -> None:
    out = sys.stdout
    if result.diagnostics:
        print(dg.render_text(result.diagnostics), file=out)
        print(file=out)
    for job in result.jobs:
        mark = "ok  " if job.ok else "FAIL"
        print(f"{mark} {job.entry}/{job.variant}/{job.target}", file=out)
        for label, path in (("bytecode", job.bytecode), ("tile ir", job.tileir_text), ("cubin", job.cubin)):
            if path:
                print(f"       {label:<9} {path}", file=out)
    errors = len(result.errors)
    warnings = sum(1 for d in result.diagnostics if d.level == "warning")
    t = result.timings
    times = ", ".join(f"{k} {v:.1f}s" for k, v in t.items() if k in ("cargo_build", "ir_dump", "total"))
    status = "OK" if result.ok else f"FAILED at {result.stage}"
    print(f"{status}: {result.crate} ({errors} error(s), {warnings} warning(s); {times})", file=out)
