"""Matmul with grouped (swizzled) block order, TMA/latency hints on the operand loads and an fp32 accumulator."""
import torch
import cuda.tile as ct

GROUP_M = 8


@ct.kernel(occupancy=1)
def matmul_swizzle_kernel(A, B, C, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int], TILE_K: ct.Constant[int]):
    pid = ct.bid(0)
    num_m = ct.cdiv(A.shape[0], TILE_M)
    num_n = ct.cdiv(B.shape[1], TILE_N)
    per_group = GROUP_M * num_n
    group = pid // per_group
    first_m = group * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    bm = first_m + (pid % per_group) % size_m
    bn = (pid % per_group) // size_m
    acc = ct.full((TILE_M, TILE_N), 0.0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TILE_M, TILE_K))):
        a = ct.load(A, index=(bm, k), shape=(TILE_M, TILE_K), padding_mode=ct.PaddingMode.ZERO, latency=2,
                    allow_tma=True)
        b = ct.load(B, index=(k, bn), shape=(TILE_K, TILE_N), padding_mode=ct.PaddingMode.ZERO, latency=2,
                    allow_tma=True)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    _, n = b.shape
    c = torch.empty((m, n), device=a.device, dtype=a.dtype)
    tm, tn, tk = 64, 64, 32
    grid = (ct.cdiv(m, tm) * ct.cdiv(n, tn), 1, 1)
    ct.launch(torch.cuda.current_stream(), grid, matmul_swizzle_kernel, (a, b, c, tm, tn, tk))
    return c
