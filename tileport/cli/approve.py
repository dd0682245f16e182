"""`tileport approve ID [--comment TEXT] [--override GATE ... --reason TEXT] [--json]`: approve the branch HEAD.

The approval is bound to the commit it names and records the gate results the approver saw; any later commit makes
it stale. An override (only with `[approval] allow_override = true`) lets named unsatisfied gates through, with a
reason, and is recorded as an override, never as a pass.
"""

from __future__ import annotations

import argparse
import json

from tileport.cli._common import config_from, int_in, open_store
from tileport.records import ApprovalRecord, GateStatus
from tileport.worktrees.approval import PAST, approve, override


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("approve", help="approve a conversion's branch HEAD (bound to that commit)",
                       description="Approve the conversion branch's current HEAD, recording the gate results seen.")
    p.add_argument("id", type=int_in(1, (1 << 63) - 1), help="conversion id (`tileport status` lists them)")
    p.add_argument("--comment", help="a note for the record")
    p.add_argument("--override", nargs="+", metavar="GATE",
                   help="let these unsatisfied gates through (needs [approval] allow_override and --reason)")
    p.add_argument("--reason", help="why the override is justified")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def describe(rec: ApprovalRecord) -> str:
    gates = ", ".join(f"{gr.name} {gr.status.value}" for gr in rec.gates)
    return f"#{rec.conversion_id} {PAST[rec.decision]} at {rec.commit[:10]} by {rec.approver} ({rec.ts}); gates: {gates}"


def run(args: argparse.Namespace) -> int:
    config = config_from(args)
    store = open_store(config)
    try:
        if args.override:
            rec = override(store, config, args.id, args.override, args.reason, args.comment)
        else:
            if args.reason:
                print("tileport: note: --reason is for overrides and rejections; kept as the comment")
            rec = approve(store, config, args.id, args.comment or args.reason)
        if args.json:
            print(json.dumps(rec.model_dump(mode="json"), indent=2))
            return 0
        print(describe(rec))
        pending = [gr for gr in rec.gates if gr.status is not GateStatus.SATISFIED
                   and gr.name not in rec.overrides]
        if pending:
            print("a merge still needs: " + "; ".join(f"gate {gr.name} {gr.status.value} ({gr.reason})"
                                                      for gr in pending))
        return 0
    finally:
        store.close()
