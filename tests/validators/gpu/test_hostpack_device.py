"""On a machine with an NVIDIA GPU, torch and tileiras: a port judged against its cuTile Python reference through
`tileport gate pack` + `gate run` (correctness and device time). Skips cleanly elsewhere (CI, the CPU machine);
the H200 run of every port is in docs/gpu-runs.md.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import device_missing, packed_gate, run_cli

pytestmark = [pytest.mark.gpu, pytest.mark.slow,
              pytest.mark.skipif(device_missing() is not None, reason=str(device_missing()))]


def test_silu_and_mul_port_matches_its_reference_and_is_timed_on_the_device(tmp_path):
    """TILEPORT_TEST_GATE names a gate dir packed elsewhere (a GPU host without cargo); else it is packed here."""
    gate = packed_gate("TILEPORT_TEST_GATE", tmp_path / "gate")
    if gate is None:
        gate = tmp_path / "gate"
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
