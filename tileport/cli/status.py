"""`tileport status [--json] [ID]`: what the store knows — conversions, their stage verdicts, attempts against
caps, branch and worktree. Reads only the store, exactly what the dashboard reads."""

from __future__ import annotations

import argparse
import json

from tileport.validators.analysis.triton.record import reference_summary
from tileport.cli._common import config_from, int_in, open_store
from tileport.records import Stage
from tileport.store import json_column

STAGE_ORDER = [s.value for s in Stage]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="conversions, stage verdicts, attempts against caps, branches",
                       description="List conversions with the newest verdict per stage and attempts against caps; "
                                   "with ID, every stage run with its route, commit, commands and artifacts.")
    p.add_argument("id", nargs="?", type=int_in(1, (1 << 63) - 1), help="one conversion's full record")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def _attempts(runs: list[dict], caps: dict[str, int]) -> dict[str, str]:
    used: dict[str, int] = {}
    for r in runs:
        used[r["stage"]] = used.get(r["stage"], 0) + 1
    return {s: f"{used[s]}/{caps[s]}" for s in STAGE_ORDER if s in used}


def _summary(store, c: dict, caps: dict[str, int]) -> dict:
    runs = store.stage_runs(c["id"])
    latest = store.latest_verdicts(c["id"])
    last = runs[-1] if runs else None
    return {"id": c["id"], "op_path": c["op_path"], "kernel": c["kernel"], "status": c["status"],
            "stage": last["stage"] if last else None, "verdict": last["verdict"] if last else None,
            "next": last["routed_to"] if last else None,
            "stages": {s: latest[s]["verdict"] for s in STAGE_ORDER if s in latest},
            "attempts": _attempts(runs, caps), "branch": c["branch"], "worktree": c["worktree"],
            "base": f"{c.get('base_branch')}@{(c.get('base_commit') or '')[:10]}" if c.get("base_commit") else None,
            "head_commit": c["head_commit"], "model": c.get("model"), "error": c.get("error"),
            "reference": reference_summary(runs)}


def _detail(store, cid: int, caps: dict[str, int]) -> dict:
    runs = []
    for r in store.stage_runs(cid):
        details = json_column(r.get("details"), store.path, "stage_runs.details") or {}
        runs.append({**r, "details": details, "commands": store.stage_commands(r["id"]),
                     "artifacts": store.stage_artifacts(r["id"])})
    conv = store.conversion(cid)
    return {"conversion": conv, "summary": _summary(store, conv, caps), "stage_runs": runs,
            "approvals": store.approvals(cid)}


def run(args: argparse.Namespace) -> int:
    config = config_from(args)
    caps = config.caps.model_dump()
    store = open_store(config)
    try:
        if args.id is not None:
            detail = _detail(store, args.id, caps)
            if args.json:
                print(json.dumps(detail, indent=2, default=str))
                return 0
            c, s = detail["conversion"], detail["summary"]
            print(f"#{c['id']} {c['op_path']} kernel={c['kernel'] or '*'} status={c['status']}")
            if c["branch"]:
                print(f"  branch {c['branch']} (base {s['base']}), worktree {c['worktree']}")
                print(f"  attempts {'  '.join(f'{k}:{v}' for k, v in s['attempts'].items())}"
                      + (f"  next {s['next']}" if s["next"] else ""))
            if s.get("reference"):
                print(f"  {s['reference']}")
            if c.get("error"):
                print(f"  error: {c['error']}")
            for r in detail["stage_runs"]:
                secs = r["seconds"] if isinstance(r["seconds"], (int, float)) else float("nan")
                cap = f"/{r['cap']}" if r.get("cap") else ""
                route = f" -> {r['routed_to']}" if r.get("routed_to") else ""
                commit = f" @{r['commit'][:10]}" if r.get("commit") else ""
                print(f"  {r['stage']} attempt {r['attempt']}{cap}: {r['verdict']}"
                      f"{' (' + str(r['fail_class']) + ')' if r['fail_class'] else ''}{route}  {secs:.1f} s"
                      f"{commit}  {len(r['commands'])} commands, {len(r['artifacts'])} artifacts  {r['summary']}")
                for cmd in r["commands"]:
                    if cmd["exit_code"] != 0:
                        print(f"    exit {cmd['exit_code']}: {' '.join(cmd['argv'])[:160]}")
            return 0
        rows = [_summary(store, c, caps) for c in store.conversions()]
        if args.json:
            print(json.dumps(rows, indent=2))
        elif not rows:
            print(f"no conversions in {config.store} yet; run `tileport run OP.py` or `tileport analyze` first")
        else:
            for r in rows:
                stages = "  ".join(f"{s}:{v}" for s, v in r["stages"].items())
                att = " ".join(f"{k}{v}" for k, v in r["attempts"].items())
                where = f"  {r['branch']}" if r["branch"] else ""
                print(f"#{r['id']:<3} {r['status']:<8} {r['op_path']}  {r['kernel'] or ''}  {stages}  [{att}]{where}")
                if r.get("reference"):
                    print(f"     {r['reference']}")
        return 0
    finally:
        store.close()
