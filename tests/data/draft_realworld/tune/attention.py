"""Flash attention forward on (batch, heads, seq, dim): online softmax, causal mask by a constant, exp2 with the
log2(e) scale folded in, a run-time guard in a helper, packed q/k/v read through slices of one array."""
import math

import torch
import cuda.tile as ct

INV_LOG_2 = 1.0 / math.log(2)


def _masked(scores, q_start, k_start, TILE_M, TILE_N, CAUSAL):
    if CAUSAL:
        offs_m = q_start + ct.arange(TILE_M, dtype=ct.int32)
        offs_n = k_start + ct.arange(TILE_N, dtype=ct.int32)
        scores = ct.where(offs_m[:, None] >= offs_n[None, :], scores, -math.inf)
    return scores


@ct.kernel
def attention_fwd_kernel(Q, K, V, O, qk_scale: float, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int],
                         HEAD_D: ct.Constant[int], CAUSAL: ct.Constant[bool]):
    b = ct.bid(0)
    h = ct.bid(1)
    mb = ct.bid(2)
    seq_k = K.shape[2]
    q = ct.load(Q, index=(b, h, mb, 0), shape=(1, 1, TILE_M, HEAD_D)).reshape((TILE_M, HEAD_D))
    m_i = ct.full((TILE_M, 1), -math.inf, dtype=ct.float32)
    l_i = ct.zeros((TILE_M, 1), dtype=ct.float32)
    acc = ct.zeros((TILE_M, HEAD_D), dtype=ct.float32)
    scale = qk_scale * INV_LOG_2
    n_blocks = ct.cdiv(seq_k, TILE_N)
    if CAUSAL:
        n_blocks = ct.cdiv((mb + 1) * TILE_M, TILE_N)
    for j in range(n_blocks):
        k = ct.load(K, index=(b, h, j, 0), shape=(1, 1, TILE_N, HEAD_D)).reshape((TILE_N, HEAD_D))
        s = ct.mma(q, ct.transpose(k), ct.zeros((TILE_M, TILE_N), dtype=ct.float32)) * scale
        s = _masked(s, mb * TILE_M, j * TILE_N, TILE_M, TILE_N, CAUSAL)
        m_new = ct.maximum(m_i, ct.max(s, axis=1, keepdims=True))
        p = ct.exp2(s - m_new, flush_to_zero=True)
        alpha = ct.exp2(m_i - m_new, flush_to_zero=True)
        l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)
        v = ct.load(V, index=(b, h, j, 0), shape=(1, 1, TILE_N, HEAD_D)).reshape((TILE_N, HEAD_D))
        acc = ct.mma(p.astype(Q.dtype), v, acc * alpha)
        m_i = m_new
    out = (acc / l_i).astype(O.dtype)
    ct.store(O, index=(b, h, mb, 0), tile=out.reshape((1, 1, TILE_M, HEAD_D)))


@ct.kernel
def split_qkv_kernel(QKV, Q, K, HEAD_D: ct.Constant[int], TILE_T: ct.Constant[int]):
    t = ct.bid(0)
    q_part = QKV.slice(axis=1, start=0, stop=HEAD_D)
    k_part = QKV.slice(axis=1, start=HEAD_D, stop=2 * HEAD_D)
    ct.store(Q, index=(t, 0), tile=ct.load(q_part, index=(t, 0), shape=(TILE_T, HEAD_D)))
    ct.store(K, index=(t, 0), tile=ct.load(k_part, index=(t, 0), shape=(TILE_T, HEAD_D)))


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    B, H, S, D = q.shape
    o = torch.empty_like(q)
    tm, tn = 64, 64
    grid = (B, H, ct.cdiv(S, tm))
    ct.launch(torch.cuda.current_stream(), grid, attention_fwd_kernel,
              (q, k, v, o, 1.0 / math.sqrt(D), tm, tn, D, causal))
    return o


def split_qkv(qkv: torch.Tensor, head_dim: int):
    T = qkv.shape[0]
    q = torch.empty((T, head_dim), device=qkv.device, dtype=qkv.dtype)
    k = torch.empty_like(q)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(T, 32), 1, 1), split_qkv_kernel, (qkv, q, k, head_dim, 32))
    return q, k


if __name__ == "__main__":
    q = torch.randn(2, 4, 256, 64, device="cuda", dtype=torch.float16)
    k = torch.randn_like(q)
    v = torch.randn_like(q)
    for causal in (False, True):
        attention(q, k, v, causal)
    split_qkv(torch.randn(128, 3 * 64, device="cuda", dtype=torch.float16), 64)
