"""Library mode of `tileport analyze DIR` and `tileport run DIR`: the summary table (and `--json`) per op."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def _gates(g: dict | None) -> str:
    if not g:
        return "-"
    return " ".join(f"{k}{'+' if ok else '-'}" for k, ok in g.items())


def print_rows(rows: list[dict], root: Path, wall: float, parallel: int, *, as_json: bool = False) -> None:
    """One line per op (analysed, configurations from its own tests, draft, B verdict, gates, time, why not), then
    the totals; `as_json`: one JSON document instead, for tracking a library's state over time."""
    analysed = sum(1 for r in rows if r["analysed"] == "yes")
    timed = [r for r in rows if r["seconds"] is not None]
    slowest = max(timed, key=lambda r: r["seconds"], default=None)
    totals = {"ops": len(rows), "analysed": analysed,
              "partial": sum(1 for r in rows if r["analysed"] == "partial"),
              "failed": sum(1 for r in rows if r["analysed"] == "no"),
              "complete_drafts": sum(1 for r in rows if r["draft"] == "complete"),
              "compiled": sum(1 for r in rows if r["compiled"] == "COMPILED"),
              "all_gates": sum(1 for r in rows if r["gates"] and all(r["gates"].values())),
              "wall_s": round(wall, 1), "parallel": parallel, "cpus": os.cpu_count(),
              "slowest": {"op": slowest["op"], "seconds": slowest["seconds"]} if slowest else None}
    if as_json:
        json.dump({"library": str(root), "ops": rows, "totals": totals}, sys.stdout, indent=2)
        print()
        return
    w = max([len(r["op"]) for r in rows] + [2])
    print(f"  {'op':<{w}}  {'analysed':<8} {'cfgs':>4}  {'draft':<9} {'B':<12} {'gates':<11} {'time':>6}  why not")
    for r in rows:
        cfgs = "-" if r["configurations"] is None else str(r["configurations"])
        draft = (r["draft"] or "-") if not (r["draft"] or "").startswith("no:") else "no"
        secs = f"{r['seconds']:.1f}s" if r["seconds"] is not None else "-"
        why = r["why"] or ((r["draft"] or "")[4:] if (r["draft"] or "").startswith("no:") else "")
        print(f"  {r['op']:<{w}}  {r['analysed'] or '-':<8} {cfgs:>4}  {draft:<9} {r['compiled'] or '-':<12} "
              f"{_gates(r['gates']):<11} {secs:>6}  {why[:160]}", flush=True)
    slow = f"; slowest {slowest['op']} {slowest['seconds']:.1f} s" if slowest else ""
    print(f"{analysed} of {len(rows)} op files analysed whole ({totals['partial']} partly, {totals['failed']} not), "
          f"{totals['complete_drafts']} complete drafts, {totals['compiled']} compiled, {totals['all_gates']} with every "
          f"gate passed; {wall:.1f} s wall, {parallel} at a time on {os.cpu_count()} CPUs{slow}")
