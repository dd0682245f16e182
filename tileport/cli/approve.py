"""`tileport approve ID [--comment TEXT] [--override GATE ... --reason TEXT] [--json]`: approve the branch HEAD.

The approval is bound to the commit it names and records the gate results the approver saw; any later commit makes
it stale. It is refused (one line naming each gate missing, failed or stale on that exact HEAD; exit 1; nothing
recorded) while a required gate is open, as a merge would be. With `[approval] allow_override = true` and a
`--reason`, it is recorded as an override of the open gates (or of those named with `--override`, which must cover
them all), never as a pass.
"""

from __future__ import annotations

import argparse
import json
import sys

from tileport.cli._common import config_and_store, int_in
from tileport.records import ApprovalRecord, Decision
from tileport.service import PAST, ApprovalRefused, approve, override


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("approve", help="approve a conversion's branch HEAD (bound to that commit)",
                       description="Approve the conversion branch's current HEAD, recording the gate results seen. "
                                   "Refused (exit 1, nothing recorded) while a required gate is missing, failed or "
                                   "stale on that HEAD, unless overrides are enabled and --reason is given.")
    p.add_argument("id", type=int_in(1, (1 << 63) - 1), help="conversion id (`tileport status` lists them)")
    p.add_argument("--comment", help="a note for the record")
    p.add_argument("--override", nargs="+", metavar="GATE",
                   help="let these unsatisfied gates through (needs [approval] allow_override and --reason)")
    p.add_argument("--reason", help="why the open gates may be overridden (needs [approval] allow_override)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def describe(rec: ApprovalRecord) -> str:
    gates = ", ".join(f"{gr.name} {'overridden' if gr.name in rec.overrides else gr.status.value}"
                      for gr in rec.gates)
    how = PAST[rec.decision] + (f" of {' '.join(rec.overrides)} ({rec.reason})" if rec.overrides else "")
    return f"#{rec.conversion_id} {how} at {rec.commit[:10]} by {rec.approver} ({rec.ts}); gates: {gates}"


def run(args: argparse.Namespace) -> int:
    with config_and_store(args) as (config, store):
        try:
            if args.override:
                rec = override(store, config, args.id, args.override, args.reason, args.comment)
            else:
                rec = approve(store, config, args.id, args.comment, reason=args.reason)
        except ApprovalRefused as refused:
            if args.json:
                print(json.dumps(refused.as_json(), indent=2))
            else:
                print(f"tileport: {refused}", file=sys.stderr)
            return refused.exit_code
        if args.json:
            print(json.dumps(rec.model_dump(mode="json"), indent=2))
            return 0
        if args.reason and rec.decision is Decision.APPROVE:
            print("tileport: note: --reason is for overrides and rejections; kept as the comment")
        print(describe(rec))
        return 0
