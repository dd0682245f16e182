"""A scripted session in a real terminal (tmux): send keys, capture the pane, assert on what a person sees."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tileport.records import Stage, StageResult
from tileport.store import Store

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None and not os.environ.get("CI"),
                                reason="tmux not installed (CI installs it)")


SOCKET = f"tileport-test-{os.getpid()}"  # a private tmux server: a running one would lend the session its environment


def tmux(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["tmux", "-L", SOCKET, *args], **kw)


def _pane(session: str) -> str:
    return tmux("capture-pane", "-p", "-t", session, capture_output=True, text=True).stdout


def _wait_for(session: str, text: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pane = _pane(session)
        if text in pane:
            return pane
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared; the pane shows:\n{_pane(session)}")


def _git_repo_with(path: Path, op: Path) -> Path:
    path.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.name", "T"], ["config", "user.email", "t@x.invalid"]):
        subprocess.run(["git", *args], cwd=path, check=True)
    shutil.copy(op, path / op.name)
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run(["git", "commit", "-qm", "base"], cwd=path, check=True)
    return path / op.name


def test_dashboard_in_a_real_terminal(tmp_path):
    """The whole flow once, as a person at a terminal: the list, a live update from another process, a conversion,
    80x24, help, `c` to convert an op of one's own (real stages), `q` while it runs (the dialog), ctrl+c again
    (stop them): the screen goes, the attempt is recorded as interrupted, no traceback."""
    db = tmp_path / "store.db"
    op = _git_repo_with(tmp_path / "repo", REPO / "examples" / "vector_add.py")
    s = Store(db)
    cid = s.add_conversion(str(tmp_path / "vector_add.py"), "vector_add_kernel", branch="tileport/vector_add-1")
    s.record_stage(cid, StageResult(stage=Stage.ANALYZE, verdict="PASS", cap=1), routed_to="B", route_reason="A PASS")
    s.close()
    session = f"tileport-test-{os.getpid()}"
    env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm-256color"}
    cmd = (f"env PYTHONPATH={REPO} {sys.executable} -m tileport tui --store {db} --repo {op.parent} --no-doctor; "
           "echo tileport-exited-$?; sleep 60")
    tmux("new-session", "-d", "-s", session, "-x", "150", "-y", "40", cmd, check=True, env=env,
                   cwd=tmp_path)
    try:
        pane = _wait_for(session, "vector_add")
        assert "PASS" in pane and "A1/1" in pane
        # another process records a stage: the table updates without a key press
        s = Store(db)
        s.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, verdict="COMPILED", cap=2), routed_to="D",
                       route_reason="B COMPILED")
        s.close()
        pane = _wait_for(session, "COMPILED")
        assert "B1/2" in pane
        tmux("send-keys", "-t", session, "Enter", check=True)
        pane = _wait_for(session, "retries:")
        assert "B write kernel 1/2" in pane and "routed to" in pane
        # a narrow terminal: the list keeps id / op / stage / verdict / status / geomean, the header two lines
        tmux("resize-window", "-t", session, "-x", "80", "-y", "24", check=True)
        tmux("send-keys", "-t", session, "Escape", check=True)
        pane = _wait_for(session, "geomean")
        header = next(line for line in pane.splitlines() if " op " in line and "verdict" in line)
        for col in ("id", "op", "stage", "verdict", "status", "geomean"):
            assert col in header, header
        tmux("send-keys", "-t", session, "Enter", check=True)
        pane = _wait_for(session, "retries:")
        assert pane.splitlines()[0].startswith(" #1 vector_add") and pane.splitlines()[2].startswith(" retries:")
        tmux("send-keys", "-t", session, "?", check=True)
        _wait_for(session, "tileport dashboard")
        tmux("send-keys", "-t", session, "Escape", check=True)
        _wait_for(session, "retries:")
        time.sleep(0.5)  # a key right after a lone Escape reads as alt+key in a terminal
        # convert an op of one's own: real stages run (analysis, then the cargo build)
        tmux("send-keys", "-t", session, "Escape", check=True)
        _wait_for(session, "geomean")
        time.sleep(0.5)
        tmux("send-keys", "-t", session, "c", check=True)
        _wait_for(session, "Convert which op?")
        tmux("send-keys", "-t", session, "-l", str(op), check=True)
        tmux("send-keys", "-t", session, "Enter", check=True)
        _wait_for(session, "RUNNING", timeout=60)
        tmux("send-keys", "-t", session, "q", check=True)
        pane = _wait_for(session, "running here")
        assert "1 conversion running here" in pane and "#2 vector_add" in pane
        tmux("send-keys", "-t", session, "C-c", check=True)  # ctrl+c again: stop them
        pane = _wait_for(session, "tileport-exited-", timeout=40)
        assert "stopped #2" in pane and "tileport-exited-0" in pane and "Traceback" not in pane, pane
        s = Store(db)
        assert s.conversion(2)["status"] == "stopped"
        assert any(e["kind"] == "stage.interrupted" for e in s.events(2))
        s.close()
    finally:
        tmux("kill-server", capture_output=True)
