"""A GPU runner stopped by its pack's time limit takes its test children with them.

Found on an H100 (docs/gpu-runs.md, 2026-12-05 third session): `scripts/gpu-gate-tests.sh` stopped a pack at its
limit (`timeout` sends the runner SIGTERM), its replay child, started in a session of its own, kept running with
70 GiB of GPU memory, and the next pack's large configurations ran out of memory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.conftest import REPO

PARENT = r'''
import sys, time
from tileport.validators.gpu import hosttests
hosttests.reap_children_on_termination()
child = hosttests._spawn([sys.executable, "-c", "import time; time.sleep(120)"])
print(child.pid, flush=True)
time.sleep(120)
'''


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purpose (it holds no memory); /proc says which
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_sigterm_to_the_runner_kills_the_children_it_started_in_their_own_sessions():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], cwd=str(REPO), stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        child = int(parent.stdout.readline())
        assert _alive(child)
        assert os.getsid(child) != os.getsid(parent.pid)  # its own session: the runner's group kill misses it
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=30) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the child outlived the runner"
    finally:
        parent.kill()
