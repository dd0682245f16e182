"""GEMM with optional transposed operands; the flags travel through a config class and a partial."""
import functools
from dataclasses import dataclass

import torch
import cuda.tile as ct

from ..utils import cdiv


@ct.kernel
def _gemm_kernel(a, b, c, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int],
                 TRANSPOSE_A: ct.Constant[bool], TRANSPOSE_B: ct.Constant[bool]):
    pm, pn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((BM, BN), dtype=ct.float32)
    k_tiles = ct.num_tiles(a, axis=0 if TRANSPOSE_A else 1, shape=(BK, BK))
    for k in range(k_tiles):
        if TRANSPOSE_A:
            at = ct.transpose(ct.load(a, index=(k, pm), shape=(BK, BM), padding_mode=ct.PaddingMode.ZERO))
        else:
            at = ct.load(a, index=(pm, k), shape=(BM, BK), padding_mode=ct.PaddingMode.ZERO)
        if TRANSPOSE_B:
            bt = ct.transpose(ct.load(b, index=(pn, k), shape=(BN, BK), padding_mode=ct.PaddingMode.ZERO))
        else:
            bt = ct.load(b, index=(k, pn), shape=(BK, BN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(at, bt, acc)
    ct.store(c, index=(pm, pn), tile=acc.astype(c.dtype))


gemm_kernel = _gemm_kernel  # public alias used by the launcher


@dataclass(frozen=True)
class GemmConfig:
    block_m: int = 128
    block_n: int = 128
    block_k: int = 64


def _configs(dtype):
    return GemmConfig(64, 64, 32) if dtype == torch.float32 else GemmConfig()


class Gemm:
    """c = op(a) @ op(b); op is a transpose when the flag is set."""

    def __init__(self, transpose_a: bool = False, transpose_b: bool = False):
        self.flags = dict(TRANSPOSE_A=transpose_a, TRANSPOSE_B=transpose_b)
        self._launch = functools.partial(ct.launch, torch.cuda.current_stream())

    def __call__(self, a, b):
        ta, tb = self.flags["TRANSPOSE_A"], self.flags["TRANSPOSE_B"]
        M, K = (a.shape[1], a.shape[0]) if ta else a.shape
        N = b.shape[0] if tb else b.shape[1]
        cfg = _configs(a.dtype)
        c = torch.empty((M, N), dtype=a.dtype, device=a.device)
        grid = (cdiv(M, cfg.block_m), cdiv(N, cfg.block_n), 1)
        self._launch(grid, gemm_kernel, (a, b, c, cfg.block_m, cfg.block_n, cfg.block_k, ta, tb))
        return c


def gemm(a, b, transpose_a=False, transpose_b=False):
    return Gemm(transpose_a, transpose_b)(a, b)
