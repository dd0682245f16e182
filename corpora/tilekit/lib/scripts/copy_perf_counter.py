"""Strided copy bandwidth, wall-clock timed."""
import time

import torch
import cuda.tile as ct


@ct.kernel
def copy2d_kernel(src, dst, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(dst, index=(i, j), tile=ct.load(src, index=(i, j), shape=(TM, TN), padding_mode=ct.PaddingMode.ZERO))


def bench(rows, cols, tm=64, tn=128, reps=100):
    src = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    grid = ((rows + tm - 1) // tm, (cols + tn - 1) // tn, 1)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        ct.launch(torch.cuda.current_stream(), grid, copy2d_kernel, (src, dst, tm, tn))
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / reps
    return 2 * src.numel() * src.element_size() / dt / 1e9


if __name__ == "__main__":
    for shape in ((4096, 4096), (8192, 1024)):
        print(shape, f"{bench(*shape):.1f} GB/s")
