"""Single-token decode attention over a paged-free KV cache (B, H, S, D)."""
import math

import torch
import cuda.tile as ct

from .._compat import pow2, stream


@ct.kernel
def decode_kernel(q, k, v, o, sm_scale, BLOCK_D: ct.Constant[int], BLOCK_S: ct.Constant[int]):
    b, h = ct.bid(0), ct.bid(1)
    qt = ct.reshape(ct.load(q, index=(b, h, 0), shape=(1, 1, BLOCK_D), padding_mode=ct.PaddingMode.ZERO), (1, BLOCK_D)).astype(ct.float32)
    m = ct.full((1, 1), -float("inf"), dtype=ct.float32)
    l = ct.zeros((1, 1), dtype=ct.float32)
    acc = ct.zeros((1, BLOCK_D), dtype=ct.float32)
    for j in range(ct.num_tiles(k, axis=2, shape=(1, 1, BLOCK_S, BLOCK_D))):
        kt = ct.reshape(ct.load(k, index=(b, h, j, 0), shape=(1, 1, BLOCK_S, BLOCK_D), padding_mode=ct.PaddingMode.ZERO), (BLOCK_S, BLOCK_D)).astype(ct.float32)
        vt = ct.reshape(ct.load(v, index=(b, h, j, 0), shape=(1, 1, BLOCK_S, BLOCK_D), padding_mode=ct.PaddingMode.ZERO), (BLOCK_S, BLOCK_D)).astype(ct.float32)
        s = ct.sum(kt * qt, axis=1, keepdims=True) * sm_scale
        s = ct.reshape(s, (1, BLOCK_S))
        m2 = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
        p = ct.exp(s - m2)
        a = ct.exp(m - m2)
        l = l * a + ct.sum(p, axis=1, keepdims=True)
        acc = ct.mma(p, vt, acc * a)
        m = m2
    ct.store(o, index=(b, h, 0), tile=ct.reshape((acc / l).astype(o.dtype), (1, 1, BLOCK_D)))


class DecodeAttention:
    block_s = 64

    def __init__(self, num_heads):
        self.num_heads = num_heads
        self._kernel = decode_kernel

    def __call__(self, q, k_cache, v_cache):
        bsz = q.shape[0]
        head_dim = q.shape[-1]
        o = torch.empty_like(q)
        launch = ct.launch
        launch(stream(), (bsz, self.num_heads, 1), self._kernel,
               (q, k_cache, v_cache, o, 1.0 / math.sqrt(head_dim), pow2(head_dim), self.block_s))
        return o
