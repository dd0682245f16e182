"""Rotary embedding on (batch, heads, seq, head_dim) q/k: rotate-half, cos/sin tables, rank-4 stores."""
import torch
import cuda.tile as ct


@ct.kernel
def rope_kernel(Q, COS, SIN, OUT, TILE_S: ct.Constant[int], HALF_D: ct.Constant[int]):
    b = ct.bid(0)
    h = ct.bid(1)
    s = ct.bid(2)
    x1 = ct.load(Q, index=(b, h, s, 0), shape=(1, 1, TILE_S, HALF_D)).astype(ct.float32)
    x2 = ct.load(Q, index=(b, h, s, 1), shape=(1, 1, TILE_S, HALF_D)).astype(ct.float32)
    c = ct.load(COS, index=(s, 0), shape=(TILE_S, HALF_D)).astype(ct.float32)[None, None, :, :]
    sn = ct.load(SIN, index=(s, 0), shape=(TILE_S, HALF_D)).astype(ct.float32)[None, None, :, :]
    o = ct.cat((x1 * c - x2 * sn, x2 * c + x1 * sn), axis=-1)
    ct.store(OUT, index=(b, h, s, 0), tile=o.astype(OUT.dtype))


@ct.kernel
def rope_packed_kernel(QK, COS, SIN, OUT, HEADS: ct.Constant[int], TILE_S: ct.Constant[int],
                       HALF_D: ct.Constant[int]):
    bh = ct.bid(0)
    s = ct.bid(1)
    b = bh // HEADS
    h = bh % HEADS
    x1 = ct.load(QK, index=(b, h, s, 0), shape=(1, 1, TILE_S, HALF_D)).reshape((TILE_S, HALF_D))
    x2 = ct.load(QK, index=(b, h, s, 1), shape=(1, 1, TILE_S, HALF_D)).reshape((TILE_S, HALF_D))
    c = ct.load(COS, index=(s, 0), shape=(TILE_S, HALF_D))
    sn = ct.load(SIN, index=(s, 0), shape=(TILE_S, HALF_D))
    o1 = x1 * c - x2 * sn
    o2 = x2 * c + x1 * sn
    ct.store(OUT, index=(b, h, s, 0), tile=o1.reshape((1, 1, TILE_S, HALF_D)))
    ct.store(OUT, index=(b, h, s, 1), tile=o2.reshape((1, 1, TILE_S, HALF_D)))


def apply_rope(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, packed: bool = False) -> torch.Tensor:
    B, H, S, D = q.shape
    out = torch.empty_like(q)
    tile_s = 32
    if packed:
        ct.launch(torch.cuda.current_stream(), (B * H, ct.cdiv(S, tile_s), 1), rope_packed_kernel,
                  (q, cos, sin, out, H, tile_s, D // 2))
    else:
        ct.launch(torch.cuda.current_stream(), (B, H, ct.cdiv(S, tile_s)), rope_kernel,
                  (q, cos, sin, out, tile_s, D // 2))
    return out


if __name__ == "__main__":
    for dt in (torch.float16, torch.bfloat16):
        q = torch.randn(2, 4, 128, 64, device="cuda", dtype=dt)
        cos = torch.randn(128, 32, device="cuda", dtype=dt)
        sin = torch.randn(128, 32, device="cuda", dtype=dt)
        apply_rope(q, cos, sin)
        apply_rope(q, cos, sin, packed=True)
