"""Transpose the last two axes of a (batch, m, n) tensor tile by tile, with ct.transpose's explicit axes."""
import torch
import cuda.tile as ct


@ct.kernel
def batched_transpose_kernel(X, Y, TILE: ct.Constant[int]):
    b = ct.bid(0)
    i = ct.bid(1)
    j = ct.bid(2)
    t = ct.load(X, index=(b, i, j), shape=(1, TILE, TILE), padding_mode=ct.PaddingMode.ZERO)
    ct.store(Y, index=(b, j, i), tile=ct.transpose(t, 1, 2))


def transpose_last(x: torch.Tensor, tile: int = 32) -> torch.Tensor:
    B, M, N = x.shape
    y = torch.empty((B, N, M), device=x.device, dtype=x.dtype)
    grid = (B, (M + tile - 1) // tile, (N + tile - 1) // tile)
    ct.launch(torch.cuda.current_stream(), grid, batched_transpose_kernel, (x, y, tile))
    return y
