"""Persistent matmul: one block per SM walks output tiles."""
import torch
import cuda.tile as ct

from .._common import ceil_div, run_kernel, sm_count

kernel_configs = {
    torch.float16: {"BM": 128, "BN": 128, "BK": 64},
    torch.bfloat16: {"BM": 128, "BN": 128, "BK": 64},
    torch.float32: {"BM": 64, "BN": 64, "BK": 32},
}


@ct.kernel
def persistent_mm(a, b, c, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
    tiles_n = ct.num_tiles(c, axis=1, shape=(BM, BN))
    total = ct.num_tiles(c, axis=0, shape=(BM, BN)) * tiles_n
    for t in range(ct.bid(0), total, ct.num_blocks(0)):
        tm, tn = t // tiles_n, t % tiles_n
        acc = ct.zeros((BM, BN), dtype=ct.float32)
        for k in range(ct.num_tiles(a, axis=1, shape=(BM, BK))):
            at = ct.load(a, index=(tm, k), shape=(BM, BK), padding_mode=ct.PaddingMode.ZERO)
            bt = ct.load(b, index=(k, tn), shape=(BK, BN), padding_mode=ct.PaddingMode.ZERO)
            acc = ct.mma(at, bt, acc)
        ct.store(c, index=(tm, tn), tile=acc.astype(c.dtype))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.dtype != b.dtype:
        raise TypeError("a and b must share a dtype")
    M, K = a.shape
    K2, N = b.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: {K} vs {K2}")
    cfg = kernel_configs.get(a.dtype)
    if cfg is None:
        raise NotImplementedError(f"no config for {a.dtype}")
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    tiles = ceil_div(M, cfg["BM"]) * ceil_div(N, cfg["BN"])
    run_kernel(persistent_mm, (min(sm_count(), tiles), 1, 1), (a, b, c, cfg["BM"], cfg["BN"], cfg["BK"]))
    return c
