"""Scaled attention scores with a causal mask over (batch, heads, q, k): scores = q.k^T * scale, -inf above the diagonal."""
import math

import torch
import cuda.tile as ct


@ct.kernel
def causal_scores_kernel(Q, K, S, qk_scale, TILE_Q: ct.Constant[int], TILE_K: ct.Constant[int],
                         HEAD_D: ct.Constant[int]):
    bh = ct.bid(0)
    qi = ct.bid(1)
    kj = ct.bid(2)
    q = ct.load(Q, index=(bh, qi, 0), shape=(1, TILE_Q, HEAD_D), allow_tma=True)
    k = ct.load(K, index=(bh, kj, 0), shape=(1, TILE_K, HEAD_D), allow_tma=True)
    q2 = ct.reshape(q, (TILE_Q, HEAD_D))
    kt = ct.transpose(ct.reshape(k, (TILE_K, HEAD_D)))
    acc = ct.mma(q2, kt, ct.zeros((TILE_Q, TILE_K), dtype=ct.float32)) * qk_scale
    rows = qi * TILE_Q + ct.arange(TILE_Q, dtype=ct.int32)
    cols = kj * TILE_K + ct.arange(TILE_K, dtype=ct.int32)
    keep = ct.reshape(rows, (TILE_Q, 1)) >= ct.reshape(cols, (1, TILE_K))
    out = ct.where(keep, acc, -math.inf)
    ct.store(S, index=(bh, qi, kj), tile=ct.reshape(out, (1, TILE_Q, TILE_K)).astype(S.dtype))


def causal_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    B, H, L, D = q.shape
    q3 = q.reshape(B * H, L, D)
    k3 = k.reshape(B * H, L, D)
    s = torch.empty((B * H, L, L), device=q.device, dtype=q.dtype)
    grid = (B * H, (L + 63) // 64, (L + 63) // 64)
    ct.launch(torch.cuda.current_stream(), grid, causal_scores_kernel, (q3, k3, s, 1.0 / math.sqrt(D), 64, 64, D))
    return s.reshape(B, H, L, L)
