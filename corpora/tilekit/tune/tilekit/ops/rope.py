"""Rotary embedding applied in place to (tokens, heads, head_dim) queries."""
import torch
import cuda.tile as ct

from ..utils import launch, num_sms


@ct.kernel
def _rope_kernel(x, cos_sin, positions, HALF: ct.Constant[int]):
    tok, head = ct.bid(0), ct.bid(1)
    pos = ct.load(positions, index=(tok,), shape=(1,))
    x1 = ct.load(x, index=(tok, head, 0), shape=(1, 1, HALF)).astype(ct.float32)
    x2 = ct.load(x, index=(tok, head, 1), shape=(1, 1, HALF)).astype(ct.float32)
    rows = ct.zeros((HALF,), dtype=ct.int32) + pos
    cols = ct.arange(HALF, dtype=ct.int32)
    c = ct.reshape(ct.gather(cos_sin, (rows, cols)), (1, 1, HALF))
    s = ct.reshape(ct.gather(cos_sin, (rows, cols + HALF)), (1, 1, HALF))
    ct.store(x, index=(tok, head, 0), tile=(x1 * c - x2 * s).astype(x.dtype))
    ct.store(x, index=(tok, head, 1), tile=(x2 * c + x1 * s).astype(x.dtype))


def apply_rope(x: torch.Tensor, cos_sin_cache: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    assert cos_sin_cache.dtype == torch.float32, "cos_sin_cache should be float32"
    assert positions.dtype in (torch.int32, torch.int64)
    tokens, heads, head_dim = x.shape
    assert cos_sin_cache.shape[1] == head_dim, "cache width must equal head_dim"
    assert positions.numel() == tokens
    if num_sms() < 1:
        raise RuntimeError("no SMs")
    launch(_rope_kernel, (tokens, heads, 1), x, cos_sin_cache, positions.to(torch.int32), head_dim // 2)
    return x
