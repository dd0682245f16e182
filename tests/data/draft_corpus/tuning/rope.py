"""Rotary position embedding on a (batch, heads, seq, head_dim) tensor: the two halves of the head dim rotate."""
import torch
import cuda.tile as ct


@ct.kernel
def rope_kernel(Q, COS, SIN, OUT, TILE_S: ct.Constant[int], HALF_D: ct.Constant[int]):
    b = ct.bid(0)
    h = ct.bid(1)
    s = ct.bid(2)
    x1 = ct.load(Q, index=(b, h, s, 0), shape=(1, 1, TILE_S, HALF_D), allow_tma=True).astype(ct.float32)
    x2 = ct.load(Q, index=(b, h, s, 1), shape=(1, 1, TILE_S, HALF_D), allow_tma=True).astype(ct.float32)
    c = ct.load(COS, index=(s, 0), shape=(TILE_S, HALF_D)).astype(ct.float32)
    sn = ct.load(SIN, index=(s, 0), shape=(TILE_S, HALF_D)).astype(ct.float32)
    c4 = ct.reshape(c, (1, 1, TILE_S, HALF_D))
    s4 = ct.reshape(sn, (1, 1, TILE_S, HALF_D))
    o1 = x1 * c4 - x2 * s4
    o2 = x2 * c4 + x1 * s4
    ct.store(OUT, index=(b, h, s, 0), tile=o1.astype(OUT.dtype))
    ct.store(OUT, index=(b, h, s, 1), tile=o2.astype(OUT.dtype))


def apply_rope(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, tile_s: int = 32) -> torch.Tensor:
    B, H, S, D = q.shape
    out = torch.empty_like(q)
    grid = (B, H, (S + tile_s - 1) // tile_s)
    ct.launch(torch.cuda.current_stream(), grid, rope_kernel, (q, cos, sin, out, tile_s, D // 2))
    return out


def tileport_inputs(op, device):
    """Inputs for stage A's launch capture (q is 4-D, the tables 2-D: no conventional guess fits)."""
    for dtype in (torch.float16, torch.bfloat16):
        for seq in (128, 100):
            q = torch.empty((2, 4, seq, 64), device=device, dtype=dtype)
            tab = torch.empty((seq, 32), device=device, dtype=dtype)
            yield apply_rope, (q, tab, tab), {}
