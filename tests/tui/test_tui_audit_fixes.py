"""Fixes from the tmux audit (issue #23): a stale code-view worker never overwrites a newer view, an interrupted
attempt is a timeline row, the attempt diff with one attempt says so, the stop message names the store's repository
(the dashboard says `s resumes`), and the IR diff at 80x24 gives the aligned rows most of the height."""

from __future__ import annotations

import fcntl
import threading
import time

import pytest
import test_tui_code
from gitconv import Conv
from pilotwait import settle

from tileport.pipeline import control
from tileport.config import Config
from tileport.store import Store
from tileport.tui import TileportApp

pytestmark = pytest.mark.asyncio

def _conv(tmp_path, b_attempts: int = 1):
    db = tmp_path / "t.db"
    store = Store(db)
    c = Conv(tmp_path, store)
    (c.repo / "op.py").write_text(test_tui_code.PY)
    store.update_conversion(c.cid, op_path=str(c.repo / "op.py"), status="failed")
    c.run("A")
    for n in range(b_attempts):
        test_tui_code._b_attempt(c, f"let a = {n};")
    return c, db, store


def _text(app, wid: str) -> str:
    w = app.screen.query_one(wid).content
    return str(getattr(w, "code", w))


async def test_a_slow_older_code_worker_does_not_overwrite_the_newer_view(tmp_path, monkeypatch):
    c, db, store = _conv(tmp_path)
    store.close()
    from tileport.tui import code

    real = code.sides

    def slow_sides(*a, **kw):  # a side-by-side read slower than the branch diff asked for after it
        time.sleep(0.6)
        return real(*a, **kw)

    monkeypatch.setattr(code, "sides", slow_sides)
    app = TileportApp(db, Config(), doctor=False, poll_interval=0.05)
    async with app.run_test(size=(160, 45)) as pilot:
        app.open_conversion(c.cid)
        await pilot.pause()
        await pilot.press("7")
        await pilot.pause(0.15)  # the code tab mounted, its side-by-side worker sleeping
        await pilot.press("v")
        await settle(app, pilot)
        await pilot.pause(0.8)
        await settle(app, pilot)
        assert "branch diff vs base" in _text(app, "#code-head")
        assert "+pub fn my_entry()" in _text(app, "#code-left-text")


async def test_attempt_diff_with_one_attempt_says_there_is_nothing_to_compare(tmp_path):
    c, db, store = _conv(tmp_path, b_attempts=1)
    store.close()
    app = TileportApp(db, Config(), doctor=False, poll_interval=0.05)
    async with app.run_test(size=(160, 45)) as pilot:
        app.open_conversion(c.cid)
        await pilot.pause()
        for key in ("7", "v", "v"):
            await pilot.press(key)
            await settle(app, pilot)
        assert "diff between attempts" in _text(app, "#code-head")
        body = _text(app, "#code-left-text")
        assert "only one attempt of B so far; nothing to compare" in body and "no differences" not in body


async def test_an_interrupted_attempt_is_a_timeline_row(tmp_path):
    c, db, store = _conv(tmp_path, b_attempts=1)
    store.log_event("stage.started", c.cid, stage="B", attempt=2, cap=3)
    store.log_event("stage.interrupted", c.cid, stage="B", attempt=2, seconds=12.5, why="stop requested")
    store.close()
    app = TileportApp(db, Config(), doctor=False, poll_interval=0.05)
    async with app.run_test(size=(160, 45)) as pilot:
        app.open_conversion(c.cid)
        await pilot.pause()
        t = app.screen.query_one("#timeline-table")
        rows = [[str(x) for x in t.get_row_at(i)] for i in range(t.row_count)]
        hit = [r for r in rows if "INTERRUPTED" in r]
        assert len(hit) == 1, rows
        assert hit[0][1].startswith("B") and hit[0][2] == "2" and hit[0][5] == "12.5" and hit[0][8] == "stop requested"


def _hold_until_stop(files: control.RunFiles) -> threading.Thread:
    """Hold the conversion's lock as a runner does, and let go once a stop is requested."""
    control.clear_stop(files)  # as the runner's StopWatch does when it starts
    f = open(files.lock, "w")
    fcntl.flock(f, fcntl.LOCK_EX)
    f.write("4242\n")
    f.flush()

    def let_go():
        for _ in range(100):
            if files.stop.exists():
                break
            time.sleep(0.05)
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()

    th = threading.Thread(target=let_go, daemon=True)
    th.start()
    return th


async def test_stop_message_names_the_repository_and_the_dashboard_says_s_resumes(tmp_path):
    c, db, store = _conv(tmp_path, b_attempts=0)
    files = control.run_files(c.wt)
    th = _hold_until_stop(files)
    out = control.stop_conversion(store, c.cid, wait_s=5)
    th.join()
    assert out.stopped and f"tileport run --resume {c.cid} --repo {c.repo}" in out.text
    store.close()
    app = TileportApp(db, Config(), doctor=False, poll_interval=0.05)
    async with app.run_test(size=(160, 45)):
        th = _hold_until_stop(files)
        out = app.actions.stop(c.cid, wait_s=5)
        th.join()
        assert out.stopped and out.text.endswith("s resumes") and "tileport run" not in out.text


@pytest.mark.parametrize("pair", ["matmul_f16", "softmax_f16"])
async def test_ir_diff_at_80x24_gives_the_aligned_rows_most_of_the_height(tmp_path, pair):
    from pathlib import Path

    from tileport.records import Stage, StageResult

    irdir = Path(__file__).resolve().parents[1] / "ir_kernels" / "rust"
    db = tmp_path / "t.db"
    s = Store(db)
    cid = s.add_conversion("/x/examples/op.py", "k")
    s.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, verdict="COMPILED", cap=2, details={"ir_pairs": [
        {"label": f"k/{p}/sm_90", "reference": str(irdir / f"{pair}.ref.tileir"), "port": str(irdir / f"{pair}.rust.tileir"),
         "verdict": "PASS"} for p in ("f16", "f32", "bf16")]}))
    s.close()
    app = TileportApp(db, Config(), doctor=False, poll_interval=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_conversion(cid)
        await pilot.pause()
        await pilot.press("5")
        rows = app.screen.query_one("#ir-rows")
        deadline = time.monotonic() + 5
        while rows.row_count <= 10 and time.monotonic() < deadline:  # the pair's diff is drawn by a worker
            await pilot.pause(0.05)
        await pilot.pause(0.2)
        others = sum(app.screen.query_one(w).outer_size.height for w in ("#ir-pair-list", "#ir-summary", "#ir-findings"))
        assert rows.size.height >= 8 and rows.size.height > others, (rows.size.height, others)
