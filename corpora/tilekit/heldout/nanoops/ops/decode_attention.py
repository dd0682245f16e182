"""Single-token decode attention over a (batch, heads, seq, dim) KV cache."""
import math

import torch
import cuda.tile as ct

from .._common import run_kernel


@ct.kernel
def decode_attn(q, k, v, o, scale, BLOCK_S: ct.Constant[int], DIM: ct.Constant[int]):
    bh = ct.bid(0)
    qt = ct.reshape(ct.load(q, index=(bh, 0), shape=(1, DIM)), (1, DIM)).astype(ct.float32)
    m = ct.full((1, 1), float("-inf"), dtype=ct.float32)
    l = ct.zeros((1, 1), dtype=ct.float32)
    acc = ct.zeros((1, DIM), dtype=ct.float32)
    for j in range(ct.num_tiles(k, axis=1, shape=(1, BLOCK_S, DIM))):
        kt = ct.reshape(ct.load(k, index=(bh, j, 0), shape=(1, BLOCK_S, DIM), padding_mode=ct.PaddingMode.ZERO),
                        (BLOCK_S, DIM)).astype(ct.float32)
        s = ct.reshape(ct.sum(kt * qt, axis=1), (1, BLOCK_S)) * scale
        m2 = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
        p = ct.exp(s - m2)
        a = ct.exp(m - m2)
        l = l * a + ct.sum(p, axis=1, keepdims=True)
        vt = ct.reshape(ct.load(v, index=(bh, j, 0), shape=(1, BLOCK_S, DIM), padding_mode=ct.PaddingMode.ZERO),
                        (BLOCK_S, DIM)).astype(ct.float32)
        acc = acc * a + ct.reshape(ct.sum(ct.reshape(p, (BLOCK_S, 1)) * vt, axis=0), (1, DIM))
        m = m2
    ct.store(o, index=(bh, 0), tile=(acc / l).astype(o.dtype))


def decode_attention(q, k_cache, v_cache):
    """q: (batch, heads, dim); caches: (batch, heads, seq, dim)."""
    batch, heads, seq, dim = k_cache.shape
    assert q.shape == (batch, heads, dim)
    assert q.dtype == torch.float16 or q.dtype == torch.bfloat16, "decode_attention takes fp16/bf16"
    stream = torch.cuda.Stream()
    done = torch.cuda.Event()
    with torch.cuda.stream(stream):
        o = torch.empty(batch * heads, dim, dtype=q.dtype, device="cuda")
        run_kernel(decode_attn, (batch * heads, 1, 1),
                   (q.reshape(batch * heads, dim), k_cache.reshape(batch * heads, seq, dim),
                    v_cache.reshape(batch * heads, seq, dim), o, 1.0 / math.sqrt(dim), 64, dim), stream=stream)
        done.record(stream)
    torch.cuda.current_stream().wait_event(done)
    return o.view(batch, heads, dim)
