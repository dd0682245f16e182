"""`tileport status [--json] [ID]`: what the store knows — conversions, their stage verdicts, attempts against
caps, branch and worktree. Reads only the store, exactly what the dashboard reads."""

from __future__ import annotations

import argparse
import json

from tileport.cli._common import config_from, int_in
from tileport.store import queries
from tileport.validators.gpu.reports import host_summary
from tileport.analysis.triton.record import reference_summary


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="conversions, stage verdicts, attempts against caps, branches",
                       description="List conversions with the newest verdict per stage and attempts against caps; "
                                   "with ID, every stage run with its route, commit, commands and artifacts.")
    p.add_argument("id", nargs="?", type=int_in(1, (1 << 63) - 1), help="one conversion's full record")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--repo", metavar="DIR", help="the repository whose store to read (default: the current "
                                                 "directory; the store path rule of `run` and `tui`)")
    p.set_defaults(func=run)


def _summary(store, c: queries.ConversionSummary, caps: dict[str, int], config_max: float) -> dict:
    perf = c.perf
    return {"id": c.id, "op_path": c.op_path, "kernel": c.kernel, "status": c.status,
            "stage": c.stage, "verdict": c.verdict, "next": c.next, "stages": dict(c.stages),
            "attempts": c.attempts_text(caps), "branch": c.branch, "worktree": c.worktree,
            "base": f"{c.base_branch}@{(c.base_commit or '')[:10]}" if c.base_commit else None,
            "head_commit": c.head_commit, "model": c.model, "error": c.error,
            "reference": reference_summary(queries.stage_runs(store, c.id, "A")),
            # the newest E run as judged: its geomean, slowest configuration and the bounds recorded with it
            "perf": None if perf is None else {
                "geomean": perf.geomean, "geomean_max": perf.geomean_max, "worst": perf.worst,
                "worst_ratio": perf.worst_ratio, "config_max": perf.config_max, "slow": c.slow(config_max)}}


def _detail(store, cid: int, caps: dict[str, int], config_max: float) -> dict:
    d = queries.conversion_detail(store, cid)
    runs = [{**r.model_dump(exclude={"details", "raw_details"}), "details": r.raw_details,
             "commands": [c.model_dump() for c in cmds], "artifacts": [a.model_dump() for a in arts],
             "cases": [c.model_dump() for c in queries.cases(store, r.id)] if r.stage == "D" else [],
             "perf_rows": [p.model_dump(exclude={"ref_samples", "port_samples", "launch"})
                           for p in queries.perf_rows(store, r.id)] if r.stage == "E" else []}
            for r, cmds, arts in d.runs]
    return {"conversion": d.conversion, "summary": _summary(store, d.summary, caps, config_max), "stage_runs": runs,
            "approvals": d.approvals}


MAX_LINES = 60
OUTPUT_LINES = 8  # a failed test's last printed lines under its status line


def _gate_lines(r: dict) -> list[str]:
    """A D run's tests (id, reference verdict, port verdict, port launches, seconds) and an E run's configurations
    (device ratio, each side's host wall time per call) and what was left out."""
    out: list[str] = []
    tests = [c for c in r.get("cases") or [] if c.get("source") == "tests"]
    for c in tests[:MAX_LINES]:
        secs = f"{c['seconds']:.2f} s" if isinstance(c.get("seconds"), (int, float)) else "-"
        out.append(f"{c['status']:<13} {c['name']}  reference {str(c.get('reference') or '-')[:60]}  port launches "
                   f"{c.get('port_launches') if c.get('port_launches') is not None else '-'}  {secs}"
                   + ("" if c["status"] == "PASS" else f"  {c.get('message', '')[:160]}"))
        if c["status"] == "FAIL" and c.get("output"):  # the test's own diagnostics, as it printed them
            out += ["    | " + ln for ln in c["output"].splitlines()[-OUTPUT_LINES:]]
    if len(tests) > MAX_LINES:
        out.append(f"... {len(tests) - MAX_LINES} more test(s) (tileport status ID --json)")
    rows = r.get("perf_rows") or []
    for p in rows[:MAX_LINES]:
        host = p.get("host_us") or {}
        ratio = f"{p['ratio']:.3f}" if isinstance(p.get("ratio"), (int, float)) else "-"
        out.append(f"config {p['config'][:90]}  port/ref {ratio}  {host_summary(host)}")
    left = (r.get("details") or {}).get("left_out") or [] if r.get("stage") == "E" else []
    if left:
        out.append(f"{len(left)} captured configuration(s) left out: " + "; ".join(
            f"{x.get('config', '')[:60]} ({x.get('why', '')[:60]})" for x in left[:3]))
    return out


def run(args: argparse.Namespace) -> int:
    from tileport import service

    config = config_from(args)
    caps = config.caps.model_dump()
    cmax = config.perf.config_max
    with service.open_store(config, getattr(args, "repo", None)) as store:
        if args.id is not None:
            detail = _detail(store, args.id, caps, cmax)
            if args.json:
                print(json.dumps(detail, indent=2, default=str))
                return 0
            c, s = detail["conversion"], detail["summary"]
            print(f"#{c['id']} {c['op_path']} kernel={c['kernel'] or '*'} status={c['status']}")
            if c["branch"]:
                print(f"  branch {c['branch']} (base {s['base']}), worktree {c['worktree']}")
                print(f"  attempts {'  '.join(f'{k}:{v}' for k, v in s['attempts'].items())}"
                      + (f"  next {s['next']}" if s["next"] else ""))
            if s["perf"] and s["perf"]["geomean"] is not None:
                p = s["perf"]
                print(f"  perf geomean {p['geomean']:.3f} (gate {p['geomean_max']}), worst {p['worst']} "
                      f"{p['worst_ratio'] or 0:.3f} (bound {p['config_max']} as recorded)"
                      + ("  SLOW" if p["slow"] else ""))
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
                for line in _gate_lines(r):
                    print(f"    {line}")
            return 0
        rows = [_summary(store, c, caps, cmax) for c in queries.conversion_summaries(store)]
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
