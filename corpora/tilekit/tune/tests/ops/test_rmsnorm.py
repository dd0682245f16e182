import pytest
import torch

from tilekit.ops.rmsnorm import rmsnorm

TOL = {torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2), torch.float32: (1e-5, 1e-5)}


def ref(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


@pytest.mark.parametrize("shape", [(4, 128, 1024), (2048, 4096), (7, 3, 768)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_rmsnorm(shape, dtype):
    x = torch.randn(shape, dtype=dtype, device="cuda")
    w = torch.randn(shape[-1], dtype=dtype, device="cuda")
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(rmsnorm(x, w, 1e-6), ref(x, w, 1e-6), rtol=rtol, atol=atol)
