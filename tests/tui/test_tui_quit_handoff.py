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


def _assert_stopped_and_recorded(app, child, db, cid):
    """The screen is gone, the tool is dead, the attempt is recorded as interrupted and the conversion stopped."""
    assert not app.is_running and not _alive(child)
    assert app.exit_text and f"stopped #{cid}" in app.exit_text
    s = Store(db)
    try:
        assert s.conversion(cid)["status"] == "stopped"
        assert [e["payload"]["stage"] for e in s.events(cid) if e["kind"] == "stage.interrupted"] == ["A"]
    finally:
        s.close()


def _queued_app(slow_runner):
    """A dashboard with one slot on slow_runner's repository, which gets a second op (it will wait in the queue)."""
    from tileport.tui import TileportApp

    runner, cid, db, tmp, *_ = slow_runner
    app = TileportApp(db, runner.config, repo=tmp / "repo", doctor=False, poll_interval=0.05, model="none")
    app.actions._runner = runner
    app.actions.jobs = 1  # one slot: the second op waits in the queue behind the slow one
    app._second = _second_op(runner, tmp / "repo")
    return app, cid, db, tmp


async def _queue_two(app, pilot, cid, tmp) -> int:
    """Start both ops as `c` would; once the slow one runs, the id of the queued one."""
    ops = [str(tmp / "repo" / "slow_op.py"), str(app._second)]
    app.run_worker(lambda: app.actions.start(ops), thread=True, group="start", exit_on_error=False)
    await _running(app, pilot, tmp, cid)
    for _ in range(100):
        await pilot.pause(0.05)
        if app.actions.queued_here():
            break
    (queued,) = app.actions.queued_here()
    return queued


async def _quit_answering(app, pilot, key: str) -> str:
    """q, then `key` in the quit dialog; until the dashboard has gone. The dialog's text."""
    await pilot.press("q")
    await pilot.pause()
    text = " ".join(str(w.render()) for w in app.screen.query("Static"))
    await pilot.press(key)
    await _until_exited(app, pilot, 30)
    return text


@pytest.mark.parametrize("how", ["ctrl+c twice", "SIGINT"])
async def test_ctrl_c_twice_or_a_sigint_stops_the_work_and_exits_cleanly(slow_runner, how):
    """ctrl+c asks; a second ctrl+c in the dialog answers "stop them" (the app's own ctrl+c binding used to swallow
    it). `kill -INT` (not a key: the terminal is in raw mode) stops the work too, instead of letting the stage run to
    its end behind a vanished screen."""
    from tileport.tui import TileportApp

    runner, cid, db, tmp, *_ = slow_runner
    app = TileportApp(db, runner.config, doctor=False, poll_interval=0.05, model="none")
    app.actions._runner = runner
    async with app.run_test(size=(160, 45)) as pilot:
        app._background("resume", cid)
        child = await _running(app, pilot, tmp, cid)
        if how == "SIGINT":
            os.kill(os.getpid(), signal.SIGINT)
        else:
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert app.screen.__class__.__name__ == "QuitScreen"
            assert "ctrl+c again: stop them" in " ".join(str(w.render()) for w in app.screen.query("Static"))
            await pilot.press("ctrl+c")  # a person pressing it again means it
        await _until_exited(app, pilot)
    assert not app.is_running, f"{how} left the dashboard open"
    _assert_stopped_and_recorded(app, child, db, cid)


async def test_stop_them_says_which_queued_conversions_never_started(slow_runner):
    app, cid, db, tmp = _queued_app(slow_runner)
    async with app.run_test(size=(160, 45)) as pilot:
        queued = await _queue_two(app, pilot, cid, tmp)
        text = await _quit_answering(app, pilot, "s")
        assert "1 conversion running here (1 more queued)" in text and "the 1 queued do not start" in text
    assert not app.is_running
    assert f"stopped #{cid}" in app.exit_text and f"#{queued} not started (pending" in app.exit_text
    s = Store(db)
    assert s.conversion(queued)["status"] == "pending"
    assert not [e for e in s.events(queued) if e["kind"] == "stage.started"]  # it really never started
    s.close()


async def test_leave_running_hands_the_queued_conversions_to_the_background_too(slow_runner):
    app, cid, db, tmp = _queued_app(slow_runner)
    async with app.run_test(size=(160, 45)) as pilot:
        queued = await _queue_two(app, pilot, cid, tmp)
        await _quit_answering(app, pilot, "b")
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


async def test_the_quit_dialog_follows_what_starts_while_it_is_open_and_stop_them_stops_that_too(slow_runner):
    """q while #1 runs; #2 starts before the choice is made (a slot freed, a resume in a worker): the dialog then
    lists both, and "stop them" stops both, each attempt recorded as interrupted (not only what ran at q)."""
    from tileport.records import Stage, StageResult
    from tileport.exec.proc import run_command
    from tileport.tui import TileportApp

    runner, cid, db, tmp, *_ = slow_runner

    def FAKE_slow_stage(ctx):  # the fixture's slow stage, with a pid file per conversion
        run_command(["sh", "-c", f"echo $$ > {tmp}/child-{ctx.conversion_id}.pid; exec sleep 60"],
                    cwd=ctx.worktree.path)
        return StageResult(stage=Stage.ANALYZE, verdict="PASS")

    runner.stages["A"] = FAKE_slow_stage
    second = runner.start(_second_op(runner, tmp / "repo"), repo=tmp / "repo")
    app = TileportApp(db, runner.config, doctor=False, poll_interval=0.05, model="none")
    app.actions._runner = runner

    async def child_of(c):
        for _ in range(300):
            await pilot.pause(0.05)
            f = tmp / f"child-{c}.pid"
            if f.is_file() and f.read_text().strip():
                return int(f.read_text())
        raise AssertionError(f"#{c}'s slow stage never started its child")

    def dialog() -> str:
        return " ".join(str(w.render()) for w in app.screen.query("Static"))

    async with app.run_test(size=(160, 45)) as pilot:
        app._background("resume", cid)
        first = await child_of(cid)
        await pilot.press("q")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "QuitScreen" and "1 conversion running here" in dialog()
        app._background("resume", second)  # starts behind the open dialog
        other = await child_of(second)
        for _ in range(100):
            await pilot.pause(0.05)
            if "2 conversions running here" in dialog():
                break
        assert "2 conversions running here" in dialog() and f"#{second} second_op" in dialog(), dialog()
        await pilot.press("s")
        await _until_exited(app, pilot, 30)
    assert not app.is_running and not _alive(first) and not _alive(other)
    assert f"stopped #{cid} #{second}" in app.exit_text, app.exit_text
    s = Store(db)
    try:
        for c in (cid, second):
            assert s.conversion(c)["status"] == "stopped"
            assert [e["payload"]["stage"] for e in s.events(c) if e["kind"] == "stage.interrupted"] == ["A"]
    finally:
        s.close()
