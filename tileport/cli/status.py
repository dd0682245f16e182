"""`tileport status [--json] [ID]`: what the store knows — conversions and their stage verdicts.

Reads only the store, exactly what the dashboard reads.
"""

from __future__ import annotations

import argparse
import json

from tileport.cli._common import config_from, int_in, open_store
from tileport.records import Stage

STAGE_ORDER = [s.value for s in (Stage.ANALYZE, Stage.WRITE_KERNEL, Stage.DIAGNOSE_TRANSLATION,
                                 Stage.HOST_CORRECTNESS, Stage.PERFORMANCE, Stage.DIAGNOSE_PERFORMANCE)]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="conversions and stage verdicts recorded in the store",
                       description="List conversions with the newest verdict per stage; with ID, every stage run "
                                   "with its commands and artifacts.")
    p.add_argument("id", nargs="?", type=int_in(1, (1 << 63) - 1), help="one conversion's full record")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def _detail(store, cid: int) -> dict:
    runs = []
    for r in store.stage_runs(cid):
        runs.append({**r, "commands": store.stage_commands(r["id"]), "artifacts": store.stage_artifacts(r["id"])})
    return {"conversion": store.conversion(cid), "stage_runs": runs, "approvals": store.approvals(cid)}


def run(args: argparse.Namespace) -> int:
    config = config_from(args)
    store = open_store(config)
    try:
        if args.id is not None:
            detail = _detail(store, args.id)
            if args.json:
                print(json.dumps(detail, indent=2))
                return 0
            c = detail["conversion"]
            print(f"#{c['id']} {c['op_path']} kernel={c['kernel'] or '*'} status={c['status']}")
            for r in detail["stage_runs"]:
                secs = r["seconds"] if isinstance(r["seconds"], (int, float)) else float("nan")
                print(f"  {r['stage']} attempt {r['attempt']}: {r['verdict']}"
                      f"{' (' + str(r['fail_class']) + ')' if r['fail_class'] else ''}  {secs:.1f} s  "
                      f"{len(r['commands'])} commands, {len(r['artifacts'])} artifacts  {r['summary']}")
                for cmd in r["commands"]:
                    if cmd["exit_code"] != 0:
                        print(f"    exit {cmd['exit_code']}: {' '.join(cmd['argv'])[:160]}")
            return 0
        rows = []
        for c in store.conversions():
            latest = store.latest_verdicts(c["id"])
            rows.append({"id": c["id"], "op_path": c["op_path"], "kernel": c["kernel"], "status": c["status"],
                         "stages": {s: latest[s]["verdict"] for s in STAGE_ORDER if s in latest}})
        if args.json:
            print(json.dumps(rows, indent=2))
        elif not rows:
            print(f"no conversions in {config.store} yet; run `tileport analyze` first")
        else:
            for r in rows:
                stages = "  ".join(f"{s}:{v}" for s, v in r["stages"].items())
                print(f"#{r['id']:<3} {r['op_path']}  {r['kernel'] or ''}  {stages}")
        return 0
    finally:
        store.close()
