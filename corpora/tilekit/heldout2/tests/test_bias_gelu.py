import cupy as cp

from fusedkit.cupy_ops.bias_gelu import bias_gelu


def test_bias_gelu():
    x = cp.random.rand(64, 3072, dtype=cp.float32).astype(cp.bfloat16 if hasattr(cp, "bfloat16") else cp.float16)
    b = cp.zeros(3072, dtype=x.dtype)
    y = bias_gelu(x, b)
    assert y.shape == x.shape
