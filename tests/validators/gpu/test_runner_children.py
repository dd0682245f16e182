"""A GPU runner stopped by its pack's time limit takes its test children with them.

Found on an H100 (docs/gpu-runs.md, 2026-12-05 third session): `scripts/gpu-gate-tests.sh` stopped a pack at its
limit (`timeout` sends the runner SIGTERM), its replay child, started in a session of its own, kept running with
70 GiB of GPU memory, and the next pack's large configurations ran out of memory."""

from __future__ import annotations

import json
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


# A stand-in for tp_replay.py (the real one needs a GPU): it times one configuration, writes its row the way the
# replay does (the whole file replaced), then is still busy with the next when the pack's limit comes.
STAND_IN_REPLAY = r'''
import json, sys, time
from pathlib import Path
out = Path(sys.argv[sys.argv.index("--out") + 1])
tmp = out.with_suffix(".tmp")
tmp.write_text(json.dumps({"rows": [{"config": "first", "ratio": 1.0}], "bytecode": {"abc": "AAAA"}}))
tmp.replace(out)
time.sleep(120)
'''

RUNNER = r'''
import json, sys
from pathlib import Path
from tileport.validators.gpu import hosttests
pack, results = Path(sys.argv[1]), Path(sys.argv[2])
hosttests.reap_children_on_termination()
state = {"perf": {"rows": [{"config": "harness"}]}}
def take(data):
    state["perf"]["rows"] = [{"config": "harness"}] + data.get("rows", [])
    state["bytecode"] = data.get("bytecode", {})
    results.write_text(json.dumps(state))
print("started", flush=True)
hosttests.run_replay(pack, pack, "lib.so", pack, pack / "replay.json", 600, print, pack / "configs.json",
                     progress=take)
'''


def test_rows_the_replay_measured_are_in_the_results_when_the_packs_limit_stops_the_runner(tmp_path):
    """On an H200 two cutile-rs GEMM packs were stopped at their limit (`timeout` sends the runner SIGTERM) after
    their replay had timed configurations: results.json kept none, since the runner read the replay's rows only
    once the replay ended. Now it takes them as they land, so a stopped pack still says what it measured."""
    (tmp_path / "tp_replay.py").write_text(STAND_IN_REPLAY)
    results = tmp_path / "results.json"
    parent = subprocess.Popen([sys.executable, "-c", RUNNER, str(tmp_path), str(results)], cwd=str(REPO),
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert parent.stdout.readline().strip() == "started"
        deadline = time.monotonic() + 30
        while not results.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        parent.send_signal(signal.SIGTERM)  # the pack's limit, while the replay is still busy
        assert parent.wait(timeout=30) == 128 + signal.SIGTERM
        kept = json.loads(results.read_text())
        assert [r["config"] for r in kept["perf"]["rows"]] == ["harness", "first"]
        assert kept["bytecode"] == {"abc": "AAAA"}
    finally:
        parent.kill()
