"""Quitting while work runs, as a user at the keyboard meets it: a second ctrl+c in the quit dialog stops the work
(no traceback, the attempt recorded as interrupted); "leave them running in the background" hands over the
conversions still queued too, not only those running; "stop them" says which queued ones never started.

The real runner, worktrees, git, store, process groups and (for the hand-off) a real detached `tileport`
process; the one fake is the slow stage body of test_tui_stop's `slow_runner` (a real `sleep` child standing in
for a long cargo build).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

import test_tui_stop
from tileport.store import Store

slow_runner = test_tui_stop.slow_runner  # the fixture, shared with the stop tests
_alive = test_tui_stop._alive

pytestmark = pytest.mark.asyncio


async def _running(app, pilot, tmp, cid):
    """Wait until the slow stage's child runs; its pid."""
    for _ in range(300):
        await pilot.pause(0.05)
        if (tmp / "child.pid").is_file() and (tmp / "child.pid").read_text().strip():
            return int((tmp / "child.pid").read_text())
    raise AssertionError("the slow stage never started its child")


async def _until_exited(app, pilot, seconds=15.0):
    deadline = time.monotonic() + seconds
    while app.is_running and time.monotonic() < deadline:
        await pilot.pause(0.05)


def _second_op(runner, repo):
    """A second op in the repository (committed: a conversion branches from a clean HEAD)."""
    (repo / "second_op.py").write_text("# another op\n")
    subprocess.run(["git", "add", "second_op.py"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "second op"], cwd=repo, check=True)
    return repo / "second_op.py"


async def test_a_second_ctrl_c_in_the_quit_dialog_stops_the_work_and_exits_cleanly(slow_runner):
    from tileport.tui import TileportApp

    runner, cid, db, tmp, *_ = slow_runner
    app = TileportApp(db, runner.config, doctor=False, poll_interval=0.05, model="none")
    app.actions._runner = runner
    async with app.run_test(size=(160, 45)) as pilot:
        app._background("resume", cid)
        child = await _running(app, pilot, tmp, cid)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "QuitScreen"
        assert "ctrl+c again: stop them" in " ".join(str(w.render()) for w in app.screen.query("Static"))
        await pilot.press("ctrl+c")  # a person pressing it again means it
        await _until_exited(app, pilot)
    assert not app.is_running, "a second ctrl+c left the dashboard open"
    assert not _alive(child)
    assert app.exit_text and f"stopped #{cid}" in app.exit_text
    s = Store(db)
    assert s.conversion(cid)["status"] == "stopped"
    assert [e["payload"]["stage"] for e in s.events(cid) if e["kind"] == "stage.interrupted"] == ["A"]
    s.close()


async def test_stop_them_says_which_queued_conversions_never_started(slow_runner):
    from tileport.tui import TileportApp

    runner, cid, db, tmp, *_ = slow_runner
    repo = tmp / "repo"
    second = _second_op(runner, repo)
    app = TileportApp(db, runner.config, repo=repo, doctor=False, poll_interval=0.05, model="none")
    app.actions._runner = runner
    app.actions.jobs = 1  # one slot: the second op waits in the queue behind the slow one
    async with app.run_test(size=(160, 45)) as pilot:
        app.run_worker(lambda: app.actions.start([str(repo / "slow_op.py"), str(second)]), thread=True,
                       group="start", exit_on_error=False)
        await _running(app, pilot, tmp, cid)
        for _ in range(100):
            await pilot.pause(0.05)
            if app.actions.queued_here():
                break
        (queued,) = app.actions.queued_here()
        await pilot.press("q")
        await pilot.pause()
        text = " ".join(str(w.render()) for w in app.screen.query("Static"))
        assert "1 conversion running here (1 more queued)" in text and "the 1 queued do not start" in text
        await pilot.press("s")
        await _until_exited(app, pilot)
    assert not app.is_running
    assert f"stopped #{cid}" in app.exit_text and f"#{queued} not started (pending" in app.exit_text
    s = Store(db)
    assert s.conversion(queued)["status"] == "pending"
    assert not [e for e in s.events(queued) if e["kind"] == "stage.started"]  # it really never started
    s.close()


async def test_leave_running_hands_the_queued_conversions_to_the_background_too(slow_runner):
    from tileport.tui import TileportApp

    runner, cid, db, tmp, *_ = slow_runner
    repo = tmp / "repo"
    second = _second_op(runner, repo)
    app = TileportApp(db, runner.config, repo=repo, doctor=False, poll_interval=0.05, model="none")
    app.actions._runner = runner
    app.actions.jobs = 1
    async with app.run_test(size=(160, 45)) as pilot:
        app.run_worker(lambda: app.actions.start([str(repo / "slow_op.py"), str(second)]), thread=True,
                       group="start", exit_on_error=False)
        await _running(app, pilot, tmp, cid)
        for _ in range(100):
            await pilot.pause(0.05)
            if app.actions.queued_here():
                break
        (queued,) = app.actions.queued_here()
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("b")
        await _until_exited(app, pilot, 30)
    assert not app.is_running
    assert f"#{cid} #{queued} continue in the background (process" in app.exit_text, app.exit_text
    pid = int(app.exit_text.split("(process ")[1].split(",")[0])
    try:
        s = Store(db)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the queued one, never started here, starts there
            if any(e["kind"] == "stage.started" for e in s.events(queued)):
                break
            time.sleep(0.3)
        assert any(e["kind"] == "stage.started" for e in s.events(queued)), "the hand-off never ran the queued one"
        s.close()
    finally:
        if _alive(pid):
            os.killpg(pid, signal.SIGTERM)  # the detached process leads its own session and process group


async def test_sigint_from_outside_stops_the_work_before_the_screen_goes(slow_runner):
    """`kill -INT` (not a key: the terminal is in raw mode): the work is stopped and recorded, not left converting
    unseen behind a vanished screen (it used to run the stage to its end, then exit silently)."""
    from tileport.tui import TileportApp

    runner, cid, db, tmp, *_ = slow_runner
    app = TileportApp(db, runner.config, doctor=False, poll_interval=0.05, model="none")
    app.actions._runner = runner
    async with app.run_test(size=(160, 45)) as pilot:
        app._background("resume", cid)
        child = await _running(app, pilot, tmp, cid)
        os.kill(os.getpid(), signal.SIGINT)
        await _until_exited(app, pilot)
    assert not app.is_running and not _alive(child)
    assert f"stopped #{cid}" in app.exit_text
    s = Store(db)
    assert s.conversion(cid)["status"] == "stopped"
    assert [e["payload"]["stage"] for e in s.events(cid) if e["kind"] == "stage.interrupted"] == ["A"]
    s.close()
