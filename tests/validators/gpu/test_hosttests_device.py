"""On a machine with an NVIDIA GPU, torch, pytest and tileiras: the tilekit scale_add port judged by the op's own
pytest file (`tileport run` packs it; `gate run` runs the tests on the reference, then with the port serving every
launch of the kernel under conversion) and timed on the launches those tests made. Skips cleanly elsewhere; the H200
figures are in docs/gpu-runs.md. TILEPORT_TEST_TESTS_GATE names a gate dir packed elsewhere (a GPU host has no
cargo); else it is packed here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import device_missing, packed_gate, run_cli

pytestmark = [pytest.mark.gpu, pytest.mark.slow,
              pytest.mark.skipif(device_missing() is not None, reason=str(device_missing()))]


def _gate(tmp_path: Path) -> Path:
    gate = packed_gate("TILEPORT_TEST_TESTS_GATE", tmp_path / "gate")
    if gate is None:
        pytest.skip("set TILEPORT_TEST_TESTS_GATE to a pack of corpora/tilekit scale_add (tileport run on a CPU "
                    "machine packs it: tests/e2e/test_pack_from_tests.py)")
    return gate


def test_the_ops_own_tests_judge_the_port_and_its_launches_are_timed(tmp_path):
    gate = _gate(tmp_path)
    r = run_cli("gate", "run", str(gate), "--timeout", "1200", timeout=1300)
    results = json.loads((gate / "results.json").read_text())
    assert results.get("env_missing") is None, results.get("env_missing")
    lines = {t["id"].split("::")[1]: t for t in results["tests"]}
    # the reference ran every test; the skipped one and the one that launches nothing are never counted
    assert lines["test_scale_add_float64"]["status"] == "NOT_EVALUATED"
    assert lines["test_scale_add_float64"]["message"].startswith("not evaluated (reference: skipped")
    assert lines["test_scale_add_rejects_mismatched_shapes"]["message"] == "not evaluated (no port launch)"
    evaluated = [t for t in results["tests"] if t["status"] != "NOT_EVALUATED"]
    assert len(evaluated) == 11 and all(t["reference"] == "passed" and t["port_launches"] >= 1 for t in evaluated)
    assert r.returncode in (0, 1) and (r.returncode == 0) == all(t["status"] == "PASS" for t in evaluated)
    if r.returncode == 0:  # E after D passed: the launches the tests made, replayed on both sides
        rows = results["perf"]["rows"]
        assert rows and all(row["source"] == "capture" for row in rows)
        measured = [row for row in rows if not row.get("failed")]
        assert measured and all(row["host_us"]["ref"]["call_us"] > 0 and row["host_us"]["port"]["call_us"] > 0
                                for row in measured)
        assert all(row["inputs"].startswith("recorded from tests/ops/test_scale_add.py") for row in measured)
