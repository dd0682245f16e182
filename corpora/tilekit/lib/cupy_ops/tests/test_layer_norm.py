import cupy as cp
import pytest

from cutecupy.ops.layer_norm import LayerNorm


@pytest.mark.parametrize("rows,cols", [(32, 1024), (5, 777)])
def test_layer_norm(rows, cols):
    x = cp.random.standard_normal((rows, cols), dtype=cp.float32).astype(cp.float16)
    ln = LayerNorm(cols)
    y = ln(x)
    xf = x.astype(cp.float32)
    r = (xf - xf.mean(-1, keepdims=True)) / cp.sqrt(xf.var(-1, keepdims=True) + 1e-5)
    cp.testing.assert_allclose(y.astype(cp.float32), r, rtol=1e-2, atol=1e-2)
