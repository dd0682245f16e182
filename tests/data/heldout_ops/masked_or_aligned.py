"""Elementwise GELU: an unmasked kernel when the length divides the block, a masked one otherwise."""
import torch
import cuda.tile as ct

BLOCK = 1024


@ct.kernel
def gelu_aligned(x, y, BLOCK: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(BLOCK,)).astype(ct.float32)
    g = 0.5 * t * (1.0 + ct.tanh(0.7978845608 * (t + 0.044715 * t * t * t)))
    ct.store(y, index=(bid,), tile=g.astype(y.dtype))


@ct.kernel
def gelu_masked(x, y, n, BLOCK: ct.Constant[int]):
    bid = ct.bid(0)
    offs = bid * BLOCK + ct.arange(BLOCK, dtype=ct.int32)
    t = ct.gather(x, offs, padding_value=0.0).astype(ct.float32)
    g = 0.5 * t * (1.0 + ct.tanh(0.7978845608 * (t + 0.044715 * t * t * t)))
    ct.scatter(y, offs, g.astype(y.dtype), mask=offs < n)


def gelu(x: torch.Tensor) -> torch.Tensor:
    flat = x.reshape(-1)
    n = flat.numel()
    y = torch.empty_like(flat)
    kernel = gelu_aligned if n % BLOCK == 0 else gelu_masked
    args = (flat, y, BLOCK) if kernel is gelu_aligned else (flat, y, n, BLOCK)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(n, BLOCK),), kernel, args)
    return y.view_as(x)
