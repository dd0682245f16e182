"""Flash attention forward over (batch, heads, seq, head_dim) tensors."""
import math

import torch
import cuda.tile as ct

from ..config import ATTN_CONFIGS, DEFAULT_CONFIG
from ..utils import cdiv, launch

LOG2E = 1.4426950408889634


@ct.kernel
def _attn_fwd(q, k, v, o, qk_scale, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int],
              HEAD_DIM: ct.Constant[int]):
    mb, bh = ct.bid(0), ct.bid(1)
    qt = ct.reshape(ct.load(q, index=(bh, mb, 0), shape=(1, TILE_M, HEAD_DIM), padding_mode=ct.PaddingMode.ZERO),
                    (TILE_M, HEAD_DIM))
    m_i = ct.full((TILE_M, 1), float("-inf"), dtype=ct.float32)
    l_i = ct.zeros((TILE_M, 1), dtype=ct.float32)
    acc = ct.zeros((TILE_M, HEAD_DIM), dtype=ct.float32)
    for j in range(ct.num_tiles(k, axis=1, shape=(1, TILE_N, HEAD_DIM))):
        kt = ct.reshape(ct.load(k, index=(bh, 0, j), shape=(1, HEAD_DIM, TILE_N), order=(0, 2, 1),
                                padding_mode=ct.PaddingMode.ZERO), (HEAD_DIM, TILE_N))
        s = ct.mma(qt, kt, ct.zeros((TILE_M, TILE_N), dtype=ct.float32)) * qk_scale
        m_new = ct.maximum(m_i, ct.max(s, axis=1, keepdims=True))
        p = ct.exp2(s - m_new)
        alpha = ct.exp2(m_i - m_new)
        l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)
        vt = ct.reshape(ct.load(v, index=(bh, j, 0), shape=(1, TILE_N, HEAD_DIM), padding_mode=ct.PaddingMode.ZERO),
                        (TILE_N, HEAD_DIM))
        acc = ct.mma(p.astype(v.dtype), vt, acc * alpha)
        m_i = m_new
    ct.store(o, index=(bh, mb, 0), tile=ct.reshape((acc / l_i).astype(o.dtype), (1, TILE_M, HEAD_DIM)))


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sm_scale=None) -> torch.Tensor:
    B, H, S, D = q.shape
    assert k.shape == q.shape and v.shape == q.shape, "q, k, v must have one shape"
    assert D in ATTN_CONFIGS, f"head_dim {D} not supported"
    cfg = ATTN_CONFIGS.get(D, DEFAULT_CONFIG)
    sm_scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    q3, k3, v3 = (t.contiguous().view(B * H, S, D) for t in (q, k, v))
    o = torch.empty_like(q3)
    launch(_attn_fwd, (cdiv(S, cfg.tile_m), B * H, 1), q3, k3, v3, o, sm_scale * LOG2E, cfg.tile_m, cfg.tile_n, D)
    return o.view(B, H, S, D)
