"""scripts/demo_merge_gate.py on this CPU machine: `prepare` converts examples/matmul.py with the real `tileport run`
(a scripted writer writing ports/matmul, the real cargo build and IR self-check) and packs the gate; the gate run
here answers BLOCKED(env), and `finish` with that results.json must show every refusal and keep the merge refused."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO, run_cli
from tests.e2e.test_pipeline import _gpu_gates

SCRIPT = REPO / "scripts" / "demo_merge_gate.py"


def _demo(*args, timeout=1500):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.skipif(_gpu_gates(), reason="a GPU is here: the gate would not answer BLOCKED(env)")
def test_finish_with_a_cpu_gate_run_keeps_the_merge_refused(tmp_path):
    work = tmp_path / "demo"
    r = _demo("prepare", str(work), "--no-wheels")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    repo = work / "repo"
    gate = json.loads((work / "gpu" / "gate" / "gate.json").read_text())
    head = subprocess.run(["git", "rev-parse", "tileport/matmul-1"], cwd=repo, capture_output=True,
                          text=True).stdout.strip()
    assert (gate["conversion_id"], gate["commit"], gate["op"]) == (1, head, "matmul")
    assert "python3 -m tileport gate run $D/gate" in (work / "GPU-COMMAND.txt").read_text()
    main = subprocess.run(["git", "rev-parse", "main"], cwd=repo, capture_output=True, text=True).stdout.strip()

    r = run_cli("gate", "run", str(work / "gpu" / "gate"), "--timeout", "120", cwd=repo)
    assert r.returncode == 3 and "BLOCKED(env)" in r.stdout, r.stdout + r.stderr
    r = _demo("finish", str(work), "--results", str(work / "gpu" / "gate" / "results.json"))
    out = r.stdout
    assert r.returncode == 1, out[-3000:] + r.stderr
    assert "Traceback" not in out + r.stderr
    # each refusal: the real CLI's one line and its exit status
    assert f"tileport: merge #1 refused: gate D unsatisfied (newest D run #3 is BLOCKED); gate E missing (no E run); " \
           f"approval missing (no approval of {head[:10]})" in out
    assert "tileport: approve #1 refused: gate D unsatisfied (newest D run #3 is BLOCKED); gate E missing" in out
    assert "approvals recorded: 0" in out
    assert "tileport: error: overrides are off; enable them with `[approval] allow_override = true`" in out
    assert "the following arguments are required: --reason" in out
    assert "rejected by Ada Reviewer on" in out
    # the CPU results are ingested for that commit as D BLOCKED: approve and merge stay refused, main untouched
    assert f"conversion 1 @ {head[:12]}: recorded stage run(s) 4" in out
    assert "tileport: merge #1 refused: gate D unsatisfied (newest D run #4 is BLOCKED)" in out
    assert out.rstrip().endswith("main untouched: True")
    assert subprocess.run(["git", "rev-parse", "main"], cwd=repo, capture_output=True, text=True).stdout.strip() == main
    assert out.count("[exit 1]") >= 6
