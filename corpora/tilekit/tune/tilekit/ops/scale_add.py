"""out = alpha * x + y over the last dimension, rows blocked by a tile config."""
import torch
import cuda.tile as ct

from ..config import DEFAULT_CONFIG, TileConfig
from ..utils import cdiv, launch


@ct.kernel
def _scale_add_kernel(x, y, out, alpha, TILE_N: ct.Constant[int]):
    r, c = ct.bid(0), ct.bid(1)
    a = ct.load(x, index=(r, c), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    b = ct.load(y, index=(r, c), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    ct.store(out, index=(r, c), tile=(a * alpha + b).astype(out.dtype))


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float = 1.0, config: TileConfig = DEFAULT_CONFIG) -> torch.Tensor:
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same shape, got {tuple(x.shape)} and {tuple(y.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"unsupported dtype {x.dtype}")
    n = x.size(-1)
    x2, y2 = x.reshape(-1, n), y.reshape(-1, n)
    out = torch.empty_like(x2)
    launch(_scale_add_kernel, (x2.shape[0], cdiv(n, config.tile_n), 1), x2, y2, out, float(alpha), config.tile_n)
    return out.view(x.shape)
