"""`tileport reject ID --reason TEXT [--json]`: reject the branch HEAD, with a reason (stored and noted in git)."""

from __future__ import annotations

import argparse
import json

from tileport.cli._common import config_and_store, int_in
from tileport.cli.approve import describe
from tileport.service import reject


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reject", help="reject a conversion's branch HEAD (needs a reason)",
                       description="Reject the conversion branch's current HEAD; a merge of that commit is refused.")
    p.add_argument("id", type=int_in(1, (1 << 63) - 1), help="conversion id (`tileport status` lists them)")
    p.add_argument("--reason", required=True, help="why (required)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with config_and_store(args) as (config, store):
        rec = reject(store, config, args.id, args.reason)
        print(json.dumps(rec.model_dump(mode="json"), indent=2) if args.json else describe(rec) + f": {rec.reason}")
        return 0
