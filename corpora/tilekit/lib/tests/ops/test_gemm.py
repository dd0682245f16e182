import pytest
import torch

from tilelib.ops.gemm import gemm


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_gemm(ta, tb, dtype):
    M, N, K = 256, 192, 320
    a = torch.randn(K, M, dtype=dtype, device="cuda") if ta else torch.randn(M, K, dtype=dtype, device="cuda")
    b = torch.randn(N, K, dtype=dtype, device="cuda") if tb else torch.randn(K, N, dtype=dtype, device="cuda")
    ref = (a.T if ta else a).float() @ (b.T if tb else b).float()
    torch.testing.assert_close(gemm(a, b, ta, tb).float(), ref, rtol=2e-2, atol=2e-1)
