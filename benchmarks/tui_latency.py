"""Dashboard key-to-frame latency while 4 conversions run: p50 / p95 per key kind.

  python benchmarks/tui_latency.py [--running 4] [--presses 40] [--compare REV]

The real dashboard (TileportApp, Textual's headless driver through `run_test`) on a real SQLite store with
`--running` conversions that are running: a background process writes what a running conversion writes, at the
rate a real run does (per conversion: a `stage.started`, a log event every `--log-every` s, a finished stage run
with its commands, artifacts and model transcript every `--stage-every` s, and 40 cargo-like lines a second into
the running stage's live output file). The store changes under the dashboard as it does during 4 running
conversions; the seeded history (A..E runs with commands, artifacts, perf rows) is what a conversion holds by then.

Then it presses keys and times each from the press to the repainted frame (the key processed and the screen's
compositor update rendered; headless only skips writing the frame to a terminal): down/up on the list, enter (open
the conversion), the tabs 1..7 on a running conversion, escape (back to the list).

--compare REV: the same benchmark, the same way, on the tileport of git revision REV (extracted into a temporary
directory) and then on this tree, printed side by side. The last row, "bare tab", is the floor on this machine at
that moment: a tab switch in a bare Textual app (8 tabs of one table each) timed the same way. "idle cpu 1/6":
the dashboard's own CPU (all its threads) on a running conversion's timeline / performance tab while nobody
presses a key and the store changes under it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
TABS = [str(i) for i in range(1, 8)]
KINDS = ["down", "up", "enter", *(f"tab {t}" for t in TABS), "escape", "bare tab"]


def seed(db: Path, tmp: Path, n: int) -> list[int]:
    from tileport.agents.loop import Transcript, TranscriptEntry
    from tileport.records import ArtifactRecord, CommandRecord, FailClass, Stage, StageResult
    from tileport.store import Store

    s = Store(db)
    ids = []
    for i in range(n):
        wt = tmp / f"wt{i}"
        (wt / "runs").mkdir(parents=True)
        cid = s.add_conversion(str(tmp / f"ops/op{i}.py"), f"kernel_{i}", branch=f"tileport/op{i}-{i + 1}",
                               worktree=str(wt))
        tr = wt / "runs" / "B-1.transcript.json"
        tr.write_text(Transcript(prompt="kernel_writer@v3", max_model_len=32768, messages=[
            {"role": "system", "content": "You write cuTile Rust kernels. " * 40},
            {"role": "user", "content": "Port this op:\n" + "x = ct.load(a, index=(i,), shape=(T,))\n" * 80},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "write_kernel", "arguments": json.dumps({"source": "fn kernel() {}\n" * 60})}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "   Compiling kernel v0.1.0\nerror[E0308]\n" * 30}],
            calls=[TranscriptEntry(kind="tool_call", n_messages=2, text="", tool_calls=[{"name": "write_kernel"}])]
        ).model_dump_json())
        arts = [ArtifactRecord.of("transcript", tr)]
        for k in range(6):
            f = wt / "runs" / f"artifact-{k}-with-a-long-name-{'x' * 40}.txt"
            f.write_text(f"artifact {k}\n" * 50)
            arts.append(ArtifactRecord.of("tileir_text", f))
        cmds = [CommandRecord(argv=["/usr/bin/prlimit", "--cpu=600", "--", "cargo", "build", "--offline",
                                    "--manifest-path", f"{wt}/.tileport-build/crate/Cargo.toml"], exit_code=k % 2,
                              seconds=12.5, cwd=str(wt)) for k in range(8)]
        s.record_stage(cid, StageResult(stage=Stage.ANALYZE, verdict="PASS", cap=1, summary="analysis " * 30),
                       routed_to="B", route_reason="A PASS")
        for attempt, verdict in ((1, "FAIL_COMPILE"), (2, "COMPILED")):
            s.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, attempt=attempt, verdict=verdict, cap=3,
                                            fail_class=FailClass.KERNEL if verdict != "COMPILED" else None,
                                            commands=cmds, artifacts=arts, summary="E0308 mismatched types " * 20),
                           routed_to="D" if verdict == "COMPILED" else "B", route_reason=f"B {verdict}")
        s.record_stage(cid, StageResult(stage=Stage.HOST_CORRECTNESS, verdict="ALL_PASS", cap=2, commands=cmds[:2]),
                       routed_to="E")
        rid = s.record_stage(cid, StageResult(stage=Stage.PERFORMANCE, verdict="INVESTIGATE", cap=2,
                                              details={"geomean": 1.08, "worst_ratio": 1.2,
                                                       "worst": {"config": "[m=4096, n=4096] f16", "ratio": 1.2}}))
        s.db["perf_rows"].insert_all(
            {"stage_run_id": rid, "config": f"[m={256 << k}, n={256 << k}] f16", "ref_ms": 0.01 * (k + 1),
             "port_ms": 0.0105 * (k + 1), "ratio": 1.05} for k in range(10))
        s.update_conversion(cid, status="running")
        s.log_event("stage.started", cid, stage="B", attempt=3, cap=3, repair=True)
        ids.append(cid)
    s.close()
    return ids


# what a running conversion writes, per conversion, at a real run's pace
WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from tileport.store import Store
    from tileport.records import CommandRecord, Stage, StageResult
    db, ids, log_every, stage_every = sys.argv[1], [int(x) for x in sys.argv[2].split(",")], float(sys.argv[3]), \\
        float(sys.argv[4])
    s = Store(db)
    lives = {cid: open(Path(s.conversion(cid)["worktree"]).parent / (Path(s.conversion(cid)["worktree"]).name
                                                                     + ".live"), "a") for cid in ids}
    start = time.monotonic(); n = 0; next_log = next_stage = start; attempt = 3
    while True:
        now = time.monotonic()
        for cid, f in lives.items():  # 40 cargo-like lines a second per conversion
            for k in range(2):
                f.write(f"   Compiling crate-{n}-{k} v0.1.0 (/registry/crate-{n})\\n")
            f.flush()
        if now >= next_log:
            next_log += log_every
            for cid in ids:
                s.log_event("log", cid, text=f"cargo: compiling kernel step {n}")
        if now >= next_stage:
            next_stage += stage_every
            attempt += 1
            for cid in ids:
                s.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, attempt=attempt, verdict="FAIL_COMPILE",
                                                cap=99, commands=[CommandRecord(argv=["cargo", "build"], exit_code=101,
                                                                                seconds=3.0)],
                                                summary="E0308 mismatched types"), routed_to="B",
                               route_reason="B FAIL_COMPILE: retry")
                s.log_event("stage.started", cid, stage="B", attempt=attempt + 1, cap=99, repair=True)
        n += 1
        time.sleep(0.05)
""")


