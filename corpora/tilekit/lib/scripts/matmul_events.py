"""Matmul TFLOP/s measured with CUDA events over a fixed number of iterations."""
import argparse

import torch
import cuda.tile as ct


@ct.kernel
def matmul_kernel(a, b, c, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
    pm, pn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((BM, BN), dtype=ct.float32)
    for k in range(ct.num_tiles(a, axis=1, shape=(BM, BK))):
        acc = ct.mma(ct.load(a, index=(pm, k), shape=(BM, BK), padding_mode=ct.PaddingMode.ZERO),
                     ct.load(b, index=(k, pn), shape=(BK, BN), padding_mode=ct.PaddingMode.ZERO), acc)
    ct.store(c, index=(pm, pn), tile=acc.astype(c.dtype))


def run(M, N, K, bm, bn, bk, iters):
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    grid = ((M + bm - 1) // bm, (N + bn - 1) // bn, 1)
    stream = torch.cuda.current_stream()
    for _ in range(5):
        ct.launch(stream, grid, matmul_kernel, (a, b, c, bm, bn, bk))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        ct.launch(stream, grid, matmul_kernel, (a, b, c, bm, bn, bk))
    end.record()
    torch.cuda.synchronize()
    ms = start.elapsed_time(end) / iters
    return 2 * M * N * K / (ms * 1e-3) / 1e12


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    for size in (1024, 4096):
        for bm, bn, bk in ((128, 128, 64), (64, 128, 32)):
            print(size, (bm, bn, bk), f"{run(size, size, size, bm, bn, bk, args.iters):.1f} TFLOP/s")
