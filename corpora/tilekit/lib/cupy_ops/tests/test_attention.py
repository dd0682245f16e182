import math

import cupy as cp
import pytest

from cutecupy.ops.attention import attention


def ref(q, k, v):
    s = cp.matmul(q.astype(cp.float32), k.astype(cp.float32).transpose(0, 1, 3, 2)) / math.sqrt(q.shape[-1])
    p = cp.exp(s - s.max(-1, keepdims=True))
    return cp.matmul(p / p.sum(-1, keepdims=True), v.astype(cp.float32)).astype(q.dtype)


@pytest.mark.parametrize("B,H,S,D", [(1, 4, 256, 64), (2, 2, 100, 128)])
def test_attention(B, H, S, D):
    q, k, v = (cp.random.randn(B, H, S, D).astype(cp.float16) for _ in range(3))
    cp.testing.assert_allclose(attention(q, k, v), ref(q, k, v), rtol=2e-2, atol=2e-2)
