"""The replay check's first question, "which arguments did the reference change?", on the dtypes real ops pass.

Found on an H100 (docs/gpu-runs.md, 2026-12-05 third session): every timed launch of cutile-puzzles
11-quantized-matmul failed with `"nan_to_num_cuda" not implemented for 'Float8_e4m3fn'`, because the check compared
arguments through nan_to_num. Runs replay.py in the torch interpreter of scripts/setup-torch-venv.sh (CPU torch)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

TORCH_PY = Path(os.environ.get("TILEPORT_TORCH_VENV", Path.home() / ".cache/tileport/torch-venv")) / "bin" / "python"

SCRIPT = r'''
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("replay", sys.argv[1])
replay = importlib.util.module_from_spec(spec); spec.loader.exec_module(replay)
fp8 = torch.randn(64).to(torch.float8_e4m3fn)
written = fp8.clone(); written[3] = torch.tensor(3.0).to(torch.float8_e4m3fn)
nan = torch.tensor([float("nan"), 1.0])
print(replay._unchanged(fp8, fp8.clone()), replay._unchanged(fp8, written),
      replay._unchanged(nan, nan.clone()), replay._unchanged(nan, torch.tensor([float("nan"), 2.0])),
      replay._unchanged(torch.arange(4), torch.arange(4)), replay._unchanged(torch.arange(4), torch.arange(4) + 1))
'''


def test_an_fp8_argument_is_compared_not_refused_and_nan_still_equals_nan(tmp_path):
    if not TORCH_PY.is_file():
        if os.environ.get("TILEPORT_REQUIRE_TORCH"):
            pytest.fail(f"no interpreter with torch at {TORCH_PY}")
        pytest.skip(f"no interpreter with torch at {TORCH_PY} (scripts/setup-torch-venv.sh)")
    script = tmp_path / "probe.py"
    script.write_text(SCRIPT)
    r = subprocess.run([str(TORCH_PY), str(script), str(REPO / "tileport" / "validators" / "gpu" / "replay.py")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["True", "False", "True", "False", "True", "False"]
