"""`tileport ir-diff REF GEN [--json] [--side-by-side]`: structural Tile IR diff of a port against its reference.

Exit status: 0 PASS / PASS_WITH_NOTES, 1 FAIL_FIXABLE, 2 bad input (one line on stderr).
REF and GEN are tileirdisasm text files, or `.tileirbc` bytecode (disassembled first).
"""

from __future__ import annotations

import argparse
import re
import sys

from tileport.cli._common import config_from, int_in


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ir-diff", help="structurally compare a port's Tile IR with the reference's",
        description="Compare two Tile IR modules (tileirdisasm text or .tileirbc) structurally: insensitive to "
                    "value names, independent-op order, duplicated constants and debug info. Exit 0 for PASS / "
                    "PASS_WITH_NOTES, 1 for FAIL_FIXABLE, 2 for bad input.")
    p.add_argument("ref", metavar="REF", help="reference Tile IR (text or .tileirbc)")
    p.add_argument("gen", metavar="GEN", help="generated (port) Tile IR (text or .tileirbc)")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")
    p.add_argument("--side-by-side", action="store_true", help="also print the aligned reference/port view")
    p.add_argument("--target", metavar="SM",
                   help="GPU target the modules were compiled for (judges hints by the values that apply there); "
                        "default: the sm_NN named in REF's path, else every target either side names")
    p.add_argument("--width", type=int_in(40, 10000), default=160, help="line width of the side-by-side view (default 160)")
    p.set_defaults(func=run)


_TARGET_RE = re.compile(r"(?:^|[/_.])(sm_[0-9]+[a-z]?)(?=$|[/_.])")


def target_in_path(path: str) -> str | None:
    """`out/softmax/sm_90/softmax__TILE-1024__float16.tileir` -> "sm_90" (analyze's and build-rust's layouts)."""
    found = _TARGET_RE.findall(path)
    return found[-1] if found else None


def run(args: argparse.Namespace) -> int:
    from tileport import service
    from tileport.validators.tileir.report import format_report

    report = service.ir_diff(args.ref, args.gen, config=config_from(args),
                             target=args.target or target_in_path(args.ref))
    if args.json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        print(format_report(report, side_by_side=args.side_by_side, width=args.width))
    return report.exit_code
