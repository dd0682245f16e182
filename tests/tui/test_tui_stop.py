"""Stop and resume, as a user sees them: `tileport stop ID` (another process) kills the running tool within
seconds, the attempt is recorded as interrupted, and the same runner resumes it under the same attempt number.

The real runner, worktree, git, store and process groups; the one fake is the stage body (FAKE_slow_stage):
a real `sleep` child stands in for a 10-minute cargo build we cannot afford in the default suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tileport.pipeline import control
from tileport.pipeline.runner import ConversionRunner
from tileport.config import Config
from tileport.exec.proc import run_command
from tileport.records import Stage, StageResult
from tileport.store import Store, queries

REPO = Path(__file__).resolve().parents[2]


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.name", "T"], ["config", "user.email", "t@x.invalid"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    (repo / "slow_op.py").write_text("# op\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "base"], cwd=repo, check=True)
    return repo


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for us
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.fixture
def slow_runner(tmp_path, monkeypatch):
    from tileport.pipeline.stages import default_stages

    pids: list[int] = []
    started = threading.Event()

    def FAKE_slow_stage(ctx):
        ctx.log("waiting for the cargo lock")
        child = tmp_path / "child.pid"
        started.set()
        run_command(["sh", "-c", f"echo $$ > {child}; echo compiling crate 1/9; exec sleep 60"],
                    cwd=ctx.worktree.path)
        return StageResult(stage=Stage.ANALYZE, verdict="PASS")

    def FAKE_fast_stage(ctx):
        return StageResult(stage=Stage.ANALYZE, verdict="FAIL_FIXABLE", summary="fake: stop here")

    table = {**default_stages(), "A": FAKE_slow_stage}  # injected into the runner; swapped below for resume
    repo = _repo(tmp_path)
    db = tmp_path / "store.db"
    runner = ConversionRunner(Config(store=str(db)), model="none", out=lambda _l: None, stages=table)
    cid = runner.start(repo / "slow_op.py", repo=repo)
    return runner, cid, db, tmp_path, started, lambda: table.__setitem__("A", FAKE_fast_stage), pids


def test_tileport_stop_kills_the_running_tool_and_resume_reruns_the_attempt(slow_runner):
    runner, cid, db, tmp, started, make_fast, _ = slow_runner
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("f", runner.drive(cid)))
    t.start()
    assert started.wait(30)
    for _ in range(100):
        if (tmp / "child.pid").is_file() and (tmp / "child.pid").read_text().strip():
            break
        time.sleep(0.05)
    child = int((tmp / "child.pid").read_text())
    wt = Store(db).conversion(cid)["worktree"]
    live = control.run_files(wt).live.read_text()
    assert "[tileport] waiting for the cargo lock" in live and "compiling crate 1/9" in live
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "tileport", "stop", str(cid), "--store", str(db)], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t0
    t.join(10)
    assert not t.is_alive()
    assert r.returncode == 0, r.stderr
    assert f"#{cid} stopped" in r.stdout and "stage A attempt 1 interrupted" in r.stdout, r.stdout
    assert took < 20, took  # a python start-up of `tileport stop` included (slow on a loaded 2-core CI)
    assert not _alive(child), "the tool's process group outlived the stop"
    assert out["f"].status == "stopped"
    s = Store(db)
    assert s.conversion(cid)["status"] == "stopped"
    assert [e["payload"]["stage"] for e in s.events(cid) if e["kind"] == "stage.interrupted"] == ["A"]
    assert queries.stage_runs(s, cid) == []  # nothing of the killed attempt is kept as a verdict
    s.close()
    # resume in the same runner (the dashboard's session): a new cancel token, the attempt runs again as 1
    make_fast()
    f = runner.resume(cid)
    assert f.status == "failed"
    s = Store(db)
    runs = queries.stage_runs(s, cid)
    s.close()
    assert (runs[0].stage, runs[0].attempt, runs[0].verdict) == ("A", 1, "FAIL_FIXABLE")


def test_tileport_stop_on_a_conversion_nobody_runs_says_so(slow_runner):
    _, cid, db, *_ = slow_runner
    r = subprocess.run([sys.executable, "-m", "tileport", "stop", str(cid), "--store", str(db)], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and f"#{cid} is not running (status pending); nothing to stop" in r.stdout
    r = subprocess.run([sys.executable, "-m", "tileport", "stop", "99", "--store", str(db)], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.asyncio
async def test_q_while_a_conversion_runs_asks_and_stop_them_kills_and_records(slow_runner):
    from tileport.tui import TileportApp

    runner, cid, db, tmp, started, *_ = slow_runner
    app = TileportApp(db, runner.config, doctor=False, poll_interval=0.05, model="none")
    app.actions._runner = runner  # the runner whose stage A is the slow fake
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        app._background("resume", cid)
        for _ in range(200):
            await pilot.pause(0.05)
            if (tmp / "child.pid").is_file() and (tmp / "child.pid").read_text().strip():
                break
        child = int((tmp / "child.pid").read_text())
        await pilot.press("q")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "QuitScreen"
        text = " ".join(str(w.render()) for w in app.screen.query("Static"))
        assert "1 conversion running here" in text and f"#{cid} slow_op: A analyze attempt 1" in text
        await pilot.press("escape")  # cancel: nothing stops
        await pilot.pause()
        assert app.screen.__class__.__name__ == "MainScreen" and _alive(child)
        await pilot.press("ctrl+c")  # ctrl+c asks the same question
        await pilot.pause()
        assert app.screen.__class__.__name__ == "QuitScreen"
        await pilot.press("s")
        for _ in range(200):
            await pilot.pause(0.05)
            if not app.is_running:
                break
    assert not app.is_running
    assert not _alive(child)
    assert app.exit_text and f"stopped #{cid}" in app.exit_text
    s = Store(db)
    assert s.conversion(cid)["status"] == "stopped"
    assert [e["payload"]["stage"] for e in s.events(cid) if e["kind"] == "stage.interrupted"] == ["A"]
    s.close()


@pytest.mark.asyncio
async def test_a_running_stage_is_a_timeline_row_with_elapsed_time_now_and_live_output(slow_runner):
    from tileport.tui import TileportApp

    runner, cid, db, tmp, started, *_ = slow_runner
    app = TileportApp(db, runner.config, doctor=False, poll_interval=0.05, model="none")
    app.actions._runner = runner
    async with app.run_test(size=(160, 45)) as pilot:
        app._background("resume", cid)
        for _ in range(200):
            await pilot.pause(0.05)
            if (tmp / "child.pid").is_file() and (tmp / "child.pid").read_text().strip():
                break
        await pilot.pause(1.2)
        row = [str(c) for c in app.screen.query_one("#conversions").get_row_at(0)]
        assert row[2] == "A▶" and row[3].startswith("RUNNING ")
        await pilot.press("enter")
        for _ in range(40):
            await pilot.pause(0.1)
            live = "\n".join(str(line.text) for line in app.screen.query_one("#live").lines)
            if "compiling crate 1/9" in live:
                break
        t = app.screen.query_one("#timeline-table")
        running = [str(c) for c in t.get_row("running")]
        assert running[1] == "A analyze" and running[3] == "RUNNING" and running[5].endswith("s")
        assert "now: $ sh -c" in running[10]  # the newest thing it does: the tool it started
        assert "compiling crate 1/9" in live and "waiting for the cargo lock" in live
        assert "now: $ sh -c" in str(app.screen.query_one("#now").render())
        await pilot.press("x")
        for _ in range(100):
            await pilot.pause(0.1)
            if not app.actions.running_here():
                break
        await pilot.pause(0.5)
        assert not app.actions.running_here()
        msgs = [n.message for n in app._notifications]
        assert any(m.startswith(f"#{cid} stopped") and "stage A attempt 1 interrupted" in m for m in msgs), msgs
        assert "running" not in [k.value for k in t.rows]


@pytest.mark.asyncio
async def test_leave_running_in_the_background_hands_the_conversion_to_a_detached_process(slow_runner):
    """b in the quit dialog: the dashboard's drive stops (interrupted), a detached `tileport` process resumes the
    conversion with the same store (real stages there: stage A analyses the one-line op and routes on) and the
    screen goes away at once."""
    from tileport.tui import TileportApp

    runner, cid, db, tmp, started, *_ = slow_runner
    app = TileportApp(db, runner.config, doctor=False, poll_interval=0.05, model="none")
    app.actions._runner = runner
    async with app.run_test(size=(160, 45)) as pilot:
        app._background("resume", cid)
        for _ in range(200):
            await pilot.pause(0.05)
            if (tmp / "child.pid").is_file() and (tmp / "child.pid").read_text().strip():
                break
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("b")
        for _ in range(200):
            await pilot.pause(0.05)
            if not app.is_running:
                break
    assert app.exit_text and f"#{cid} continue in the background (process" in app.exit_text
    pid = int(app.exit_text.split("(process ")[1].split(",")[0])
    log = Path(app.exit_text.split("log ")[1].split(")")[0])
    deadline = time.monotonic() + 240
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _alive(pid)
    text = log.read_text()
    assert f"#{cid}: " in text, text  # its final line: the status the real stages reached
    s = Store(db)
    kinds = [e["kind"] for e in s.events(cid)]
    assert "stage.interrupted" in kinds and kinds.count("stage.started") >= 2  # stopped here, started again there
    s.close()