async def key_to_frame(app, pilot, key: str) -> float:
    """ms from the key reaching the app to its frame: the key and everything it set off handled (Pilot's
    _wait_for_screen, three times: the key's hops from the app to the focused widget to its bindings, what the
    action posts, a pushed screen's mount), as well as whatever background updates were already waiting (a
    person's terminal would have them too), then the screen's pending update rendered (what Screen's refresh timer
    does at most 1/60 s later; headless skips only the write to a terminal). Not Pilot.press: its wait_for_idle
    waits for the whole process to go quiet (the store poll, the live output), up to 1 s per wait."""
    from textual import events

    t0 = time.perf_counter()
    app._driver.send_message(events.Key(key, key if len(key) == 1 else None))
    for _ in range(3):
        await asyncio.sleep(0)
        await pilot._wait_for_screen()
    app.screen._on_timer_update()  # the frame: the compositor renders the update
    return (time.perf_counter() - t0) * 1000


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


async def measure(args) -> dict[str, list[float]]:
    from tileport.config import Config
    from tileport.tui import TileportApp

    tmp = Path(tempfile.mkdtemp(prefix="tui-latency-"))
    db = tmp / "tileport.db"
    ids = seed(db, tmp, args.running)
    env = {**os.environ, "PYTHONPATH": str(args.tree)}
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db), ",".join(map(str, ids)), str(args.log_every),
                               str(args.stage_every)], env=env)
    times: dict[str, list[float]] = {k: [] for k in KINDS}
    app = TileportApp(db, Config(store=str(db)), doctor=False, poll_interval=0.25)
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.pause(1.0)

            async def timed(kind: str, key: str) -> None:
                times[kind].append(await key_to_frame(app, pilot, key))
                await asyncio.sleep(args.gap)  # a person's pace between keys (not timed)

            for n in range(args.presses):
                await timed("down", "down")
                await timed("up", "up")
            for n in range(max(1, args.presses // 4)):
                await timed("enter", "enter")  # open the first conversion (running)
                await pilot.pause(0.3)
                for _ in range(2):  # every tab twice per visit, each from the tab before it
                    for t in [*TABS[1:], TABS[0]]:
                        await timed(f"tab {t}", t)
                await timed("escape", "escape")
                await pilot.pause(0.1)
            await pilot.press("enter")
            for tab in ("1", "6"):  # what the dashboard spends with nobody pressing keys, the store changing
                await pilot.press(tab)
                await pilot.pause(0.5)
                c0, t0 = time.process_time(), time.monotonic()
                await asyncio.sleep(args.idle)
                times[f"idle cpu {tab}"] = [100 * (time.process_time() - c0) / (time.monotonic() - t0)]
    finally:
        writer.kill()
        writer.wait()
    return times


async def bare_tabs(args) -> list[float]:
    """The floor on this machine now: a tab switch in a bare Textual app (a TabbedContent of 8 tables of 30 rows,
    nothing else), timed the same way; what the dashboard's tab switch costs beyond Textual's own."""
    from textual.app import App
    from textual.binding import Binding
    from textual.widgets import DataTable, TabbedContent, TabPane

    class Bare(App):
        BINDINGS = [Binding(t, f"tab('t{t}')") for t in TABS]

        def compose(self):
            with TabbedContent():
                for t in TABS:
                    with TabPane(f"Tab {t}", id=f"t{t}"):
                        yield DataTable(id=f"d{t}", cursor_type="row")

        def on_mount(self):
            for t in TABS:
                table = self.query_one(f"#d{t}", DataTable)
                table.add_columns(*"abcdef")
                for r in range(30):
                    table.add_row(*(f"cell {r} {c} " * 3 for c in "abcdef"))

        def action_tab(self, tab: str) -> None:
            self.query_one(TabbedContent).active = tab
            self.query_one(f"#d{tab[1:]}").focus()

    app, out = Bare(), []
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0.5)
        for _ in range(max(1, args.presses // 4)):
            for t in [*TABS[1:], TABS[0]]:
                out.append(await key_to_frame(app, pilot, t))
                await asyncio.sleep(args.gap)
    return out


def report(columns: list[tuple[str, dict[str, list[float]]]], running: int) -> None:
    head = f"{'key':10s}" + "".join(f" | {name[:24]:>24s}" for name, _ in columns)
    print(f"key-to-frame latency, ms (p50 / p95, n presses), {running} conversions running, 160x45")
    print(head)
    print("-" * len(head))
    for kind in [*KINDS, "idle cpu 1", "idle cpu 6"]:
        cells = []
        for _, t in columns:
            xs = t.get(kind, [])
            if kind.startswith("idle") and xs:
                cells.append(f"{xs[0]:.0f}% of a core")
                continue
            cells.append(f"{_pct(xs, .5):7.1f} / {_pct(xs, .95):7.1f} (n={len(xs):3d})" if xs else f"{'-':>24s}")
        print(f"{kind:10s}" + "".join(f" | {c:>24s}" for c in cells))


def _run_child(tree: Path, args) -> dict[str, list[float]]:
    out = subprocess.run([sys.executable, __file__, "--tree", str(tree), "--json", "--running", str(args.running),
                          "--presses", str(args.presses), "--gap", str(args.gap), "--idle", str(args.idle), "--log-every", str(args.log_every), "--stage-every",
                          str(args.stage_every)], capture_output=True, text=True, env={**os.environ,
                                                                                        "PYTHONPATH": str(tree)})
    if out.returncode != 0:
        sys.exit(f"benchmark on {tree} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--running", type=int, default=4, help="conversions running (default 4)")
    p.add_argument("--presses", type=int, default=40, help="presses of down/up; enter/escape get a quarter")
    p.add_argument("--log-every", type=float, default=0.5, help="seconds between a conversion's log events")
    p.add_argument("--stage-every", type=float, default=5.0, help="seconds between a conversion's finished runs")
    p.add_argument("--idle", type=float, default=8.0, help="seconds the idle CPU is measured per tab")
    p.add_argument("--gap", type=float, default=0.1, help="seconds between presses (not timed)")
    p.add_argument("--compare", metavar="REV", help="also run on git revision REV's tileport; print side by side")
    p.add_argument("--tree", type=Path, default=HERE, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.compare:
        with tempfile.TemporaryDirectory(prefix="tui-latency-rev-") as d:
            archive = subprocess.run(["git", "-C", str(HERE), "archive", args.compare], capture_output=True)
            if archive.returncode != 0:
                sys.exit(f"--compare {args.compare}: not a revision of {HERE} "
                         f"({archive.stderr.decode().strip()[:200]})")
            subprocess.run(["tar", "-x", "-C", d], input=archive.stdout, check=True)
            before = _run_child(Path(d), args)
        after = _run_child(HERE, args)
        report([(args.compare, before), ("this tree", after)], args.running)
        return
    sys.path.insert(0, str(args.tree))
    times = asyncio.run(measure(args))
    times["bare tab"] = asyncio.run(bare_tabs(args))
    if args.json:
        print(json.dumps(times))
    else:
        report([("this tree", times)], args.running)


if __name__ == "__main__":
    main()
