"""Row-wise L2 normalisation with an epsilon floor: y = x / max(||x||, eps), the norm from a tiled loop."""
import torch
import cuda.tile as ct

from .._common import EPS_DEFAULT


@ct.kernel
def l2norm_kernel(X, Y, eps, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    acc = ct.zeros((1, TILE_N), dtype=ct.float32)
    for j in range(ct.num_tiles(X, axis=1, shape=(1, TILE_N))):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
        acc = acc + x * x
    norm = ct.sqrt(ct.sum(acc, axis=1, keepdims=True))
    inv = 1.0 / ct.maximum(norm, eps)
    for j in range(ct.num_tiles(X, axis=1, shape=(1, TILE_N))):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
        ct.store(Y, index=(row, j), tile=(x * inv).astype(Y.dtype))


def l2_normalize(x: torch.Tensor, eps: float = EPS_DEFAULT) -> torch.Tensor:
    m, n = x.shape
    y = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (m, 1, 1), l2norm_kernel, (x, y, eps, 128))
    return y
