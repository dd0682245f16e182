"""Per-(batch, channel) mean of an NCHW tensor: each block reduces one (H, W) plane tile by tile."""
import torch
import cuda.tile as ct


@ct.kernel
def channel_mean_kernel(X, OUT, TILE_H: ct.Constant[int], TILE_W: ct.Constant[int]):
    n = ct.bid(0)
    c = ct.bid(1)
    H = X.shape[2]
    W = X.shape[3]
    acc = ct.zeros((TILE_H, TILE_W), dtype=ct.float32)
    for i in range(ct.cdiv(H, TILE_H)):
        for j in range(ct.cdiv(W, TILE_W)):
            t = ct.load(X, index=(n, c, i, j), shape=(1, 1, TILE_H, TILE_W), padding_mode=ct.PaddingMode.ZERO)
            acc = acc + ct.reshape(t.astype(ct.float32), (TILE_H, TILE_W))
    total = ct.sum(ct.sum(acc, axis=1), axis=0)
    mean = total / (H * W)
    ct.store(OUT, index=(n, c), tile=ct.reshape(mean, (1, 1)).astype(OUT.dtype))


def channel_mean(x: torch.Tensor) -> torch.Tensor:
    N, C, H, W = x.shape
    out = torch.empty((N, C), device=x.device, dtype=x.dtype)
    ct.launch(torch.cuda.current_stream(), (N, C, 1), channel_mean_kernel, (x, out, 16, 16))
    return out
