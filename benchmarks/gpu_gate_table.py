"""Print the stage-E table from `tileport gate run` results: per configuration the reference and port device
time (median of CUPTI samples), the ratio, each side's % of the measured hardware limit, flags; then the geomean
per op and overall (tiny and failed configurations left out, and listed) and the worst configuration.

    python benchmarks/gpu_gate_table.py OUT/*.json [--markdown]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def _geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _pct(hw: dict) -> str:
    if "flop_pct" in hw:
        return f"{hw['flop_pct']:.0f}% FLOP"
    if "bw_pct" in hw:
        return f"{hw['bw_pct']:.0f}% BW"
    return "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="+")
    args = ap.parse_args(argv)
    all_ratios, worst = [], None
    print("| op | config | ref ms | port ms | port/ref | ref % limit | port % limit | flags |")
    print("|---|---|---|---|---|---|---|---|")
    summary = []
    hw_seen = None
    for path in args.results:
        res = json.loads(Path(path).read_text())
        op = (res.get("gate") or {}).get("op") or Path(path).stem
        cases = res.get("cases", [])
        passed = sum(c["status"] == "PASS" for c in cases)
        rows = (res.get("perf") or {}).get("rows", [])
        hw_seen = hw_seen or (res.get("perf") or {}).get("hw")
        ratios = []
        for r in rows:
            ratio = r.get("ratio")
            hw = r.get("hw") or {}
            flags = "; ".join(r.get("flags") or [])
            print(f"| {op} | {r['config']} | {_f(r.get('ref_ms'))} | {_f(r.get('port_ms'))} | "
                  f"{_f(ratio, 3)} | {_pct(hw.get('ref', {}))} | {_pct(hw.get('port', {}))} | {flags} |")
            if ratio and not r.get("tiny") and not r.get("failed"):
                ratios.append(ratio)
                if worst is None or ratio > worst[0]:
                    worst = (ratio, op, r["config"])
        all_ratios += ratios
        fails = [f"{c['name']} [{c.get('fail_class')}]: {c.get('message', '')[:160]}" for c in cases if c["status"] != "PASS"]
        summary.append((op, passed, len(cases), _geomean(ratios), len(ratios), len(rows), fails,
                        res.get("env_missing"), res.get("crashed")))
    print()
    print("| op | correctness | perf configs in geomean | geomean port/ref |")
    print("|---|---|---|---|")
    for op, p, n, gm, k, m, fails, env, crashed in summary:
        print(f"| {op} | {p}/{n} pass | {k}/{m} | {_f(gm, 3)} |")
    gm = _geomean(all_ratios)
    print(f"\noverall geomean port/ref: {_f(gm, 3)} over {len(all_ratios)} configurations"
          + (f"; worst {worst[0]:.3f} ({worst[1]} {worst[2]})" if worst else ""))
    if hw_seen:
        print(f"hardware measured in the same run: {json.dumps(hw_seen)}")
    for op, p, n, gm_, k, m, fails, env, crashed in summary:
        if env:
            print(f"{op}: BLOCKED(env): {env}")
        if crashed:
            print(f"{op}: {crashed}")
        for f in fails:
            print(f"{op}: FAIL {f}")
    return 0


def _f(x, digits=4):
    return "-" if x is None else f"{x:.{digits}f}"


if __name__ == "__main__":
    sys.exit(main())
