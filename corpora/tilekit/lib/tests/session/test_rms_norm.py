import pytest
import torch

from tilelib.ops.rms_norm import RMSNorm


def rms_ref(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


@pytest.mark.parametrize("tokens,hidden", [(128, 4096), (9, 1000), (1, 8192)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_rms_norm(tokens, hidden, dtype):
    x = torch.randn(tokens, hidden, dtype=dtype, device="cuda")
    m = RMSNorm(hidden).cuda().to(dtype)
    out = m(x)
    err = (out.float() - rms_ref(x, m.weight, m.eps).float()).abs().max().item()
    assert err < 1e-2, f"max error {err}"
