"""RMSNorm forward (saves 1/rms) and backward: two kernels of one op, a scalar load of the saved statistic."""
import torch
import cuda.tile as ct

from ._utils import PAD_ZERO


@ct.kernel
def rms_norm_fwd_kernel(X, W, Y, Rstd, eps: float, N_COLS: ct.Constant[int], TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    x = ct.load(X, index=(row, 0), shape=(1, TILE_N), padding_mode=PAD_ZERO).astype(ct.float32)
    ms = ct.sum(x * x, axis=1) / N_COLS
    rstd = ct.rsqrt(ms + eps)
    w = ct.load(W, index=(0,), shape=(TILE_N,), padding_mode=PAD_ZERO).astype(ct.float32)
    y = x * rstd[:, None] * w[None, :]
    ct.store(Y, index=(row, 0), tile=y.astype(Y.dtype), allow_tma=False)
    ct.store(Rstd, index=(row,), tile=rstd)


@ct.kernel
def rms_norm_bwd_kernel(DY, X, W, Rstd, DX, N_COLS: ct.Constant[int], TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    dy = ct.load(DY, index=(row, 0), shape=(1, TILE_N), padding_mode=PAD_ZERO).astype(ct.float32)
    x = ct.load(X, index=(row, 0), shape=(1, TILE_N), padding_mode=PAD_ZERO).astype(ct.float32)
    w = ct.load(W, index=(0,), shape=(TILE_N,), padding_mode=PAD_ZERO).astype(ct.float32)
    rstd = ct.load(Rstd, index=(row,), shape=())
    xhat = x * rstd
    wdy = w[None, :] * dy
    c = ct.sum(xhat * wdy, axis=1, keepdims=True) / N_COLS
    dx = (wdy - xhat * c) * rstd
    ct.store(DX, index=(row, 0), tile=dx.astype(DX.dtype))


def rms_norm_fwd(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6):
    M, N = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty((M,), device=x.device, dtype=torch.float32)
    tile = 1 << (N - 1).bit_length()
    ct.launch(torch.cuda.current_stream(), (M, 1, 1), rms_norm_fwd_kernel, (x, w, y, rstd, eps, N, tile))
    return y, rstd


def rms_norm_bwd(dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, rstd: torch.Tensor):
    M, N = x.shape
    dx = torch.empty_like(x)
    tile = 1 << (N - 1).bit_length()
    ct.launch(torch.cuda.current_stream(), (M, 1, 1), rms_norm_bwd_kernel, (dy, x, w, rstd, dx, N, tile))
    return dx


if __name__ == "__main__":
    for dt in (torch.float16, torch.bfloat16):
        x = torch.randn(64, 1000, device="cuda", dtype=dt)
        w = torch.randn(1000, device="cuda", dtype=dt)
        y, rstd = rms_norm_fwd(x, w)
        dx = rms_norm_bwd(torch.randn_like(x), x, w, rstd)
