import pytest
import torch
import torch.nn.functional as F

from tilelib.ops.swiglu import swiglu


@pytest.mark.parametrize("rows,cols", [(64, 4096), (3, 300)])
@pytest.mark.parametrize("occupancy", [1, 2])
def test_swiglu(rows, cols, occupancy):
    g = torch.randn(rows, cols, dtype=torch.bfloat16, device="cuda")
    u = torch.randn(rows, cols, dtype=torch.bfloat16, device="cuda")
    torch.testing.assert_close(swiglu(g, u, occupancy), (F.silu(g.float()) * u.float()).to(g.dtype), rtol=2e-2, atol=2e-2)
