"""SwiGLU on a packed (..., 2 * N) gate/up tensor."""
import torch
import cuda.tile as ct

from ..config import DEFAULT_CONFIG, TileConfig
from ..utils import cdiv, launch


@ct.kernel
def _swiglu_kernel(xy, out, N: ct.Constant[int], TILE: ct.Constant[int]):
    r, c = ct.bid(0), ct.bid(1)
    g = ct.load(xy, index=(r, c), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    u = ct.load(xy, index=(r, c + N // TILE), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    ct.store(out, index=(r, c), tile=(g / (1.0 + ct.exp(-g)) * u).astype(out.dtype))


class SwiGLU:
    def __init__(self, config: TileConfig = DEFAULT_CONFIG):
        self.config = config

    def __call__(self, xy: torch.Tensor) -> torch.Tensor:
        n = xy.shape[-1] // 2
        rows = xy.numel() // xy.shape[-1]
        out = torch.empty(xy.shape[:-1] + (n,), dtype=xy.dtype, device=xy.device)
        tile = self.config.tile_n
        launch(_swiglu_kernel, (rows, cdiv(n, tile), 1), xy.view(rows, 2 * n), out.view(rows, n), n, tile)
        return out


def swiglu(xy: torch.Tensor) -> torch.Tensor:
    return SwiGLU()(xy)
