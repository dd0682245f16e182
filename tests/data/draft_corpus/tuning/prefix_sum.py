"""Inclusive prefix sum of each row (one tile per row) and its reverse: ct.cumsum with reverse=."""
import torch
import cuda.tile as ct


@ct.kernel
def row_cumsum_kernel(X, Y, TILE_N: ct.Constant[int], REVERSE: ct.Constant[bool]):
    row = ct.bid(0)
    x = ct.load(X, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    y = ct.cumsum(x, axis=1, reverse=REVERSE)
    ct.store(Y, index=(row, 0), tile=y.astype(Y.dtype))


def cumsum(x: torch.Tensor, reverse: bool = False) -> torch.Tensor:
    m, n = x.shape
    y = torch.empty_like(x)
    tile = 1 << (n - 1).bit_length()
    ct.launch(torch.cuda.current_stream(), (m, 1, 1), row_cumsum_kernel, (x, y, tile, reverse))
    return y


def reverse_cumsum(x: torch.Tensor) -> torch.Tensor:
    return cumsum(x, reverse=True)
