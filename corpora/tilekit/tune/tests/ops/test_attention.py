import math

import pytest
import torch

from tilekit.ops.attention import flash_attention


@pytest.mark.parametrize("B,H,S,D", [(2, 8, 1024, 64), (1, 16, 512, 128), (4, 4, 300, 64)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_flash_attention(B, H, S, D, dtype):
    q, k, v = (torch.randn(B, H, S, D, dtype=dtype, device="cuda") for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    out = flash_attention(q, k, v)
    atol = 2e-2 if dtype == torch.float16 else 5e-2
    torch.testing.assert_close(out, ref, atol=atol, rtol=atol)
