"""`tileport build-rust DIR`: build a conversion crate, dump its Tile IR, disassemble it and assemble sm_XX cubins.

DIR is a crate tileport generated (it has tileport-spec.json), or a directory with kernel.rs + spec.json
(a crate is generated under ~/.cache/tileport/crates unless --out is given). Exit status: 0 when every job
produced bytecode, text and cubin; 1 when there are diagnostics (rustc, cutile JIT, tileiras, policy);
2 for bad input or a missing toolchain part.

With --reference out/<op> (or its analysis.json) the build is followed by the stage-B IR self-check: each
variant x target is paired with the reference instance its spec names (`reference` key) and the two tileirdisasm
texts are diffed; one verdict line per pair, the findings grouped by category, an overall verdict. Exit 1 when
any pair is FAIL_FIXABLE or unmatched.

--conversion ID runs the same gates on a `tileport run` conversion's committed HEAD (a person's edit of its
kernel.rs) and records them as a stage B run of that conversion on that commit, exactly as the dashboard's `e`
does (--commit first commits the port's uncommitted edit as a human attempt, as `e` does): exit 0 COMPILED (build
and IR self-check passed), 1 a gate failed, 3 BLOCKED (the environment), 2 bad input (no such conversion, an
uncommitted edit without --commit, a stage running).

--init-spec out/<op> derives spec variants from the analysis instead of building: with no spec in DIR it writes
DIR/spec.json (one variant per Constant set x dtype, the reference's array assumptions, the `reference` key);
with a spec it rewrites the array assumptions (tensors, strides) of every variant that names a reference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from typing import TYPE_CHECKING

from tileport import service
from tileport.cli._common import config_from, int_in, seconds
from tileport.errors import UserError
from tileport.validators.rust.diagnostics import render_text
from tileport.validators.rust.selfcheck import format_self_check

if TYPE_CHECKING:
    from tileport.service import RustBuildResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build-rust", help="build a cutile-rs port, dump Tile IR, disassemble, assemble cubins",
        description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("dir", metavar="DIR", nargs="?", help="conversion crate, or a directory with kernel.rs + spec.json")
    p.add_argument("--conversion", metavar="ID", type=int_in(1, (1 << 63) - 1),
                   help="B's gates on conversion ID's committed HEAD, recorded as its stage B run (instead of DIR)")
    p.add_argument("--repo", metavar="DIR", help="with --conversion: the repository whose store to use (default: "
                                                 "the current directory; the store path rule of `run` and `tui`)")
    p.add_argument("--store", metavar="DB", help="with --conversion: the store to use (default: the config's store)")
    p.add_argument("--commit", action="store_true", help="with --conversion: first commit the port's uncommitted edit "
                                                         "as a human attempt (what the dashboard's e does)")
    p.add_argument("--spec", metavar="FILE", help="spec (JSON or TOML) when DIR is a kernel.rs or has no spec.json")
    p.add_argument("--out", metavar="DIR", help="where to generate the crate (default ~/.cache/tileport/crates/...)")
    p.add_argument("--artifacts", metavar="DIR", help="where .tileirbc/.tileir/.cubin go (default <crate>/artifacts)")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON (diagnostics included)")
    p.add_argument("--no-cubin", action="store_true", help="skip tileiras")
    p.add_argument("--no-disasm", action="store_true", help="skip tileirdisasm")
    p.add_argument("--fetch", action="store_true", help="allow cargo to use the network (first build only)")
    p.add_argument("--deny-unsafe", action="store_true", help="refuse `unsafe` in kernel.rs")
    p.add_argument("--timeout", type=seconds(0, 86400), default=1200.0, metavar="S", help="cargo build time limit (s)")
    p.add_argument("--reference", metavar="ANALYSIS",
                   help="after the build, IR self-check every variant against out/<op> (or its analysis.json)")
    p.add_argument("--no-notes", action="store_true", help="self-check: list errors and warnings only")
    p.add_argument("--init-spec", metavar="ANALYSIS",
                   help="write DIR/spec.json from out/<op> (or sync an existing spec's assumptions) and exit")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.conversion is not None:
        if args.dir or args.init_spec:
            raise UserError("build-rust: give DIR or --conversion ID, not both")
        return gate_conversion(args)
    if not args.dir:
        raise UserError("build-rust: give DIR (a port: kernel.rs + spec.json) or --conversion ID")
    if args.init_spec:
        return init_spec(args)
    config = config_from(args)
    opts = service.build_options(
        config,
        offline=False if args.fetch else None,
        cargo_timeout=args.timeout,
        disasm=not args.no_disasm,
        cubins=not args.no_cubin,
        deny_unsafe=args.deny_unsafe,
        artifacts_dir=Path(args.artifacts) if args.artifacts else None,
    )
    # stage B's judge (build, IR self-check), recorded as its verdict: what a conversion's B attempt runs
    done = service.build_rust(config, args.dir, opts, reference=args.reference, spec=args.spec, out=args.out)
    result, report, stage_result = done.build, done.report, done.stage_result
    if args.json:
        payload = result.model_dump(mode="json")
        if report is not None:
            payload["self_check"] = report.model_dump(mode="json", exclude={"build_stage_result"})
            payload["self_check"]["stage_result"] = stage_result.model_dump(mode="json")
        payload["stage_result"] = stage_result.model_dump(mode="json")
        json.dump(payload, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_human(result)
        if report is not None:
            print()
            print(format_self_check(report, notes=not args.no_notes, stage_verdict=stage_result.verdict))
    if not result.ok:
        return 1
    return report.exit_code if report is not None else 0


def gate_conversion(args: argparse.Namespace) -> int:
    """--conversion ID: B's judge of the edit (`service.judge_edit`); the runner prints their progress and verdict line
    as `tileport run` prints a stage's."""
    run = service.runner(config_from(args), repo=args.repo, store=args.store)
    return service.judge_edit(run, args.conversion, commit=args.commit).exit_code


def init_spec(args: argparse.Namespace) -> int:
    """--init-spec: derive spec.json variants from the analysis (no build)."""
    lines, code = service.init_spec(args.dir, args.init_spec, spec=args.spec)
    for line in lines:
        print(line)
    return code


def print_human(result: "RustBuildResult") -> None:
    out = sys.stdout
    if result.diagnostics:
        print(render_text(result.diagnostics), file=out)
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
