import torch
import cuda.tile as ct

from .utils import check_cuda, next_power_of_2


@ct.kernel
def _layer_norm_fwd(X, W, B, Y, eps, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    n = X.shape[1]
    x = ct.load(X, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    mean = ct.sum(x, axis=1, keepdims=True) / n
    cols = ct.arange(TILE_N, dtype=ct.int32)
    xc = ct.where(ct.reshape(cols, (1, TILE_N)) < n, x - mean, 0.0)
    var = ct.sum(xc * xc, axis=1, keepdims=True) / n
    rstd = ct.rsqrt(var + eps)
    w = ct.load(W, index=(0,), shape=(TILE_N,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    b = ct.load(B, index=(0,), shape=(TILE_N,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    y = xc * rstd * ct.reshape(w, (1, TILE_N)) + ct.reshape(b, (1, TILE_N))
    ct.store(Y, index=(row, 0), tile=y.astype(Y.dtype))


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    check_cuda(x, weight, bias)
    shape = x.shape
    x2 = x.reshape(-1, shape[-1])
    M, N = x2.shape
    y = torch.empty_like(x2)
    TILE_N = next_power_of_2(N)
    ct.launch(torch.cuda.current_stream(), (M,), _layer_norm_fwd, (x2, weight, bias, y, eps, TILE_N))
    return y.view(shape)
