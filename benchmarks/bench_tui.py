"""Dashboard benchmark: open time on a big store, and keeping up with a fast writer; key-to-frame latency.

  python benchmarks/bench_tui.py [--conversions 1000] [--rate 1000] [--seconds 60]
  python benchmarks/bench_tui.py --latency [--running 4] [--presses 200]

--latency: the dashboard drives `--running` conversions itself (the real runner, worktrees, store and process
groups; the stage body is FAKE_busy_stage: a real child printing 100 cargo-like lines a second into the live
view, for as long as the benchmark runs), and reports the time from a key press to the repainted frame (Textual's
headless driver: the key is processed and the screen refreshed) for cursor moves on the list and tab switches on
a running conversion (running row, elapsed time and live output updating), p50 / p95 / max.

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


def FAKE_busy_stage(ctx):
    from tileport.exec.proc import run_command

    ctx.log("compiling crate 1/9")
    run_command(["sh", "-c", "i=0; while :; do i=$((i+1)); echo \"   Compiling crate-$i v0.1.0 (line $i)\"; "
                             "sleep 0.01; done"], cwd=ctx.worktree.path)
    raise RuntimeError("unreachable: the benchmark stops the stage")


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def latency(args) -> None:
    from tileport.pipeline import stages
    from tileport.pipeline.runner import ConversionRunner

    tmp = Path(tempfile.mkdtemp(prefix="bench-tui-latency-"))
    repo = tmp / "repo"
    repo.mkdir()
    for a in (["init", "-q", "-b", "main"], ["config", "user.name", "B"], ["config", "user.email", "b@x.invalid"]):
        subprocess.run(["git", *a], cwd=repo, check=True)
    for i in range(args.running):
        (repo / f"op{i}.py").write_text("# op\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "base"], cwd=repo, check=True)
    db = tmp / "tileport.db"
    config = Config(store=str(db))
    runner = ConversionRunner(config, model="none", out=lambda _l: None,
                    stages={**stages.default_stages(), "A": FAKE_busy_stage})
    cids = [runner.start(repo / f"op{i}.py", repo=repo) for i in range(args.running)]
    app = TileportApp(db, config, doctor=False, poll_interval=0.25, model="none")
    app.actions._runner = runner
    app.actions.jobs = args.running
    async with app.run_test(size=(160, 45)) as pilot:
        for cid in cids:
            app._background("resume", cid)
        while len(app.actions.running_here()) < args.running:
            await pilot.pause(0.1)
        await pilot.pause(2.0)
        out = {}
        for where, keys in (("list: down/up", ("down", "up")), ("running conversion: tabs 1/2", ("2", "1"))):
            if where.startswith("running"):
                await pilot.press("enter")
                await pilot.pause(1.0)
            times = []
            for n in range(args.presses):
                t0 = time.perf_counter()
                await pilot.press(keys[n % 2])
                await pilot.pause()
                times.append((time.perf_counter() - t0) * 1000)
            out[where] = times
            print(f"{where:32s} {len(times)} presses: p50 {_pct(times, .5):6.1f} ms  p95 {_pct(times, .95):6.1f} ms  "
                  f"max {max(times):6.1f} ms   ({args.running} conversions running, "
                  f"{len(app.actions.running_here())} still running)")
        live = sum(len(line.text) > 0 for line in app.screen.query_one("#live").lines)
        print(f"live output lines on screen: {live}")
        for cid in cids:
            runner.stop(cid)
        while app.actions.running_here():
            await pilot.pause(0.1)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--conversions", type=int, default=1000)
    p.add_argument("--rate", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--latency", action="store_true", help="key-to-frame latency with --running conversions")
    p.add_argument("--running", type=int, default=4)
    p.add_argument("--presses", type=int, default=200)
    a = p.parse_args()
    asyncio.run(latency(a) if a.latency else main(a))
