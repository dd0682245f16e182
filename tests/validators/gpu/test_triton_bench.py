"""The Triton-vs-cuTile timing script travels to a GPU host as a file: it runs without the tileport package."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.analysis.test_analyze_capture import _torch_python

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "tileport" / "validators" / "gpu" / "triton_bench.py"


def test_runs_as_a_file_outside_the_tree_and_says_no_gpu_in_one_line(tmp_path):
    py = _torch_python()
    if py is None:
        pytest.skip("no analysis interpreter with torch (scripts/setup-torch-venv.sh)")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CUDA_VISIBLE_DEVICES")}
    env["CUDA_VISIBLE_DEVICES"] = ""
    r = subprocess.run([py, str(SCRIPT), str(REPO / "examples" / "softmax.py"),
                        str(REPO / "examples" / "triton" / "softmax.py"), "--out", str(tmp_path / "b.json")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, r.stderr[-2000:]
    assert r.stderr.strip().splitlines() == ["no GPU: torch sees no CUDA device"]
    assert not (tmp_path / "b.json").exists()
