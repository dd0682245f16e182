"""Sum of all elements in two passes; the element count is passed as a constant the kernel never reads."""
import torch
import cuda.tile as ct

BLOCK = 2048


@ct.kernel
def partial_sums(x, partial, BLOCK: ct.Constant[int], NUMEL: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(BLOCK,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    ct.store(partial, index=(bid,), tile=ct.reshape(ct.sum(t), (1,)))


@ct.kernel
def final_sum(partial, out, NUM_PARTIALS: ct.Constant[int]):
    t = ct.load(partial, index=(0,), shape=(NUM_PARTIALS,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(0,), tile=ct.reshape(ct.sum(t), (1,)))


def _pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


def flat_sum(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    blocks = (n + BLOCK - 1) // BLOCK
    partial = torch.zeros(_pow2(blocks), dtype=torch.float32, device=x.device)
    out = torch.empty(1, dtype=torch.float32, device=x.device)
    stream = torch.cuda.current_stream()
    ct.launch(stream, (blocks,), partial_sums, (x.reshape(-1), partial, BLOCK, n))
    ct.launch(stream, (1,), final_sum, (partial, out, _pow2(blocks)))
    return out[0]
