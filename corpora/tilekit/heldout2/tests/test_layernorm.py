import pytest
import torch
import torch.nn.functional as F

from fusedkit.ops.layernorm import FusedLayerNorm


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(8, 512, 768), (33, 1024)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_fused_layernorm(shape, dtype, bias):
    x = torch.randn(shape, dtype=dtype, device="cuda")
    ln = FusedLayerNorm(shape[-1], bias=bias).to(device="cuda", dtype=dtype)
    ref = F.layer_norm(x.float(), (shape[-1],), ln.weight.float(), None if ln.bias is None else ln.bias.float())
    assert torch.allclose(ln(x).float(), ref, rtol=1e-2, atol=1e-2)
