"""Row softmax kernels; launched by callers (see tests/kernels/test_softmax.py)."""
import cuda.tile as ct


@ct.kernel
def softmax_rows(x, y, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, index=(row, 0), tile=(e / ct.sum(e, axis=1, keepdims=True)).astype(y.dtype))


@ct.kernel
def log_softmax_rows(x, y, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
    z = t - ct.max(t, axis=1, keepdims=True)
    ct.store(y, index=(row, 0), tile=(z - ct.log(ct.sum(ct.exp(z), axis=1, keepdims=True))).astype(y.dtype))
