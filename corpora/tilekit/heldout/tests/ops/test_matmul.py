import pytest
import torch

from nanoops.ops.matmul import matmul


@pytest.mark.parametrize("M,N,K", [(1024, 1024, 1024), (4096, 2048, 512), (333, 500, 256)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_matmul(M, N, K, dtype):
    a = torch.randn((M, K), dtype=dtype, device="cuda")
    b = torch.randn((K, N), dtype=dtype, device="cuda")
    tol = dict(atol=1e-2, rtol=1e-2) if dtype == torch.float16 else dict(atol=4e-2, rtol=4e-2)
    torch.testing.assert_close(matmul(a, b), a @ b, **tol)


def test_matmul_rejects_mixed():
    with pytest.raises(TypeError):
        matmul(torch.randn(4, 4, device="cuda").half(), torch.randn(4, 4, device="cuda"))
