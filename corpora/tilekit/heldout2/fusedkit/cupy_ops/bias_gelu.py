"""Bias + GELU on CuPy arrays, on a non-default stream."""
import cupy as cp
import cuda.tile as ct


@ct.kernel
def bias_gelu_kernel(x, bias, y, TN: ct.Constant[int]):
    r, c = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(r, c), shape=(1, TN), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    bb = ct.reshape(ct.load(bias, index=(c,), shape=(TN,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32), (1, TN))
    u = t + bb
    ct.store(y, index=(r, c), tile=(0.5 * u * (1.0 + ct.tanh(0.79788456 * (u + 0.044715 * u * u * u)))).astype(y.dtype))


def bias_gelu(x, bias):
    rows, cols = x.shape
    tn = 512
    y = cp.empty_like(x)
    with cp.cuda.Stream(non_blocking=True) as s:
        ct.launch(s, (rows, -(-cols // tn), 1), bias_gelu_kernel, (x, bias, y, tn))
        s.synchronize()
    return y
