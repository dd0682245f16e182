import pytest
import torch

from tilelib.ops.moe_gate import moe_gate


@pytest.mark.parametrize("sigmoid", [False, True])
def test_moe_gate(sigmoid):
    h = torch.randn(100, 512, dtype=torch.float16, device="cuda")
    w = torch.randn(512, 64, dtype=torch.float16, device="cuda")
    s = moe_gate(h, w, sigmoid=sigmoid)
    assert s.shape == (100, 64)
