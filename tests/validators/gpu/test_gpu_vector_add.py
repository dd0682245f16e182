"""On a machine with an NVIDIA GPU: the vector_add port, built by tileport, runs and matches the host sum.

Skips cleanly where there is no GPU (CI, this CPU machine). The same binary was carried to an H200 with the
device tool; that run's command and output are in docs/gpu-runs.md.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tileport.exec.proc import run_command
from tileport.exec.toolchain import resolve
from tileport.validators.rust.build import BuildOptions, build_crate, prepare_crate, shared_target_dir
from tileport.validators.rust.crate import crate_cache_root

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

PORT = Path(__file__).resolve().parents[3] / "ports" / "vector_add"


def _gpu_present() -> bool:
    smi = shutil.which("nvidia-smi")
    return bool(smi) and run_command([smi, "-L"], timeout=30).ok


@pytest.mark.skipif(not _gpu_present(), reason="no NVIDIA GPU here (nvidia-smi absent or failing)")
def test_vector_add_port_runs_on_the_gpu_and_matches_the_host():
    layout = prepare_crate(PORT, out=crate_cache_root() / "test-gpu-vector_add")
    result = build_crate(layout, BuildOptions(cubins=False))
    assert result.ok, [d.short() for d in result.diagnostics]
    binary = shared_target_dir() / "debug" / layout.run_bin
    env = resolve().cargo_env(dict(os.environ))
    run = run_command([binary], env=env, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 mismatches of 1048576" in run.stdout and "0 mismatches of 1000003" in run.stdout
    assert "all checks passed" in run.stdout
