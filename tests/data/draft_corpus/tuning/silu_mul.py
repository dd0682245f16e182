"""SwiGLU activation `silu(gate) * up` with a plain device helper and a config object choosing the tile."""
import torch
import cuda.tile as ct

from .._common import TileConfig
from .._device import sigmoid

CONFIGS = {
    "narrow": TileConfig(tile_m=4, tile_n=128),
    "wide": TileConfig(tile_m=1, tile_n=512, occupancy=2),
}


def _silu(x):
    return x * sigmoid(x)


@ct.kernel
def silu_mul_kernel(gate, up, out, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int]):
    i = ct.bid(0)
    j = ct.bid(1)
    g = ct.load(gate, index=(i, j), shape=(TILE_M, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    u = ct.load(up, index=(i, j), shape=(TILE_M, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    ct.store(out, index=(i, j), tile=(_silu(g) * u).astype(out.dtype))


def silu_and_mul(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    m, n = gate.shape
    cfg = CONFIGS["narrow" if n <= 128 else "wide"]
    out = torch.empty_like(gate)
    grid = ((m + cfg.tile_m - 1) // cfg.tile_m, (n + cfg.tile_n - 1) // cfg.tile_n, 1)
    ct.launch(torch.cuda.current_stream(), grid, silu_mul_kernel, (gate, up, out, cfg.tile_m, cfg.tile_n))
    return out
