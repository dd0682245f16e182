"""Children die with tileport (issue #8): kill -9 tileport mid-analysis and no child it started survives.

Before: the analysis child sat in its own session and kept running (one kept a core busy for minutes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tileport.exec.proc import run_command

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has stopped running


def _descendants(root: int) -> set[int]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            pp = _ppid(int(d))
            if pp is not None:
                kids.setdefault(pp, []).append(int(d))
    out, todo = set(), [root]
    while todo:
        for k in kids.get(todo.pop(), []):
            if k not in out:
                out.add(k)
                todo.append(k)
    return out


def _wait_for(cond, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def test_kill_9_tileport_mid_analysis_leaves_no_child_running(tmp_path):
    op = tmp_path / "slow_op.py"
    # The import spins (CPU-bound, as the runaway child did) long enough to be caught mid-analysis.
    op.write_text("import time\nt = time.time()\nwhile time.time() - t < 120:\n    pass\n"
                  + (Path(__file__).parents[2] / "examples" / "vector_add.py").read_text())
    p = subprocess.Popen([sys.executable, "-m", "tileport", "analyze", str(op), "--no-cubin", "--out",
                          str(tmp_path / "res")], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert _wait_for(lambda: _descendants(p.pid), 60), "tileport started no child"
        time.sleep(0.5)
        children = _descendants(p.pid)
        assert children
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        assert _wait_for(lambda: not any(_alive(c) for c in children), 10), \
            [Path(f"/proc/{c}/cmdline").read_bytes() for c in children if _alive(c)]
    finally:
        if p.poll() is None:
            p.kill()
        for c in _descendants(p.pid):
            os.kill(c, signal.SIGKILL)


def test_kill_9_a_process_running_a_command_kills_the_command(tmp_path):
    """run_command's children (compilers, IR-dump binaries) die with the process that started them."""
    code = textwrap.dedent("""
        import sys
        from tileport.exec.proc import run_command
        print("go", flush=True)
        run_command(["sleep", "300"], timeout=600)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "go"
        assert _wait_for(lambda: _descendants(p.pid), 30)
        children = _descendants(p.pid)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        assert _wait_for(lambda: not any(_alive(c) for c in children), 10)
    finally:
        if p.poll() is None:
            p.kill()


def test_a_normal_exit_reaps_what_the_command_left_in_its_group(tmp_path):
    """A command that backgrounds a process and exits: the leftover is killed with the group."""
    marker = tmp_path / "pid"
    res = run_command(["sh", "-c", f"sleep 300 >/dev/null 2>&1 & echo $! > {marker}"], timeout=60)
    assert res.ok
    pid = int(marker.read_text())
    assert _wait_for(lambda: not _alive(pid), 5)
