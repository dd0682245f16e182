import pytest
import torch
import torch.nn.functional as F

from tilelib.ops.cross_entropy import CrossEntropyLoss


@pytest.mark.parametrize("rows,vocab", [(64, 32000), (13, 5000)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_cross_entropy(rows, vocab, dtype):
    logits = torch.randn(rows, vocab, dtype=dtype, device="cuda")
    target = torch.randint(0, vocab, (rows,), device="cuda")
    got = CrossEntropyLoss()(logits, target)
    torch.testing.assert_close(got, F.cross_entropy(logits.float(), target), rtol=1e-4, atol=1e-4)
