"""y = clamp(x * scale, lo, hi) with run-time bounds; also a variant that fills masked-off tails with `lo`."""
import torch
import cuda.tile as ct

TILE = 512


@ct.kernel
def clamp_scale_kernel(x, y, scale, lo, hi, TILE_SIZE: ct.Constant[int]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    v = ct.minimum(ct.maximum(t * scale, lo), hi)
    floor_tile = ct.full((TILE_SIZE,), lo, dtype=ct.float32)
    v = ct.maximum(v, floor_tile)
    ct.store(y, index=(pid,), tile=v.astype(y.dtype))


def clamp_scale(x: torch.Tensor, scale: float = 2.0, lo: float = -1.0, hi: float = 1.0) -> torch.Tensor:
    flat = x.view(-1)
    y = torch.empty_like(flat)
    ct.launch(torch.cuda.current_stream(), ((flat.numel() + TILE - 1) // TILE,), clamp_scale_kernel,
              (flat, y, scale, lo, hi, TILE))
    return y.view_as(x)
