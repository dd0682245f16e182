"""`tileport merge ID [--into BRANCH] [--rebase] [--check] [--json]`: merge a conversion whose gates all passed on
its exact HEAD and whose HEAD is approved. A refusal is one line naming every gate or approval missing or stale,
exit 1, the target untouched. `--rebase` moves the branch onto the target's tip (the gates must then re-run)."""

from __future__ import annotations

import argparse
import json
import sys

from tileport.cli._common import config_and_store, int_in
from tileport.service import check_merge, merge, rebase


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("merge", help="merge an approved conversion whose gates passed on its HEAD",
                       description="Merge the conversion branch into its base branch (or --into) if every required "
                                   "gate passed on its exact HEAD and that HEAD is approved; else say why, exit 1.")
    p.add_argument("id", type=int_in(1, (1 << 63) - 1), help="conversion id (`tileport status` lists them)")
    p.add_argument("--into", metavar="BRANCH", help="target branch (default: the branch the conversion started from)")
    p.add_argument("--rebase", action="store_true", help="rebase the branch onto the target's tip instead "
                                                          "(the gates must then re-run)")
    p.add_argument("--check", action="store_true", help="only say whether the merge would go through")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with config_and_store(args) as (config, store):
        if args.rebase:
            outcome = rebase(store, config, args.id, args.into)
        elif args.check:
            outcome = check_merge(store, config, args.id, args.into)
        else:
            outcome = merge(store, config, args.id, args.into)
        if args.json:
            print(json.dumps(outcome.model_dump(mode="json"), indent=2))
        elif outcome.refusals:
            hint = f"; next: {outcome.hint}" if outcome.hint else ""
            print(f"tileport: merge #{args.id} refused: {'; '.join(outcome.refusals)}{hint}", file=sys.stderr)
        elif outcome.merged:
            gm = f", geomean {outcome.geomean:.4f}" if outcome.geomean is not None else ""
            verdicts = " ".join(f"{gr.name}:{gr.verdict or '-'}" for gr in outcome.gates)
            print(f"merged #{args.id} ({outcome.head[:10]}) into {outcome.target} as {outcome.merge_commit[:10]}: "
                  f"{verdicts}{gm}")
        elif args.check:
            print(f"#{args.id} ({outcome.head[:10]}) can merge into {outcome.target}")
        else:
            print(outcome.hint)
        if args.rebase:
            return 1 if outcome.refusals else 0
        return 0 if (outcome.merged or (args.check and not outcome.refusals)) else 1
