import pytest
import torch

from tilekit.ops.rope import apply_rope


def cache(max_pos, dim):
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2, device="cuda").float() / dim))
    f = torch.outer(torch.arange(max_pos, device="cuda").float(), inv)
    return torch.cat([f.cos(), f.sin()], dim=-1)


@pytest.mark.parametrize("tokens,heads,head_dim", [(256, 32, 128), (17, 8, 64)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_rope(tokens, heads, head_dim, dtype):
    x = torch.randn(tokens, heads, head_dim, dtype=dtype, device="cuda")
    cs = cache(4096, head_dim)
    pos = torch.randint(0, 4096, (tokens,), device="cuda")
    x1, x2 = x.float().chunk(2, dim=-1)
    c, s = cs[pos].chunk(2, dim=-1)
    ref = torch.cat([x1 * c[:, None] - x2 * s[:, None], x2 * c[:, None] + x1 * s[:, None]], -1).to(dtype)
    torch.testing.assert_close(apply_rope(x.clone(), cs, pos), ref, rtol=1.6e-2, atol=1e-2)
