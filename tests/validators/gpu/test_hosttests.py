"""The GPU runner's test half, the parts a CPU machine can check: each test's verdict from the reference's and the
port's runs, and the child-process driver (a hang past the per-test limit or a crash fails that test only, the
rest run in a fresh child) on a real pytest run of a small project in the analysis interpreter (torch +
cuda.tile + pytest). The GPU runs are in test_hosttests_device.py."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.analysis.test_analyze_capture import _torch_python
from tileport.validators.gpu import testchild, hosttests
from tileport.validators.gpu.hosttests import SideRun, judge

GPU_DIR = Path(hosttests.__file__).parent


def r(outcome="passed", attempts=1, launches=1, **kw):
    return {"outcome": outcome, "message": kw.pop("message", ""), "seconds": 0.1, "launches": launches,
            "port_attempts": attempts, "port_launches": attempts if outcome == "passed" else 0, **kw}


def test_a_test_the_reference_does_not_pass_is_not_evaluated_whatever_the_port_did():
    for ref in (r("failed", message="assert 1 == 2"), r("skipped", message="needs sm_100"), r("error"), None):
        line = judge("t::x", ref, r("passed"))
        assert line["status"] == "NOT_EVALUATED" and line["message"].startswith("not evaluated (reference: ")
    assert "needs sm_100" in judge("t::x", r("skipped", message="needs sm_100"), r("failed"))["message"]


def test_a_test_the_port_never_served_is_not_evaluated_never_a_pass():
    line = judge("t::x", r(), r("passed", attempts=0))
    assert (line["status"], line["message"]) == ("NOT_EVALUATED", "not evaluated (no port launch)")


def test_the_port_passes_or_fails_with_its_class_and_the_reference_verdict_beside_it():
    ok = judge("t::x", r(), r("passed", attempts=3))
    assert (ok["status"], ok["port_launches"], ok["reference"]) == ("PASS", 3, "passed")
    bad = judge("t::x", r(), r("failed", message="mismatch", fail_class="host"))
    assert (bad["status"], bad["fail_class"]) == ("FAIL", "host") and "mismatch" in bad["message"]
    hang = judge("t::x", r(), {"outcome": "failed", "message": "timed out", "crashed": True, "port_attempts": None,
                                 "fail_class": "kernel"})
    assert (hang["status"], hang["fail_class"]) == ("FAIL", "kernel")


PROJECT_TEST = '''
import os, time
import pytest
import torch

def test_passes():
    assert torch.empty(4).isnan().all()  # allocations are NaN-poisoned while a test runs

def test_fails():
    print("mismatch at (3, 1): got 2.0, want 1.0")  # a test's own diagnostics
    assert 1 == 2, "wrong"

def test_hangs():
    time.sleep(120)

def test_crashes():
    os._exit(3)

@pytest.mark.skip(reason="not here")
def test_skipped():
    pass

def test_after():
    pass
'''

MAIN_OP = '''
import torch
def f(x):
    return x + 1
def same(a, b):  # a shared helper, as real scripts have
    return torch.allclose(a, b)
def case_ones():
    x = torch.ones(4)
    return same(f(x), x + 2)
if __name__ == "__main__":
    print("PASS" if case_ones() else "FAIL")  # a check that only prints
'''


def gate(tmp_path: Path, sources: list[dict], op_file: str) -> Path:
    g = tmp_path / "gate"
    (g / "project").mkdir(parents=True)
    for mod, name in (("testchild", "tp_testchild.py"), ("hostrun", "runner.py")):
        shutil.copyfile(GPU_DIR / f"{mod}.py", g / name)
    shutil.copyfile(GPU_DIR.parent / "correctness.py", g / "tp_correctness.py")
    shutil.copyfile(GPU_DIR.parents[1] / "analysis" / "mainblock.py", g / "tp_mainblock.py")
    (g / "gate.json").write_text(json.dumps({"kernels": ["k"], "perf_configs": [], "tests": {
        "import_root": ".", "module": None, "op_file": op_file, "sources": sources}}))
    return g


@pytest.mark.slow
def test_a_hang_or_a_crash_fails_that_test_and_the_rest_still_run(tmp_path):
    py = _torch_python()
    if py is None:
        pytest.skip("no analysis interpreter with torch (scripts/setup-torch-venv.sh)")
    g = gate(tmp_path, [{"kind": "pytest", "path": "tests/test_op.py"}], "op.py")
    (g / "project" / "op.py").write_text("X = 1\n")
    (g / "project" / "tests").mkdir()
    (g / "project" / "tests" / "test_op.py").write_text(PROJECT_TEST)
    work = tmp_path / "work"
    work.mkdir()
    run = SideRun(g, g / "project", "ref", work, 8.0, None, None, lambda line: None, python=py)
    run.run(["--pytest", "tests/test_op.py"], "tests")
    got = {k.split("::")[1]: v for k, v in run.results.items()}
    assert got["test_passes"]["outcome"] == "passed"
    assert got["test_fails"]["outcome"] == "failed" and "wrong" in got["test_fails"]["message"]
    assert "mismatch at (3, 1): got 2.0, want 1.0" in got["test_fails"]["output"]  # kept with the failed test
    assert not got["test_passes"].get("output")
    assert got["test_hangs"].get("crashed") and "timed out after 8 s" in got["test_hangs"]["message"]
    assert got["test_crashes"].get("crashed") and "died (status 3)" in got["test_crashes"]["message"]
    assert got["test_skipped"]["outcome"] == "skipped" and got["test_skipped"]["message"] == "not here"
    assert got["test_after"]["outcome"] == "passed"  # ran in a fresh child after the crash
    assert len(run.order) == 6


@pytest.mark.slow
def test_a_main_block_whose_comparison_comes_out_false_fails_even_when_it_only_prints(tmp_path):
    py = _torch_python()
    if py is None:
        pytest.skip("no analysis interpreter with torch (scripts/setup-torch-venv.sh)")
    g = gate(tmp_path, [{"kind": "main", "path": "op.py"}], "op.py")
    (g / "project" / "op.py").write_text(MAIN_OP)
    work = tmp_path / "work"
    work.mkdir()
    run = SideRun(g, g / "project", "ref", work, 60.0, None, None, lambda line: None, python=py)
    run.run(["--main"], "main")
    (line,) = run.results.values()
    assert line["outcome"] == "failed" and line["message"].startswith("torch.allclose returned False at op.py:")
    # which case failed and by how much, though the comparison sits in a helper every case calls
    assert re.search(r"op\.py:\d+ in same < op\.py:\d+ in case_ones", line["message"]), line["message"]
    assert "max abs diff 1 over 4 elements, torch.float32" in line["message"]
    assert line["output"] == "FAIL"  # what the script printed: its own verdict, kept with the failure
    judged = judge("main:op.py", {"outcome": "passed"}, {**line, "port_attempts": 1})
    assert judged["status"] == "FAIL" and judged["output"] == "FAIL"


def test_the_child_writes_arguments_as_stage_a_captured_them():
    assert testchild.grid_text((4, 1, 1)) == "(4, 1, 1)" and testchild.grid_text([2, 3]) == "(2, 3)"
    assert testchild.sticky("CUDA error: an illegal memory access was encountered")
    assert not testchild.sticky("AssertionError: mismatch")
