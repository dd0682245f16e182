"""`[gpu] command_prefix` with `[gpu] remote_checkout`: the pack travels without its project/ copy and the runner is
told to run the op's tests in the checkout on the GPU host (a loopback prefix stands for ssh)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from tileport.validators.gpu import hostpack

GPU_DIR = Path(hostpack.__file__).parent


def make_tests_gate(root: Path) -> Path:
    g = root / "local" / "gate-op"
    (g / "project" / "tests").mkdir(parents=True)
    (g / "project" / "tests" / "test_op.py").write_text("def test_x():\n    pass\n")
    shutil.copyfile(GPU_DIR / "hostrun.py", g / "runner.py")
    shutil.copyfile(GPU_DIR / "hosttests.py", g / "tp_hosttests.py")
    (g / "gate.json").write_text(json.dumps({"format": 2, "conversion_id": 1, "commit": "c0ffee", "op": "op",
                                             "tests": {"import_root": ".", "module": None, "op_file": "op.py",
                                                       "sources": [{"kind": "pytest", "path": "tests/test_op.py"}]}}))
    return g


def test_a_remote_checkout_runs_there_and_the_project_copy_stays_here(tmp_path):
    g = make_tests_gate(tmp_path)
    remote = tmp_path / "remote"
    results, cmds = hostpack.run_remote(g, "bash -c", remote_dir=str(remote), timeout=120, python=sys.executable,
                                        checkout="/srv/checkout/lib")
    assert cmds[0].returncode == 0
    assert (remote / "gate-op" / "runner.py").is_file() and not (remote / "gate-op" / "project").exists()
    assert "--project /srv/checkout/lib" in " ".join(cmds[1].argv)
    assert (g / "results.json").is_file() and results.get("env_missing")  # no torch/GPU here: BLOCKED, fetched back


def test_without_a_checkout_the_project_copy_travels(tmp_path):
    g = make_tests_gate(tmp_path)
    remote = tmp_path / "remote"
    _, cmds = hostpack.run_remote(g, "bash -c", remote_dir=str(remote), timeout=120, python=sys.executable)
    assert (remote / "gate-op" / "project" / "tests" / "test_op.py").is_file()
    assert "--project" not in " ".join(cmds[1].argv)


def test_a_bad_project_is_one_line(tmp_path):
    from tests.conftest import run_cli

    g = make_tests_gate(tmp_path)
    r = run_cli("gate", "run", str(g), "--project", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--project" in r.stderr and "no such directory" in r.stderr
