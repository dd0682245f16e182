"""GEMM: a grouped-order kernel and a persistent kernel, tf32 for fp32 inputs, per-target hints."""
import torch
import cuda.tile as ct

from ._utils import PAD_ZERO, swizzle_2d, tile_coords

ConstInt = ct.Constant[int]


@ct.kernel(num_ctas=ct.ByTarget(sm_100=2, default=1), occupancy=ct.ByTarget(sm_100=2, sm_90=1))
def matmul_kernel(A, B, C, TILE_M: ConstInt, TILE_N: ConstInt, TILE_K: ConstInt, GROUP_SIZE_M: ConstInt):
    M = A.shape[0]
    N = B.shape[1]
    bidx, bidy = swizzle_2d(M, N, TILE_M, TILE_N, GROUP_SIZE_M)
    num_k = ct.num_tiles(A, axis=1, shape=(TILE_M, TILE_K))
    acc = ct.full((TILE_M, TILE_N), 0, dtype=ct.float32)
    dtype = ct.tfloat32 if A.dtype == ct.float32 else A.dtype
    for k in range(num_k):
        a = ct.load(A, index=(bidx, k), shape=(TILE_M, TILE_K), padding_mode=PAD_ZERO, latency=4).astype(dtype)
        b = ct.load(B, index=(k, bidy), shape=(TILE_K, TILE_N), padding_mode=PAD_ZERO, latency=4).astype(dtype)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bidx, bidy), tile=ct.astype(acc, C.dtype), latency=2)


@ct.kernel(occupancy=1)
def persistent_matmul_kernel(A, B, C, TILE_M: ConstInt, TILE_N: ConstInt, TILE_K: ConstInt,
                             GROUP_SIZE_M: ConstInt):
    M = A.shape[0]
    N = B.shape[1]
    num_bid_m = ct.cdiv(M, TILE_M)
    num_bid_n = ct.cdiv(N, TILE_N)
    num_k = ct.num_tiles(A, axis=1, shape=(TILE_M, TILE_K))
    dtype = ct.tfloat32 if A.dtype == ct.float32 else A.dtype
    for tile_id in range(ct.bid(0), num_bid_m * num_bid_n, ct.num_blocks(0)):
        bidx, bidy = tile_coords(tile_id, num_bid_m, num_bid_n, GROUP_SIZE_M)
        acc = ct.zeros((TILE_M, TILE_N), dtype=ct.float32)
        for k in range(num_k):
            a = ct.load(A, (bidx, k), (TILE_M, TILE_K), padding_mode=PAD_ZERO).astype(dtype)
            b = ct.load(B, (k, bidy), (TILE_K, TILE_N), padding_mode=PAD_ZERO).astype(dtype)
            acc = ct.mma(a, b, acc)
        ct.store(C, (bidx, bidy), acc.astype(C.dtype))


def matmul(a: torch.Tensor, b: torch.Tensor, persistent: bool = False) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    tm, tn, tk = (128, 128, 32) if a.dtype != torch.float32 else (64, 64, 32)
    if persistent:
        grid = (min(132, ct.cdiv(M, tm) * ct.cdiv(N, tn)), 1, 1)
        ct.launch(torch.cuda.current_stream(), grid, persistent_matmul_kernel, (a, b, c, tm, tn, tk, 8))
    else:
        grid = (ct.cdiv(M, tm) * ct.cdiv(N, tn), 1, 1)
        ct.launch(torch.cuda.current_stream(), grid, matmul_kernel, (a, b, c, tm, tn, tk, 8))
    return c


if __name__ == "__main__":
    for dt in (torch.float16, torch.float32):
        a = torch.randn(512, 256, device="cuda", dtype=dt)
        b = torch.randn(256, 384, device="cuda", dtype=dt)
        outs = [matmul(a, b, persistent) for persistent in (False, True)]
        for c in outs:
            torch.testing.assert_close(c, a @ b, rtol=1e-2, atol=1e-2)
