"""GroupNorm over a 5-D (N, G, C/G, H, W) view and a per-channel affine on 4-D NCHW."""
import torch
import cuda.tile as ct


@ct.kernel
def group_norm_kernel(X, Y, eps: float, CPG: ct.Constant[int], HW_H: ct.Constant[int], HW_W: ct.Constant[int]):
    n = ct.bid(0)
    g = ct.bid(1)
    x = ct.load(X, index=(n, g, 0, 0, 0), shape=(1, 1, CPG, HW_H, HW_W)).astype(ct.float32)
    count = CPG * HW_H * HW_W
    mean = ct.sum(ct.reshape(x, (1, count)), axis=1) / count
    xc = x - mean.item()
    var = ct.sum(ct.reshape(xc * xc, (1, count)), axis=1) / count
    y = xc * ct.rsqrt(var + eps).item()
    ct.store(Y, index=(n, g, 0, 0, 0), tile=y.astype(Y.dtype))


@ct.kernel
def channel_affine_kernel(X, W, B, Y, TILE_H: ct.Constant[int], TILE_W: ct.Constant[int]):
    n = ct.bid(0)
    c = ct.bid(1)
    hb = ct.bid(2)
    x = ct.load(X, index=(n, c, hb, 0), shape=(1, 1, TILE_H, TILE_W))
    w = ct.load(W, index=(c,), shape=())
    b = ct.load(B, index=(c,), shape=())
    ct.store(Y, index=(n, c, hb, 0), tile=x * w + b)


def group_norm(x: torch.Tensor, groups: int, w: torch.Tensor, b: torch.Tensor, eps: float = 1e-5):
    N, C, H, W = x.shape
    x5 = x.view(N, groups, C // groups, H, W)
    y5 = torch.empty_like(x5)
    ct.launch(torch.cuda.current_stream(), (N, groups, 1), group_norm_kernel, (x5, y5, eps, C // groups, H, W))
    y = y5.view(N, C, H, W)
    out = torch.empty_like(y)
    ct.launch(torch.cuda.current_stream(), (N, C, ct.cdiv(H, 8)), channel_affine_kernel, (y, w, b, out, 8, W))
    return out


if __name__ == "__main__":
    x = torch.randn(2, 32, 16, 16, device="cuda", dtype=torch.float16)
    group_norm(x, 8, torch.randn(32, device="cuda", dtype=torch.float16), torch.randn(32, device="cuda", dtype=torch.float16))
