import pytest
import torch

from conftest import requires_cuda
from nanoops.ops.scaled_residual import scaled_residual
from utils.tensors import make_pair


@requires_cuda
@pytest.mark.parametrize("shape", [(2, 512, 768), (4097,), (128, 128)])
@pytest.mark.parametrize("dtype,tol", [(torch.float16, 1e-2), (torch.bfloat16, 2e-2), (torch.float32, 1e-5)])
def test_scaled_residual(shape, dtype, tol):
    x, r = make_pair(shape, dtype)
    out = scaled_residual(x, r, scale=0.25)
    torch.testing.assert_close(out, (x.float() + 0.25 * r.float()).to(dtype), rtol=tol, atol=tol)


@requires_cuda
@pytest.mark.xfail(reason="integer tensors are not supported", raises=Exception)
def test_scaled_residual_int():
    x = torch.ones(64, dtype=torch.int32, device="cuda")
    scaled_residual(x, x)
