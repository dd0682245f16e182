"""How long the Rust side of a conversion takes on this machine.

1. Cold: the cutile dependency tree compiled from nothing. Reported from the shared warm-up log
   (/tmp/warmbuild.log, `time` output) and, with --cold, measured again in a fresh, temporary CARGO_TARGET_DIR
   (several minutes on 2 cores; the shared cache is not touched).
2. Warm: the writer's loop — one kernel edited, then `cargo build` (only the conversion crate recompiles),
   the IR dump (KernelCompiler per entry x variant), tileirdisasm and tileiras for sm_90. Target: <= 15 s.

    .venv/bin/python benchmarks/bench_rust_build.py [--port softmax] [--repeat 3] [--cold] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tileport.validators.rust.build import BuildOptions, build_crate, prepare_crate, shared_target_dir  # noqa: E402
from tileport.validators.rust.crate import crate_cache_root  # noqa: E402

TARGET_S = 15.0


def warmup_log_seconds(path: Path) -> list[float]:
    """`real XmY.YYYs` lines of a `time cargo build` log."""
    if not path.is_file():
        return []
    return [int(m) * 60 + float(s) for m, s in re.findall(r"^real\s+(\d+)m([\d.]+)s", path.read_text(), re.M)]


def cold_build(port: str) -> dict:
    """Build one port against an empty target dir: the full dependency tree plus the crate."""
    with tempfile.TemporaryDirectory(prefix="tileport-cold-") as tmp:
        layout = prepare_crate(ROOT / "ports" / port, out=Path(tmp) / "crate")
        t0 = time.monotonic()
        result = build_crate(layout, BuildOptions(target_dir=Path(tmp) / "target"))
        return {"seconds": round(time.monotonic() - t0, 1), "ok": result.ok, "cargo_build": result.timings.get("cargo_build"),
                "crates_compiled": len(result.rebuilt)}


def warm_rebuilds(port: str, repeat: int) -> dict:
    layout = prepare_crate(ROOT / "ports" / port, out=crate_cache_root() / f"bench-{port}")
    prime = build_crate(layout, BuildOptions())
    if not prime.ok:
        raise SystemExit("priming build failed:\n" + "\n".join(d.short() for d in prime.diagnostics))
    kernel = layout.kernel_rs
    original = kernel.read_text()
    runs = []
    try:
        for i in range(repeat):
            # An edit the writer would make: new source text, so cargo and rustc must recompile the crate.
            kernel.write_text(original + f"\n// bench edit {i} {time.time_ns()}\n")
            t0 = time.monotonic()
            result = build_crate(layout, BuildOptions())
            wall = time.monotonic() - t0
            if not result.ok:
                raise SystemExit("rebuild failed:\n" + "\n".join(d.short() for d in result.diagnostics))
            t = result.timings
            runs.append({"total": round(wall, 2),
                         "rebuild_and_dump": round(t.get("policy", 0) + t["cargo_build"] + t["ir_dump"], 2),
                         **{k: round(v, 2) for k, v in t.items()
                            if k in ("cargo_build", "ir_dump", "tileirdisasm_and_tileiras_wall")},
                         "rebuilt": result.rebuilt, "jobs": len(result.jobs)})
    finally:
        kernel.write_text(original)
    dumps = [r["rebuild_and_dump"] for r in runs]
    totals = [r["total"] for r in runs]
    return {"port": port, "runs": runs, "median_s": statistics.median(dumps), "max_s": max(dumps),
            "median_total_s": statistics.median(totals), "max_total_s": max(totals),
            "target_s": TARGET_S, "meets_target": max(dumps) <= TARGET_S}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", default="softmax", help="port under ports/ to rebuild (default softmax: 3 jobs)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="also measure a cold dependency build (minutes)")
    ap.add_argument("--warmup-log", default="/tmp/warmbuild.log")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    report: dict = {"cpus": os.cpu_count(), "target_dir": str(shared_target_dir()),
                    "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}
    report["warmup_log_real_s"] = warmup_log_seconds(Path(args.warmup_log))
    if args.cold:
        report["cold"] = cold_build(args.port)
    report["warm"] = warm_rebuilds(args.port, args.repeat)

    if args.json:
        print(json.dumps(report, indent=2))
        return 0 if report["warm"]["meets_target"] else 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {report['cpus']} CPUs, load average {load:.1f} at start; shared target dir {report['target_dir']}")
    if report["warmup_log_real_s"]:
        print(f"cold dependency build, from {args.warmup_log}: "
              + " + ".join(f"{s:.1f} s" for s in report["warmup_log_real_s"]) + " (real)")
    if "cold" in report:
        c = report["cold"]
        print(f"cold build measured now ({args.port}, empty target dir): {c['seconds']} s, "
              f"{c['crates_compiled']} crates compiled, ok={c['ok']}")
    w = report["warm"]
    for i, r in enumerate(w["runs"], 1):
        print(f"warm rebuild {i} ({w['port']}, {r['jobs']} jobs): cargo {r['cargo_build']:.2f} s + IR dump "
              f"{r['ir_dump']:.2f} s = {r['rebuild_and_dump']:.2f} s; + tileirdisasm/tileiras "
              f"{r['tileirdisasm_and_tileiras_wall']:.2f} s = {r['total']:.2f} s in all; "
              f"recompiled: {', '.join(r['rebuilt'])}")
    verdict = "meets" if w["meets_target"] else "MISSES"
    print(f"warm rebuild + IR dump: median {w['median_s']:.2f} s, max {w['max_s']:.2f} s -> {verdict} the "
          f"{TARGET_S:.0f} s target; with sm_90 cubins: median {w['median_total_s']:.2f} s, max {w['max_total_s']:.2f} s")
    return 0 if w["meets_target"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
