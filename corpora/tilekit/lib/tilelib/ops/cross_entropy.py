"""Cross entropy over a vocabulary, one row per block."""
import torch
import cuda.tile as ct

from ..utils import LaunchSpec, next_power_of_2

MAX_FUSED = 65536


@ct.kernel
def ce_fwd_kernel(logits, labels, loss, BLOCK_V: ct.Constant[int]):
    row = ct.bid(0)
    x = ct.load(logits, index=(row, 0), shape=(1, BLOCK_V), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
    m = ct.max(x, axis=1, keepdims=True)
    lse = ct.log(ct.sum(ct.exp(x - m), axis=1, keepdims=True)) + m
    lab = ct.load(labels, index=(row,), shape=(1,))
    cols = ct.arange(BLOCK_V, dtype=ct.int32)
    picked = ct.sum(ct.where(ct.reshape(cols, (1, BLOCK_V)) == ct.reshape(lab, (1, 1)), x, 0.0), axis=1)
    ct.store(loss, index=(row,), tile=ct.reshape(lse, (1,)) - picked)


class CrossEntropyLoss(torch.nn.Module):
    def __init__(self, ignore_index: int = -100):
        super().__init__()
        self.ignore_index = ignore_index

    def forward(self, logits_chunk, target):
        n_rows = logits_chunk.shape[0]
        vocab = logits_chunk.shape[-1]
        if vocab > MAX_FUSED:
            raise ValueError("vocabulary too large for one block")
        loss = torch.empty(n_rows, dtype=torch.float32, device=logits_chunk.device)
        LaunchSpec(ce_fwd_kernel, (n_rows,))(logits_chunk, target.to(torch.int32), loss, next_power_of_2(vocab))
        return loss.mean()
