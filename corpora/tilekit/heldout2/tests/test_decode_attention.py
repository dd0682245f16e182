import pytest
import torch

from fusedkit.ops.decode import DecodeAttention


@pytest.mark.parametrize("B,H,S,D", [(4, 8, 1024, 128), (1, 2, 100, 64)])
def test_decode(B, H, S, D):
    q = torch.randn(B, H, D, dtype=torch.float16, device="cuda")
    k = torch.randn(B, H, S, D, dtype=torch.float16, device="cuda")
    v = torch.randn(B, H, S, D, dtype=torch.float16, device="cuda")
    out = DecodeAttention(H)(q, k, v)
    p = torch.softmax((k.float() @ q.float()[..., None]).squeeze(-1) / D ** 0.5, -1)
    torch.testing.assert_close(out.float(), (p[..., None] * v.float()).sum(-2), rtol=1e-2, atol=1e-2)
