"""Rotary position embedding (neox style) on (batch, seq, heads, head_dim)."""
import torch
import cuda.tile as ct

from ..utils import cdiv


@ct.kernel
def rotary_kernel(q, cos, sin, out, HALF: ct.Constant[int], BLOCK_S: ct.Constant[int]):
    b, s, h = ct.bid(0), ct.bid(1), ct.bid(2)
    x1 = ct.load(q, index=(b, s, h, 0), shape=(1, BLOCK_S, 1, HALF), padding_mode=ct.PaddingMode.ZERO)
    x2 = ct.load(q, index=(b, s, h, 1), shape=(1, BLOCK_S, 1, HALF), padding_mode=ct.PaddingMode.ZERO)
    c = ct.reshape(ct.load(cos, index=(s, 0), shape=(BLOCK_S, HALF), padding_mode=ct.PaddingMode.ZERO),
                   (1, BLOCK_S, 1, HALF))
    sn = ct.reshape(ct.load(sin, index=(s, 0), shape=(BLOCK_S, HALF), padding_mode=ct.PaddingMode.ZERO),
                    (1, BLOCK_S, 1, HALF))
    a = x1.astype(ct.float32)
    bb = x2.astype(ct.float32)
    ct.store(out, index=(b, s, h, 0), tile=(a * c - bb * sn).astype(out.dtype))
    ct.store(out, index=(b, s, h, 1), tile=(bb * c + a * sn).astype(out.dtype))


def apply_rotary(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, block_s: int = 16) -> torch.Tensor:
    batch, seq, heads, head_dim = q.shape
    head_dim_half = head_dim / 2
    out = torch.empty_like(q)
    ct.launch(torch.cuda.current_stream(), (batch, cdiv(seq, block_s), heads), rotary_kernel,
              (q, cos, sin, out, int(head_dim_half), block_s))
    return out
