"""On a machine with torch and an NVIDIA GPU: every example computes the right answer.

For each examples/*.py, tileport.validators.correctness runs every declared dtype x shape (x check
variant) through the host wrapper with NaN-poisoned allocations and compares with the module's
plain-torch ``reference``. Skips cleanly (with the reason) where torch, a CUDA device or cuda-tile
is absent (CI, the CPU machine). The H200 run's command and output are in docs/gpu-runs.md.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tileport.validators.correctness import check_example

pytestmark = pytest.mark.gpu

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))


def _why_not() -> str | None:
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed"
    import torch

    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    try:
        import cuda.tile  # noqa: F401
    except ImportError as e:
        return f"cuda-tile is not importable ({e})"
    return None


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_matches_its_torch_reference_on_the_gpu(path):
    reason = _why_not()
    if reason:
        pytest.skip(f"needs torch and a CUDA GPU: {reason}")
    results = check_example(path)
    assert results, f"{path.name}: no cases"
    failed = [r.line() for r in results if not r.ok]
    assert not failed, "\n".join(failed)
