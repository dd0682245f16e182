import pytest
import torch

from tilekit.config import TileConfig
from tilekit.ops.swiglu import SwiGLU


@pytest.mark.parametrize("tokens,n", [(512, 4096), (33, 1408)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("tile", [64, 128])
def test_swiglu(tokens, n, dtype, tile):
    xy = torch.randn(tokens, 2 * n, dtype=dtype, device="cuda")
    g, u = xy.float().chunk(2, dim=-1)
    ref = (torch.nn.functional.silu(g) * u).to(dtype)
    out = SwiGLU(TileConfig(tile_n=tile))(xy)
    torch.testing.assert_close(out, ref, rtol=1e-2, atol=1e-2)
