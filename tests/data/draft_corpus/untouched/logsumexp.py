"""Row logsumexp with exp2/log2 and the natural-log conversion constants from the shared module."""
import torch
import cuda.tile as ct

from .._common import INV_LN2, LOG2E, next_pow2


@ct.kernel
def logsumexp_kernel(X, OUT, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    x = ct.load(X, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
    m = ct.max(x, axis=1, keepdims=True)
    s = ct.sum(ct.exp2((x - m) * LOG2E), axis=1, keepdims=True)
    lse = m + ct.log2(s) / INV_LN2
    ct.store(OUT, index=(row,), tile=ct.reshape(lse, (1,)).astype(OUT.dtype))


def logsumexp(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    out = torch.empty((m,), device=x.device, dtype=x.dtype)
    ct.launch(torch.cuda.current_stream(), (m, 1, 1), logsumexp_kernel, (x, out, next_pow2(n)))
    return out
