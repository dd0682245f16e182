"""out[i, j] = a[i] * b[j] * alpha, tiled over both axes (an outer product with a run-time scale)."""
import torch
import cuda.tile as ct


@ct.kernel
def outer_kernel(A, B, OUT, alpha, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int]):
    i = ct.bid(0)
    j = ct.bid(1)
    a = ct.load(A, index=(i,), shape=(TILE_M,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    b = ct.load(B, index=(j,), shape=(TILE_N,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    prod = ct.reshape(a, (TILE_M, 1)) * ct.reshape(b, (1, TILE_N))
    ct.store(OUT, index=(i, j), tile=(prod * alpha).astype(OUT.dtype))


def outer(a: torch.Tensor, b: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    out = torch.empty((a.shape[0], b.shape[0]), device=a.device, dtype=a.dtype)
    grid = ((a.shape[0] + 63) // 64, (b.shape[0] + 63) // 64, 1)
    ct.launch(torch.cuda.current_stream(), grid, outer_kernel, (a, b, out, alpha, 64, 64))
    return out
