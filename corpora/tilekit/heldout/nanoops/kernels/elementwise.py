"""Elementwise kernels; the callers (benchmarks/bench_elementwise.py) launch them."""
import cuda.tile as ct


@ct.kernel
def add_scaled(x, y, out, alpha, TILE: ct.Constant[int]):
    i = ct.bid(0)
    a = ct.load(x, index=(i,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    b = ct.load(y, index=(i,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(i,), tile=(a.astype(ct.float32) + alpha * b.astype(ct.float32)).astype(out.dtype))


@ct.kernel
def relu2d(x, out, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(i, j), shape=(TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(i, j), tile=ct.maximum(t, 0.0).astype(out.dtype))
