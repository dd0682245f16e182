"""Batched GEMV: y = W x, tiled over K in FTK-wide chunks."""
import numpy as np
import cuda.tile as ct

from ..device import DeviceArray, device

FTK = 128


@ct.kernel
def gemv_kernel(w, x, y, BM: ct.Constant[int], K_BLOCKS: ct.Constant[int], FTK_: ct.Constant[int]):
    m = ct.bid(0)
    acc = ct.zeros((BM, 1), dtype=ct.float32)
    for kb in range(K_BLOCKS):
        wt = ct.load(w, index=(m, kb), shape=(BM, FTK_), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
        xt = ct.load(x, index=(kb,), shape=(FTK_,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
        acc = acc + ct.sum(wt * ct.reshape(xt, (1, FTK_)), axis=1, keepdims=True)
    ct.store(y, index=(m,), tile=ct.reshape(acc, (BM,)).astype(y.dtype))


class Gemv:
    def __init__(self, M: int, K: int, dtype=np.float16, block_m: int = 64):
        self.M, self.K, self.BM = M, K, block_m
        self.K_BLOCKS = self.K // FTK
        assert self.K % FTK == 0, "K must be a multiple of FTK"
        self.stream = device().create_stream()
        self.w = DeviceArray.from_host(np.random.randn(M, K).astype(dtype), self.stream)

    def __call__(self, x: DeviceArray) -> DeviceArray:
        y = DeviceArray((self.M,), x.dtype, self.stream)
        ct.launch(self.stream, ((self.M + self.BM - 1) // self.BM, 1, 1), gemv_kernel,
                  (self.w, x, y, self.BM, self.K_BLOCKS, FTK))
        return y
