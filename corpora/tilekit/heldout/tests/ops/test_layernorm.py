import pytest
import torch

from nanoops.ops.layernorm import FusedLayerNorm

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
ATOL = {torch.float16: 1e-2, torch.bfloat16: 3e-2, torch.float32: 1e-5}
RTOL = {torch.float16: 1e-2, torch.bfloat16: 3e-2, torch.float32: 1e-5}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(8, 512, 768), (1000, 1024)])
def test_layernorm(shape, dtype):
    ln = FusedLayerNorm(shape[-1]).cuda()
    x = torch.randn(*shape, device="cuda").to(dtype)
    ref = torch.nn.functional.layer_norm(x.float(), (shape[-1],), ln.weight, ln.bias, ln.eps).to(dtype)
    torch.testing.assert_close(ln(x), ref, atol=ATOL[dtype], rtol=RTOL[dtype])
