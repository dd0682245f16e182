"""Print the stage-E table from `tileport gate run` results: per configuration the reference and port device
time (median of CUPTI samples), the ratio, each side's % of the measured hardware limit, flags; then the geomean
per op and overall (tiny and failed configurations left out, and listed) and the worst configuration. Then, for
every configuration slower than 1.05 (all of them with --launch), how each side launched its kernels as CUPTI
recorded them in the timed run: grid, block, registers per thread, shared memory, occupancy estimate.

    python benchmarks/gpu_gate_table.py OUT/*.json [--launch]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.validators.gpu.reports import launch_summary  # noqa: E402

SLOW = 1.05  # rows above this get their launch attributes printed


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
    ap.add_argument("--launch", action="store_true", help="launch attributes for every row, not only those above 1.05")
    args = ap.parse_args(argv)
    launch_rows = []
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
            if args.launch or (ratio and ratio > SLOW):
                launch_rows.append((op, r))
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
    if launch_rows:
        print()
        print("launch attributes (CUPTI, the timed run) for " + ("every configuration" if args.launch else
                                                                 f"configurations above {SLOW}") + ":")
        print("| op | config | port/ref | side | kernel launches |")
        print("|---|---|---|---|---|")
        for op, r in launch_rows:
            launch = r.get("launch") or {}
            for side in ("ref", "port"):
                attrs = launch.get(side)
                text = launch_summary(attrs) if attrs else ((r.get("launch_errors") or {}).get(side)
                                                            or "not recorded (results from a runner before launch attributes)")
                print(f"| {op} | {r['config']} | {_f(r.get('ratio'), 3)} | {side} | {text} |")
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
