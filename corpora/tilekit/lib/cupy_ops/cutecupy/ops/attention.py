"""Non-causal attention on CuPy arrays (batch, heads, seq, head_dim)."""
import math

import cupy as cp
import cuda.tile as ct


@ct.kernel
def attn_fwd(q, k, v, o, scale, HEAD_DIM: ct.Constant[int], BLOCK_M: ct.Constant[int], BLOCK_N: ct.Constant[int]):
    b, h, m = ct.bid(0), ct.bid(1), ct.bid(2)
    qt = ct.reshape(ct.load(q, index=(b, h, m, 0), shape=(1, 1, BLOCK_M, HEAD_DIM), padding_mode=ct.PaddingMode.ZERO),
                    (BLOCK_M, HEAD_DIM))
    mx = ct.full((BLOCK_M, 1), -float("inf"), dtype=ct.float32)
    l = ct.zeros((BLOCK_M, 1), dtype=ct.float32)
    acc = ct.zeros((BLOCK_M, HEAD_DIM), dtype=ct.float32)
    for j in range(ct.num_tiles(k, axis=2, shape=(1, 1, BLOCK_N, HEAD_DIM))):
        kt = ct.reshape(ct.load(k, index=(b, h, j, 0), shape=(1, 1, BLOCK_N, HEAD_DIM), padding_mode=ct.PaddingMode.ZERO),
                        (BLOCK_N, HEAD_DIM))
        vt = ct.reshape(ct.load(v, index=(b, h, j, 0), shape=(1, 1, BLOCK_N, HEAD_DIM), padding_mode=ct.PaddingMode.ZERO),
                        (BLOCK_N, HEAD_DIM))
        s = ct.mma(qt, ct.transpose(kt), ct.zeros((BLOCK_M, BLOCK_N), dtype=ct.float32)) * scale
        m_new = ct.maximum(mx, ct.max(s, axis=1, keepdims=True))
        p = ct.exp(s - m_new)
        alpha = ct.exp(mx - m_new)
        l = l * alpha + ct.sum(p, axis=1, keepdims=True)
        acc = ct.mma(p.astype(vt.dtype), vt, acc * alpha)
        mx = m_new
    ct.store(o, index=(b, h, m, 0), tile=ct.reshape((acc / l).astype(o.dtype), (1, 1, BLOCK_M, HEAD_DIM)))


def attention(q, k, v):
    head_dim = q.shape[3]
    batch, heads, seq = q.shape[0], q.shape[1], q.shape[2]
    o = cp.empty_like(q)
    block_m = 64 if head_dim > 64 else 128
    stream = cp.cuda.get_current_stream()
    ct.launch(stream, (batch, heads, (seq + block_m - 1) // block_m), attn_fwd,
              (q, k, v, o, 1.0 / math.sqrt(head_dim), head_dim, block_m, 64))
    return o
