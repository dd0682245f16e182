"""Online softmax kernels (forward and backward); launched from tilelib.ops.softmax."""
import cuda.tile as ct


@ct.kernel
def softmax_fwd_kernel(x, y, BLOCK_N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, BLOCK_N), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, index=(row, 0), tile=(e / ct.sum(e, axis=1, keepdims=True)).astype(y.dtype))


@ct.kernel
def softmax_bwd_kernel(dy, y, dx, BLOCK_N: ct.Constant[int]):
    row = ct.bid(0)
    g = ct.load(dy, index=(row, 0), shape=(1, BLOCK_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    p = ct.load(y, index=(row, 0), shape=(1, BLOCK_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    s = ct.sum(g * p, axis=1, keepdims=True)
    ct.store(dx, index=(row, 0), tile=(p * (g - s)).astype(dx.dtype))
