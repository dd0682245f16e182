"""Print the stage-E table from `tileport gate run` results: per configuration the reference and port device
time (median of CUPTI samples), the ratio, each side's % of the measured hardware limit, flags; then the geomean
per op and overall (tiny and failed configurations left out, and listed) and the worst configuration. Then, for
every configuration slower than 1.05 (all of them with --launch), how each side launched its kernels as CUPTI
recorded them in the timed run: grid, block, registers per thread, shared memory, occupancy estimate.

    python benchmarks/gpu_gate_table.py OUT/*.json [--launch]
    python benchmarks/gpu_gate_table.py --out OUT [--launch]

`--out OUT`: what `scripts/gpu-perf.sh run` left in its $OUT (results.tar.xz of every gate's results.json,
host_call.json of benchmarks/gpu_host_call.py, device_test.log): the stage-E table as above, then the host time
of a port call against the reference's per op, the device test's outcome, and issue 34's done criteria judged on
them (no timed configuration above config_max, the overall geomean at most 1.00, a port call at most 2x the
reference's). "Tiny" is judged as the gate judges it (`reports.is_tiny`: both sides under 5 us, never a row over
config_max), whatever the runner that wrote the file flagged.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.config import PerfGate  # noqa: E402
from tileport.validators.gpu.reports import is_tiny, launch_summary  # noqa: E402

SLOW = 1.05  # rows above this get their launch attributes printed
HOST_MAX = 2.0  # issue 34: a port call's wall time at most 2x the reference's
GEOMEAN_MAX = 1.00  # issue 34: the overall geomean over the drafts


def _geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _pct(hw: dict) -> str:
    if "flop_pct" in hw:
        return f"{hw['flop_pct']:.0f}% FLOP"
    if "bw_pct" in hw:
        return f"{hw['bw_pct']:.0f}% BW"
    return "-"


def _f(x, digits=4):
    return "-" if x is None else f"{x:.{digits}f}"


def read_out(out: Path) -> tuple[list[tuple[str, dict]], list[dict] | None, str | None]:
    """(gate name, results) per gate, the host-call rows and the device test's last line, from a run's $OUT."""
    results = []
    archive = out / "results.tar.xz"
    if archive.is_file():
        with tarfile.open(archive) as tar:
            for m in sorted(tar.getmembers(), key=lambda m: m.name):
                if m.isfile() and m.name.endswith(".json"):
                    results.append((Path(m.name).stem, json.loads(tar.extractfile(m).read())))
    else:
        results = [(p.stem, json.loads(p.read_text())) for p in sorted(out.glob("*.json")) if p.name != "host_call.json"]
    host = json.loads((out / "host_call.json").read_text()) if (out / "host_call.json").is_file() else None
    log = out / "device_test.log"
    test = next((l for l in reversed(log.read_text().splitlines()) if l.strip()), None) if log.is_file() else None
    return results, host, test


def stage_e(results: list[tuple[str, dict]], launch_all: bool, config_max: float) -> tuple[list[str], dict]:
    """The stage-E lines and what the done criteria need: counted ratios, rows over config_max, failures."""
    lines = ["| op | config | ref ms | port ms | port/ref | A/A ref; port | ref % limit | port % limit | flags |",
             "|---|---|---|---|---|---|---|---|---|"]
    launch_rows, all_ratios, over, worst, summary, hw_seen, spreads = [], [], [], None, [], None, []
    for name, res in results:
        op = (res.get("gate") or {}).get("op") or name
        cases = res.get("cases", [])
        passed = sum(c["status"] == "PASS" for c in cases)
        rows = (res.get("perf") or {}).get("rows", [])
        hw_seen = hw_seen or (res.get("perf") or {}).get("hw")
        ratios = []
        for r in rows:
            ratio = r.get("ratio")
            hw = r.get("hw") or {}
            tiny = is_tiny(r.get("ref_ms"), r.get("port_ms"), ratio, config_max)
            given = list(r.get("flags") or [])
            flags = "; ".join((["tiny (both sides under 5 us)"] if tiny and not any("tiny" in f for f in given)
                               else []) + given)
            # each side timed twice (hostrun.side_streams; results before it: the reference only): the second
            # stream over the first is the noise floor
            spread = {side: (r.get(f"{side}_again") or {}).get("spread") for side in ("ref", "port")}
            if ratio and not tiny and not r.get("failed"):
                spreads.append(spread)
            aa = "; ".join(_f(v, 3) if v else "-" for v in spread.values())
            lines.append(f"| {op} | {r['config']} | {_f(r.get('ref_ms'))} | {_f(r.get('port_ms'))} | "
                         f"{_f(ratio, 3)} | {aa} | {_pct(hw.get('ref', {}))} | "
                         f"{_pct(hw.get('port', {}))} | {flags} |")
            if launch_all or (ratio and ratio > SLOW):
                launch_rows.append((op, r))
            if ratio and ratio > config_max and not r.get("failed"):
                over.append(f"{op} {r['config']} {ratio:.3f}")
            if ratio and not tiny and not r.get("failed"):
                ratios.append(ratio)
                if worst is None or ratio > worst[0]:
                    worst = (ratio, op, r["config"])
        all_ratios += ratios
        fails = [f"{c['status']} {c['name']} [{c.get('fail_class')}]: {c.get('message', '')[:160]}" for c in cases
                 if c["status"] != "PASS"]
        unjudged = sum(c["status"] == "NOT_EVALUATED" for c in cases)  # no test judged the port: never a pass
        failed_rows = [r["config"] for r in rows if r.get("failed")]
        summary.append((op, passed, len(cases), _geomean(ratios), len(ratios), len(rows), fails, failed_rows,
                        res.get("env_missing"), res.get("crashed") or res.get("runner_error"), unjudged))
    lines += ["", "| op | correctness | perf configs in geomean | geomean port/ref |", "|---|---|---|---|"]
    for op, p, n, gm, k, m, *_, unjudged in summary:
        lines.append(f"| {op} | {p}/{n} pass{f', {unjudged} not evaluated' if unjudged else ''} | {k}/{m} | "
                     f"{_f(gm, 3)} |")
    gm = _geomean(all_ratios)
    lines.append(f"\noverall geomean port/ref: {_f(gm, 3)} over {len(all_ratios)} configurations"
                 + (f"; worst {worst[0]:.3f} ({worst[1]} {worst[2]})" if worst else ""))
    for side in ("ref", "port"):  # over the configurations in the geomean: the geomean's own noise floor
        got = [s[side] for s in spreads if s[side]]
        if got:
            lines.append(f"A/A, the {side} timed twice, second/first: geomean {_geomean(got):.4f}, median "
                         f"{statistics.median(got):.3f}, {min(got):.3f}-{max(got):.3f} over {len(got)} configurations")
    if hw_seen:
        lines.append(f"hardware measured in the same run: {json.dumps(hw_seen)}")
    if launch_rows:
        lines += ["", "launch attributes (CUPTI, the timed run) for " + ("every configuration" if launch_all else
                                                                          f"configurations above {SLOW}") + ":",
                  "| op | config | port/ref | side | kernel launches |", "|---|---|---|---|---|"]
        for op, r in launch_rows:
            launch = r.get("launch") or {}
            for side in ("ref", "port"):
                attrs = launch.get(side)
                text = launch_summary(attrs) if attrs else ((r.get("launch_errors") or {}).get(side)
                                                            or "not recorded (results from a runner before launch attributes)")
                lines.append(f"| {op} | {r['config']} | {_f(r.get('ratio'), 3)} | {side} | {text} |")
    problems = []
    for op, p, n, gm_, k, m, fails, failed_rows, env, crashed, _ in summary:
        if env:
            problems.append(f"{op}: BLOCKED(env): {env}")
        if crashed:
            problems.append(f"{op}: {str(crashed)[-300:]}")
        problems += [f"{op}: {f}" for f in fails]
        problems += [f"{op}: perf row failed: {c}" for c in failed_rows]
    lines += [""] + problems if problems else []
    cases = sum(s[2] for s in summary)
    return lines, {"geomean": gm, "over": over, "n": len(all_ratios), "problems": problems, "cases": cases,
                   "passed": sum(s[1] for s in summary), "ops": [s[0] for s in summary],
                   "not_evaluated": sum(s[10] for s in summary)}


def host_path(rows: list[dict]) -> tuple[list[str], dict]:
    """Per op, the median over its configurations of the host time of one call (op call: the op's wrapper as a
    user calls it; launch: its launches alone), reference and port, and the direct path's counters."""
    lines = ["| op | configs | op call us ref / port | port/ref | back to back us ref / port | port/ref | "
             "launch alone us ref / port | port/ref | direct launches | records (hint-free) | port output |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    ratios, burst, errors = {}, {}, []
    for op in dict.fromkeys(r["op"] for r in rows):
        ok = [r for r in rows if r["op"] == op and "error" not in r]
        errors += [f"{op} {r['config']}: {r['error']}" for r in rows if r["op"] == op and "error" in r]
        if not ok:
            continue
        med = {k: statistics.median(r[k] for r in ok) for k in ("ref_ret_us", "port_ret_us", "ref_launch_us",
                                                              "port_launch_us")}
        fast = ok[-1].get("fast") or {}
        outputs = [r["output_ok"] for r in ok if "output_ok" in r]
        ratios[op] = med["port_ret_us"] / med["ref_ret_us"]
        b = "- | -"
        both = [r for r in ok if r.get("ref_burst_us") and r.get("port_burst_us")]
        if both:  # runs before back-to-back calls were timed have none
            ref_b, port_b = (statistics.median(r[k] for r in both) for k in ("ref_burst_us", "port_burst_us"))
            burst[op] = port_b / ref_b
            b = f"{ref_b:.1f} / {port_b:.1f} | {burst[op]:.2f}"
        lines.append(f"| {op} | {len(ok)} | {med['ref_ret_us']:.1f} / {med['port_ret_us']:.1f} | {ratios[op]:.2f} | "
                     f"{b} | {med['ref_launch_us']:.1f} / {med['port_launch_us']:.1f} | "
                     f"{med['port_launch_us'] / med['ref_launch_us']:.2f} | {fast.get('direct', '-')} | "
                     f"{fast.get('recorded', '-')} ({fast.get('hint_free', '-')}) | "
                     + ("-" if not outputs else "ok" if all(outputs) else "WRONG") + " |")
    profiled = [(r, _library_ns(r)) for r in rows if _library_ns(r).get("direct")]
    if profiled:
        lines.append("\nin the library per direct launch (TILEPORT_FFI_PROFILE=1; find: the record and its "
                     "parameters, driver: context check and cuLaunchKernel), us: "
                     + "; ".join(f"{r['op']} {r['config']}: {f['direct'] / 1000:.2f}"
                                 + (f" ({', '.join(parts)})" if (parts := [f'{k} {f[k] / 1000:.2f}' for k in
                                                                          ('find', 'driver') if k in f]) else "")
                                 for r, f in {r["op"]: (r, f) for r, f in profiled}.values()))
    lines += [f"ERROR {e}" for e in errors]
    wrong = [f"{r['op']} {r['config']}" for r in rows if r.get("output_ok") is False]
    return lines, {"ratios": ratios, "burst": burst, "errors": errors, "wrong": wrong}


def _library_ns(row: dict) -> dict:
    """A host row's library split per launch in ns (`hostrun.library_split`); rows recorded before 2026-12-07
    kept it in us as `ffi_us` (direct, direct_find, direct_driver), read here as the same."""
    if row.get("library_ns"):
        return row["library_ns"]
    old = row.get("ffi_us") or {}
    return {new: old[k] * 1000 for k, new in (("direct", "direct"), ("direct_find", "find"),
                                              ("direct_driver", "driver")) if k in old}


def host_from_rows(results: list[tuple[str, dict]]) -> tuple[list[str], dict]:
    """Per op, the host time of one op call as stage E measured it beside each timed configuration (`host_us`: the
    op's wrapper called from Python, median of 30 warm calls, until it returns and until a synchronise after it,
    each call after a synchronise; and, from runners that measure it, 30 calls back to back, each until it
    returns); median over the op's configurations. What issue 34's host criterion is judged on when the run made
    no host_call.json (HOST=0)."""
    lines = ["| op | configs | op call until return us ref / port | port/ref | back to back us ref / port | port/ref | "
             "until synchronised us ref / port | port launches on the direct path |",
             "|---|---|---|---|---|---|---|---|"]
    ratios, burst, profiled, apis = {}, {}, [], []
    for name, res in results:
        op = (res.get("gate") or {}).get("op") or name
        api = _launch_api(res)
        if api:
            apis.append(f"{op}: {api}")
        rows = [r for r in (res.get("perf") or {}).get("rows", [])
                if (r.get("host_us") or {}).get("ref") and (r.get("host_us") or {}).get("port")]
        if not rows:
            continue
        med = {(side, k): statistics.median(r["host_us"][side][k] for r in rows)
               for side in ("ref", "port") for k in ("return_us", "call_us")}
        ratios[op] = med["port", "return_us"] / med["ref", "return_us"]
        both = [r["host_us"] for r in rows if "burst_us" in r["host_us"]["ref"] and "burst_us" in r["host_us"]["port"]]
        b = "- | -"
        if both:
            ref_b = statistics.median(h["ref"]["burst_us"] for h in both)
            port_b = statistics.median(h["port"]["burst_us"] for h in both)
            burst[op] = port_b / ref_b
            b = f"{ref_b:.1f} / {port_b:.1f} | {burst[op]:.2f}"
        ports = [r["host_us"]["port"] for r in rows]
        direct = ("-" if any("direct" not in p for p in ports) else
                  f"{sum(p['direct'] for p in ports)} over "
                  f"{sum(p['calls'] * (2 if 'burst_us' in p else 1) + 1 for p in ports)} calls"
                  + "".join(f"; {n}" for n in sorted({p['direct_note'] for p in ports if p.get('direct_note')})))
        lines.append(f"| {op} | {len(rows)} | {med['ref', 'return_us']:.1f} / {med['port', 'return_us']:.1f} | "
                     f"{ratios[op]:.2f} | {b} | {med['ref', 'call_us']:.1f} / {med['port', 'call_us']:.1f} | "
                     f"{direct} |")
        split = [p["library_ns"] for p in ports if p.get("library_ns")]
        if split:  # TILEPORT_FFI_PROFILE=1: the library's own split, median over the rows
            med_ns = {k: statistics.median(s[k] for s in split) for k in split[0]}
            profiled.append(f"{op}: " + ", ".join(f"{k} {v:g}" for k, v in med_ns.items()))
    if profiled:
        lines.append("\nin the library, ns per launch (TILEPORT_FFI_PROFILE=1; through cutile: decide, prepare, "
                     "launch, total; direct: find, driver): " + "; ".join(profiled))
    if apis:
        lines.append("\nthe host call that launched each side's kernel in the timed calls (CUPTI's record, both "
                     "sides traced alike), us, median over configurations: " + "; ".join(apis))
    return lines, {"ratios": ratios, "burst": burst, "errors": [], "wrong": []}


def _launch_api(res: dict) -> str:
    """An op's `launch_api_us` over its stage-E rows: per side and API name the median of the rows' medians."""
    per: dict[tuple[str, str], list[float]] = {}
    for row in (res.get("perf") or {}).get("rows", []):
        for side, got in (row.get("launch_api_us") or {}).items():
            for api, v in got.items():
                per.setdefault((side, api), []).append(v["median_us"])
    return ", ".join(f"{side} {api} {statistics.median(v):.2f}" for (side, api), v in
                     sorted(per.items(), key=lambda kv: (kv[0][0] != "ref", kv[0][1])))


def criteria(e: dict, h: dict | None, test: str | None, config_max: float) -> list[str]:
    out = ["", "issue 34, done when:"]
    out.append(f"- correctness: {e['passed']}/{e['cases']} cases pass over {len(e['ops'])} ops"
               + (f", {e['not_evaluated']} not evaluated (no test judged the port)" if e.get("not_evaluated") else "")
               + ("" if not e["problems"] else f" ({len(e['problems'])} problems listed above)"))
    out.append(f"- no timed configuration above {config_max}: "
               + (f"NO, {len(e['over'])}: " + "; ".join(e["over"]) if e["over"] else
                  "yes" if e["n"] else "no measurement"))
    gm = e["geomean"]
    out.append(f"- overall geomean at most {GEOMEAN_MAX:.2f}: "
               + ("no measurement" if gm is None else f"{'yes' if gm <= GEOMEAN_MAX else 'NO'} ({gm:.4f} over {e['n']})"))
    if h is None:
        out.append("- port call at most 2x the reference's: no host_call.json and no host_us in the rows")
    else:
        worst = max(h["ratios"].items(), key=lambda kv: kv[1]) if h["ratios"] else None
        over = [f"{op} {x:.2f}x" for op, x in h["ratios"].items() if x > HOST_MAX]
        out.append(f"- port call at most {HOST_MAX:.0f}x the reference's: "
                   + ("no rows" if worst is None else "yes" if not over else "NO: " + ", ".join(over))
                   + (f" (worst {worst[0]} {worst[1]:.2f}x over {len(h['ratios'])} ops)" if worst else "")
                   + (f"; port output WRONG: {', '.join(h['wrong'])}" if h["wrong"] else ""))
        if h.get("burst"):  # the same, calls back to back (no synchronise before each)
            bw = max(h["burst"].items(), key=lambda kv: kv[1])
            bover = [f"{op} {x:.2f}x" for op, x in h["burst"].items() if x > HOST_MAX]
            out.append(f"- the same, calls back to back: " + ("yes" if not bover else "NO: " + ", ".join(bover))
                       + f" (worst {bw[0]} {bw[1]:.2f}x over {len(h['burst'])} ops)")
    out.append(f"- direct path device test: {test or 'no device_test.log'}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="*")
    ap.add_argument("--out", default=None, help="a scripts/gpu-perf.sh run's $OUT: every table and issue 34's criteria")
    ap.add_argument("--launch", action="store_true", help="launch attributes for every row, not only those above 1.05")
    args = ap.parse_args(argv)
    config_max = PerfGate().config_max
    host, test = None, None
    if args.out:
        results, host, test = read_out(Path(args.out))
    else:
        results = [(Path(p).stem, json.loads(Path(p).read_text())) for p in args.results]
    if not results and host is None:
        print("no results given (results.json files, or --out DIR)", file=sys.stderr)
        return 2
    lines, e = stage_e(results, args.launch, config_max)
    print("\n".join(lines))
    h = None
    if host is not None:
        hl, h = host_path(host)
        print("\nhost time per call, port vs reference (benchmarks/gpu_host_call.py, median of 100 calls per "
              "configuration, median over configurations):")
        print("\n".join(hl))
    elif results:
        hl, h = host_from_rows(results)
        if h["ratios"]:
            print("\nhost time per op call, port vs reference (stage E's host_us beside each timed configuration, "
                  "median of 30 calls, median over configurations):")
            print("\n".join(hl))
        else:
            h = None
    if args.out:
        print("\n".join(criteria(e, h, test, config_max)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
