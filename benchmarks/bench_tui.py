"""Dashboard benchmark: open time on a big store, and keeping up with a fast writer.

  python benchmarks/bench_tui.py [--conversions 1000] [--rate 1000] [--seconds 60]

1. Opens the dashboard (headless, Textual's test driver) on a store with N conversions, each with an
   A and a B run, and reports the time until the table holds every row.
2. A second process appends `rate` events per second (stage records and log lines spread over all
   conversions) for `seconds`; every second this prints how many events were written, how many the
   dashboard has rendered (the lag) and the dashboard's resident memory. It keeps up when the lag
   stays bounded by about one poll's worth of events and memory does not keep growing.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tileport.config import Config  # noqa: E402
from tileport.records import Stage, StageResult  # noqa: E402
from tileport.store import Store  # noqa: E402
from tileport.tui import TileportApp  # noqa: E402


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def seed(db: Path, n: int) -> None:
    s = Store(db)
    with s.db.atomic():
        for i in range(n):
            cid = s.add_conversion(f"/repo/ops/op{i:04d}.py", f"kernel_{i}", branch=f"tileport/op{i:04d}-{i + 1}")
            s.record_stage(cid, StageResult(stage=Stage.ANALYZE, verdict="PASS", cap=1), routed_to="B")
            s.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, verdict="COMPILED", cap=2), routed_to="D")
    s.close()


WRITER = textwrap.dedent("""
    import random, sys, time
    from tileport.store import Store
    from tileport.records import Stage, StageResult
    db, rate, seconds, n = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    s = Store(db)
    start = time.monotonic(); written = 0; batch = max(1, rate // 20)
    while time.monotonic() - start < seconds:
        with s.db.atomic():
            for _ in range(batch):
                cid = random.randint(1, n)
                if written % 50 == 0:
                    s.record_stage(cid, StageResult(stage=Stage.HOST_CORRECTNESS, verdict="BLOCKED", cap=2,
                                                    summary="no GPU"), routed_to="stop")
                    written += 2  # the stage record and its event
                else:
                    s.log_event("log", cid, text=f"cargo: compiling kernel {written}")
                    written += 1
        target = start + written / rate
        delay = target - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    s.close()
""")


async def main(args) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-tui-"))
    db = tmp / "tileport.db"
    t0 = time.perf_counter()
    seed(db, args.conversions)
    print(f"seeded {args.conversions} conversions in {time.perf_counter() - t0:.1f} s")

    t0 = time.perf_counter()
    app = TileportApp(db, Config(), doctor=False, poll_interval=0.25)
    async with app.run_test(size=(160, 50)) as pilot:
        while app.screen.__class__.__name__ != "MainScreen" or not app.screen.query_one("#conversions").row_count:
            await pilot.pause(0.005)
        first = time.perf_counter() - t0
        while app.screen.query_one("#conversions").row_count < args.conversions:
            await pilot.pause(0.01)
        opened = time.perf_counter() - t0
        print(f"open: first page on screen after {first * 1000:.0f} ms (target < 1000 ms); all {args.conversions} "
              f"rows in the table after {opened * 1000:.0f} ms")

        base_events = app._last_event
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(args.rate), str(args.seconds),
                                   str(args.conversions)], cwd=Path(__file__).resolve().parents[1])
        rss0 = rss_mb()
        print(f"{'t (s)':>6} {'written':>8} {'rendered':>9} {'lag':>6} {'RSS MB':>7}")
        lags, rss = [], []
        start = time.monotonic()
        probe = Store(db)
        while writer.poll() is None:
            await pilot.pause(1.0)
            written = probe.db.execute("select max(id) from events").fetchone()[0] - base_events
            lag = written - app.events_seen
            lags.append(lag)
            rss.append(rss_mb())
            t = time.monotonic() - start
            if len(lags) % max(1, int(args.seconds // 12)) == 0:
                print(f"{t:6.1f} {written:8d} {app.events_seen:9d} {lag:6d} {rss[-1]:7.1f}")
        for _ in range(40):  # drain
            await pilot.pause(0.25)
            written = probe.db.execute("select max(id) from events").fetchone()[0] - base_events
            if app.events_seen >= written:
                break
        probe.close()
        half = len(rss) // 2
        print(f"events written {written} in {args.seconds:.0f} s ({written / args.seconds:.0f}/s); rendered "
              f"{app.events_seen}; final lag {written - app.events_seen}")
        print(f"lag while writing: median {sorted(lags)[len(lags) // 2]}, max {max(lags)} events "
              f"(one poll at {args.rate}/s is {args.rate // 4})")
        print(f"RSS: before writer {rss0:.1f} MB, mid-run {rss[half] if rss else float('nan'):.1f} MB, "
              f"end {rss[-1] if rss else float('nan'):.1f} MB")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--conversions", type=int, default=1000)
    p.add_argument("--rate", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=60)
    asyncio.run(main(p.parse_args()))
