import pytest
import torch

from tilelib import Softmax


@pytest.mark.parametrize("shape", [(4, 128, 1000), (2048, 4096), (7, 333)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_softmax_forward(shape, dtype):
    x = torch.randn(*shape, dtype=dtype, device="cuda")
    m = Softmax().cuda()
    torch.testing.assert_close(m(x), torch.softmax(x.float(), -1).to(dtype), rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("dtype", [torch.float32])
def test_softmax_backward(dtype):
    x = torch.randn(64, 512, dtype=dtype, device="cuda", requires_grad=True)
    y = Softmax()(x)
    y.backward(torch.ones_like(y))
    assert x.grad is not None
