"""`tileport worktrees [list|prune|recover] [--json]`: conversion worktrees after the pipeline.

list: branch, worktree and store state per conversion, with every problem found. prune: remove the worktrees of
merged and rejected conversions (uncommitted work saved on a rescue branch first). recover: after a crash, bring
branches, worktrees and the store back into agreement (dangling or orphan worktrees, missing branches, half-written
commits, stale lock files) without losing work.
"""

from __future__ import annotations

import argparse
import json

from tileport.cli._common import config_and_store, int_in, seconds
from tileport.service import list_worktrees, prune, recover


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("worktrees", help="list, prune or recover conversion worktrees",
                       description="List conversion worktrees; prune those of merged or rejected conversions; "
                                   "recover after a crash without losing work.")
    p.add_argument("action", nargs="?", choices=("list", "prune", "recover"), default="list")
    p.add_argument("ids", nargs="*", type=int_in(1, (1 << 63) - 1), help="prune only these conversions")
    p.add_argument("--lock-age", type=seconds(0, 366 * 86400), default=60.0, metavar="SECONDS",
                   help="recover: a lock file older than this is stale (default 60)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with config_and_store(args) as (config, store):
        for cid in args.ids:
            store.conversion(cid)  # an id that names no conversion is a typo: say so, do not prune nothing quietly
        if args.action == "prune":
            states = prune(store, config, args.ids or None)
        elif args.action == "recover":
            states = recover(store, config, lock_age_s=args.lock_age)
        else:
            states = list_worktrees(store)
        if args.json:
            print(json.dumps([s.model_dump(mode="json") for s in states], indent=2))
            return 1 if args.action == "recover" and any(s.problems for s in states) else 0
        if not states:
            print(f"no conversion worktrees {'to ' + args.action if args.action != 'list' else 'in ' + config.store}")
        for s in states:
            head = (s.branch_head or "-")[:10]
            where = s.worktree if s.worktree_exists else f"{s.worktree or '-'} (absent)"
            print(f"#{s.conversion_id:<3} {s.status:<9} {s.branch or '-'} @ {head}  {where}"
                  f"{'  dirty' if s.dirty else ''}")
            for a in s.actions:
                print(f"     did: {a}")
            for p in s.problems:
                print(f"     problem: {p}")
        if args.action == "list" and any(s.problems for s in states):
            print("run `tileport worktrees recover` to repair these without losing work")
        return 1 if args.action == "recover" and any(s.problems for s in states) else 0
