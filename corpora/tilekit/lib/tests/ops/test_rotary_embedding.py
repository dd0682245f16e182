"""Named after the model component, not the module (discovery by name misses it)."""
import pytest
import torch

from tilelib.ops.rotary import apply_rotary


def rope_ref(q, cos, sin):
    half = q.shape[-1] // 2
    x1, x2 = q[..., :half].float(), q[..., half:].float()
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1).to(q.dtype)


@pytest.mark.parametrize("batch,seq,heads,head_dim", [(2, 128, 8, 64), (1, 77, 4, 128)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rotary(batch, seq, heads, head_dim, dtype):
    q = torch.randn(batch, seq, heads, head_dim, dtype=dtype, device="cuda")
    t = torch.arange(seq, device="cuda", dtype=torch.float32)[:, None] * torch.ones(head_dim // 2, device="cuda")
    torch.testing.assert_close(apply_rotary(q, t.cos(), t.sin()), rope_ref(q, t.cos(), t.sin()), rtol=1e-2, atol=1e-2)
