import torch

from fusedkit.ops.quant import quantize_rows


def test_quantize_rows():
    x = torch.randn(128, 1000, device="cuda", dtype=torch.bfloat16)
    q, s = quantize_rows(x)
    torch.testing.assert_close((q.float() * s[:, None]), x.float(), rtol=0, atol=0.05)
