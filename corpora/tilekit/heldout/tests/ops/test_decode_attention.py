import pytest
import torch

from nanoops.ops.decode_attention import decode_attention


@pytest.mark.parametrize("batch,heads,seq,dim", [(4, 32, 2048, 128), (1, 8, 100, 64)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_decode(batch, heads, seq, dim, dtype):
    q = torch.randn(batch, heads, dim, dtype=dtype, device="cuda")
    k = torch.randn(batch, heads, seq, dim, dtype=dtype, device="cuda")
    v = torch.randn(batch, heads, seq, dim, dtype=dtype, device="cuda")
    s = torch.einsum("bhd,bhsd->bhs", q.float(), k.float()) / dim ** 0.5
    ref = torch.einsum("bhs,bhsd->bhd", s.softmax(-1), v.float()).to(dtype)
    torch.testing.assert_close(decode_attention(q, k, v), ref, rtol=2e-2, atol=2e-2)
