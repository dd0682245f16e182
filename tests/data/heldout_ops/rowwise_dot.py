"""Row-wise scaled dot products q.k per head; the head dim is a compile-time constant read from the shape."""
import math

import torch
import cuda.tile as ct


@ct.kernel
def rowdot_kernel(Q, K, Out, sm_scale, HEAD_DIM: ct.Constant[int], BLOCK_S: ct.Constant[int]):
    bh = ct.bid(0)
    sb = ct.bid(1)
    q = ct.load(Q, index=(bh, sb, 0), shape=(1, BLOCK_S, HEAD_DIM)).astype(ct.float32)
    k = ct.load(K, index=(bh, sb, 0), shape=(1, BLOCK_S, HEAD_DIM)).astype(ct.float32)
    s = ct.sum(q * k, axis=2) * sm_scale
    ct.store(Out, index=(bh, sb), tile=s.astype(Out.dtype))


def rowwise_dot(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    B, H, S, D = q.shape
    qf = q.reshape(B * H, S, D)
    kf = k.reshape(B * H, S, D)
    out = torch.empty((B * H, S), dtype=q.dtype, device=q.device)
    BLOCK_S = 64 if S >= 64 else 16
    grid = (B * H, ct.cdiv(S, BLOCK_S), 1)
    ct.launch(torch.cuda.current_stream(), grid, rowdot_kernel, (qf, kf, out, 1.0 / math.sqrt(D), D, BLOCK_S))
    return out.view(B, H, S)
