"""Row softmax for rows longer than one tile: an online max/sum pass, then a normalising pass (exp2 with log2(e))."""
import math

import torch
import cuda.tile as ct

LOG2E = math.log2(math.e)


@ct.kernel(occupancy=2)
def softmax_online_kernel(X, Y, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    num_chunks = ct.num_tiles(X, axis=1, shape=(1, TILE_N))
    m_i = ct.full((1, TILE_N), -math.inf, dtype=ct.float32)
    l_i = ct.zeros((1, TILE_N), dtype=ct.float32)
    for j in range(num_chunks):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF,
                    latency=4).astype(ct.float32)
        m_new = ct.maximum(m_i, x)
        l_i = l_i * ct.exp2((m_i - m_new) * LOG2E) + ct.exp2((x - m_new) * LOG2E)
        m_i = m_new
    m_row = ct.max(m_i, axis=1, keepdims=True)
    l_row = ct.sum(l_i * ct.exp2((m_i - m_row) * LOG2E), axis=1, keepdims=True)
    for j in range(num_chunks):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF,
                    latency=4).astype(ct.float32)
        p = ct.exp2((x - m_row) * LOG2E) / l_row
        ct.store(Y, index=(row, j), tile=p.astype(Y.dtype))


def softmax(x: torch.Tensor, tile_n: int = 256) -> torch.Tensor:
    m, n = x.shape
    y = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (m, 1, 1), softmax_online_kernel, (x, y, tile_n))
    return y
