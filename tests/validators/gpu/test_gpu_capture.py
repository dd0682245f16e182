"""Launch capture on a GPU machine: the op's wrapper runs with real CUDA tensors, every launch is recorded AND
really made, so the outputs the wrapper computes are right. Skips cleanly without torch or a GPU (CI has none).

Run on a GPU machine (docs/gpu-runs.md has the command): python3 -m pytest -q tests/validators/gpu/test_gpu_capture.py
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)
pytest.importorskip("cuda.tile")

from tileport.analysis.capture import capture  # noqa: E402

HELDOUT = Path(__file__).resolve().parents[2] / "data" / "heldout_ops"


def _module(name: str):
    if str(HELDOUT) not in sys.path:
        sys.path.insert(0, str(HELDOUT))
    return importlib.import_module(name)


def _launches(name: str, dtypes=("float16", "float32"), ranks=None):
    # ranks: what tileport's child passes from static analysis (the array ranks each kernel body implies)
    r = capture(_module(name), list(dtypes), ranks=ranks)
    assert r["mode"] == "gpu"
    assert r["launches"], r["errors"]
    return r["launches"]


def test_package_op_runs_for_real_and_its_output_is_layer_norm():
    for ln in _launches("normpkg.layernorm"):
        x, w, b, y, eps, tile_n = ln.args
        assert x.is_cuda and tile_n == 1 << (x.shape[1] - 1).bit_length()
        ref = torch.nn.functional.layer_norm(x.float(), (x.shape[1],), w.float(), b.float(), eps)
        tol = 2e-2 if x.dtype == torch.float16 else 1e-4
        torch.testing.assert_close(y.float(), ref, atol=tol, rtol=tol)


def test_hint_replaced_kernel_runs_for_real():
    for ln in _launches("tuned_add", ranks={"add_kernel": {"a": 1, "b": 1, "c": 1}}):
        assert ln.args[0].dim() == 1
        a, b, c, _ = ln.args
        torch.testing.assert_close(c, a + b)


def test_autotune_search_is_recorded_and_the_chosen_config_really_launches():
    launches = _launches("autotuned_matmul", ("float16",))
    searched = [ln for ln in launches if ln.via == "exhaustive_search"]
    made = [ln for ln in launches if ln.via == "ct.launch"]
    assert len(searched) == 3 * len(made) and made
    for ln in made:
        a, b, c = ln.args[:3]
        torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2, rtol=2e-2)


def test_kernel_chosen_by_expression_both_paths_compute_gelu():
    launches = _launches("masked_or_aligned", ("float32",))
    names = {ln.kernel._annotated_function.pyfunc.__name__ for ln in launches}
    assert names == {"gelu_aligned", "gelu_masked"}
    for ln in launches:
        x, y = ln.args[0], ln.args[1]
        torch.testing.assert_close(y, torch.nn.functional.gelu(x, approximate="tanh"), atol=1e-4, rtol=1e-4)
