"""Linear layer y = act(x @ w.T + bias) with an optional bias and an activation picked by a constant."""
import torch
import cuda.tile as ct

RELU = 1
NONE = 0


@ct.kernel
def linear_kernel(X, W, bias, Y, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int], TILE_K: ct.Constant[int],
                  ACT: ct.Constant[int]):
    bid_m = ct.bid(0)
    bid_n = ct.bid(1)
    acc = ct.zeros((TILE_M, TILE_N), dtype=ct.float32)
    for k in range(ct.num_tiles(X, axis=1, shape=(TILE_M, TILE_K))):
        x = ct.load(X, index=(bid_m, k), shape=(TILE_M, TILE_K), padding_mode=ct.PaddingMode.ZERO)
        w = ct.load(W, index=(bid_n, k), shape=(TILE_N, TILE_K), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(x, ct.transpose(w), acc)
    if bias is not None:
        b = ct.load(bias, index=(bid_n,), shape=(TILE_N,), padding_mode=ct.PaddingMode.ZERO)
        acc = acc + b[None, :].astype(ct.float32)
    if ACT == RELU:
        acc = ct.maximum(acc, 0.0)
    ct.store(Y, index=(bid_m, bid_n), tile=acc.astype(Y.dtype))


def linear(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None, act: str = "none"):
    M, K = x.shape
    N = w.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    tm, tn, tk = 64, 64, 32
    grid = (ct.cdiv(M, tm), ct.cdiv(N, tn), 1)
    ct.launch(torch.cuda.current_stream(), grid, linear_kernel,
              (x, w, bias, y, tm, tn, tk, RELU if act == "relu" else NONE))
    return y


if __name__ == "__main__":
    x = torch.randn(256, 128, device="cuda", dtype=torch.float16)
    w = torch.randn(192, 128, device="cuda", dtype=torch.float16)
    b = torch.randn(192, device="cuda", dtype=torch.float16)
    y1, y2 = linear(x, w, b, "relu"), linear(x, w)
    torch.testing.assert_close(y1, torch.relu(x @ w.T + b), rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(y2, x @ w.T, rtol=1e-2, atol=1e-2)
