"""Dequantise int8 weights with one scale per group of columns: scale index = column // GROUP."""
import torch
import cuda.tile as ct

GROUP = 64


@ct.kernel
def group_dequant_kernel(Q, S, OUT, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int], GROUP_SIZE: ct.Constant[int]):
    i = ct.bid(0)
    j = ct.bid(1)
    q = ct.load(Q, index=(i, j), shape=(TILE_M, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    cols = j * TILE_N + ct.arange(TILE_N, dtype=ct.int32)
    groups = cols // GROUP_SIZE
    rows = i * TILE_M + ct.arange(TILE_M, dtype=ct.int32)
    sidx_r = ct.reshape(rows, (TILE_M, 1))
    sidx_c = ct.reshape(groups, (1, TILE_N))
    s = ct.gather(S, (sidx_r, sidx_c), padding_value=0.0).astype(ct.float32)
    ct.store(OUT, index=(i, j), tile=(q * s).astype(OUT.dtype))


def dequantize(q: torch.Tensor, scales: torch.Tensor, dtype=torch.float16) -> torch.Tensor:
    m, n = q.shape
    out = torch.empty((m, n), device=q.device, dtype=dtype)
    grid = ((m + 31) // 32, (n + 127) // 128, 1)
    ct.launch(torch.cuda.current_stream(), grid, group_dequant_kernel, (q, scales, out, 32, 128, GROUP))
    return out
