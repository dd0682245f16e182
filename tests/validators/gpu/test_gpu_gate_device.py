"""On a machine with an NVIDIA GPU, torch and tileiras: a port judged against its cuTile Python reference through
`tileport gate pack` + `gate run` (correctness and device time). Skips cleanly elsewhere (CI, the CPU machine);
the H200 run of every port is in docs/gpu-runs.md.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli


def _ready() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU visible to torch"
    if not shutil.which("tileiras"):
        return "tileiras is not on PATH"
    return None


pytestmark = [pytest.mark.gpu, pytest.mark.slow, pytest.mark.skipif(_ready() is not None, reason=str(_ready()))]


def test_silu_and_mul_port_matches_its_reference_and_is_timed_on_the_device(tmp_path):
    """TILEPORT_TEST_GATE names a gate dir packed elsewhere (a GPU host without cargo); else it is packed here."""
    gate = tmp_path / "gate"
    packed = os.environ.get("TILEPORT_TEST_GATE")
    if packed:
        shutil.copytree(Path(packed), gate)
        (gate / "results.json").unlink(missing_ok=True)
    else:
        r = run_cli("gate", "pack", "ports/silu_and_mul", "--op", "examples/silu_and_mul.py", "--out", str(gate),
                    timeout=1500)
        assert r.returncode == 0, r.stderr
    assert json.loads((gate / "gate.json").read_text())["op"] == "silu_and_mul"
    r = run_cli("gate", "run", str(gate), "--timeout", "900", timeout=1000)
    results = json.loads((gate / "results.json").read_text())
    assert r.returncode == 0, r.stdout + r.stderr
    assert results["cases"] and all(c["status"] == "PASS" for c in results["cases"])
    assert results["perf"]["hw"]["flush"]["verified"]
    rows = results["perf"]["rows"]
    assert rows and all(not r.get("failed") and len(r["port_samples"]) >= 20 for r in rows)
