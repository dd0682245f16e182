"""Row softmax: a persistent kernel striding over rows, and a chunked online kernel for long rows."""
import torch
import cuda.tile as ct

from ._utils import PAD_NEG_INF


@ct.kernel(occupancy=2)
def softmax_kernel(X, Y, n_rows: int, TILE_N: ct.Constant[int]):
    pid = ct.bid(0)
    for row in range(pid, n_rows, ct.num_blocks(0)):
        x = ct.load(X, index=(row, 0), shape=(1, TILE_N), padding_mode=PAD_NEG_INF, latency=3)
        x = x.astype(ct.float32)
        m = ct.max(x, axis=1, keepdims=True)
        e = ct.exp(x - m, rounding_mode=ct.RoundingMode.APPROX)
        s = ct.sum(e, axis=1, keepdims=True)
        ct.store(Y, index=(row, 0), tile=(e / s).astype(Y.dtype), allow_tma=False)


@ct.kernel
def online_softmax_kernel(X, Y, n_cols: int, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    num_chunks = ct.cdiv(n_cols, TILE_N)
    m = ct.full((1, 1), -float("inf"), dtype=ct.float32)
    d = ct.zeros((1, 1), dtype=ct.float32)
    for j in range(num_chunks):
        x = ct.load(X, (row, j), (1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
        m_new = ct.maximum(m, ct.max(x, axis=1, keepdims=True))
        d = d * ct.exp(m - m_new) + ct.sum(ct.exp(x - m_new), axis=1, keepdims=True)
        m = m_new
    inv = 1.0 / d
    if num_chunks == 1:
        x = ct.load(X, (row, 0), (1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
        ct.store(Y, (row, 0), (ct.exp(x - m) * inv).astype(Y.dtype))
    else:
        for j in range(num_chunks):
            x = ct.load(X, (row, j), (1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
            ct.store(Y, (row, j), (ct.exp(x - m) * inv).astype(Y.dtype))


def softmax(x: torch.Tensor, online: bool = False) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    if online:
        ct.launch(torch.cuda.current_stream(), (M, 1, 1), online_softmax_kernel, (x, y, N, 256))
    else:
        tile = 1 << (N - 1).bit_length()
        ct.launch(torch.cuda.current_stream(), (min(M, 264), 1, 1), softmax_kernel, (x, y, M, tile))
    return y


if __name__ == "__main__":
    for dt in (torch.float16, torch.float32):
        x = torch.randn(300, 1024, device="cuda", dtype=dt)
        ys = [softmax(x), softmax(x, online=True)]
        for y in ys:
            torch.testing.assert_close(y, torch.softmax(x, -1), rtol=1e-3, atol=1e-3)
