"""Flash-attention forward: ``softmax(q @ k.T * sm_scale) @ v`` without materialising the scores.

Q, K, V and O are (batch*heads, seq, HEAD_DIM). Each block owns TILE_M query rows and walks the
keys in TILE_N steps (the K loop), keeping a running row max ``m_i``, a running denominator
``l_i`` and an unnormalised float32 accumulator (online softmax). Scores are scaled by
``sm_scale * log2(e)`` so the exponentials are ``exp2`` with flush-to-zero, and the final divide
uses approximate rounding — the fast-math choices a port must keep.

Keys past the end of the sequence are masked with ``-inf`` (the view load pads them with zeros).
``CAUSAL`` is a structural variant: it shortens the K loop to the diagonal and also masks the
scores above it.

Checking (``tileport.validators.correctness``; torch is imported only inside functions):
``reference(q, k, v, causal=False, sm_scale=None)`` is the same op in plain torch;
``make_inputs(shape, dtype, device, seed)`` builds deterministic arguments for one ``TILEPORT``
shape; ``check_variants()`` lists the extra keyword arguments each shape is also checked with.
"""

import cuda.tile as ct

TILEPORT = {
    "dtypes": ["float16", "bfloat16"],
    "shapes": [{"bh": 32, "seq": 1024, "head_dim": 64}, {"bh": 16, "seq": 4096, "head_dim": 128}],
    "tolerances": {"float16": {"atol": 2e-2, "rtol": 2e-2}, "bfloat16": {"atol": 5e-2, "rtol": 5e-2}},
    "constants": {"HEAD_DIM": [64]},
    "params": {"sm_scale": "float32"},
}

LOG2E = 1.4426950408889634


@ct.kernel
def attention_fwd_kernel(q, k, v, o, sm_scale, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int],
                         HEAD_DIM: ct.Constant[int], CAUSAL: ct.Constant[bool]):
    m_block = ct.bid(0)
    bh = ct.bid(1)
    qk_scale = sm_scale * LOG2E

    q_tile = ct.load(q, index=(bh, m_block, 0), shape=(1, TILE_M, HEAD_DIM),
                     padding_mode=ct.PaddingMode.ZERO)
    q_tile = ct.reshape(q_tile, (TILE_M, HEAD_DIM))

    m_i = ct.full((TILE_M, 1), float("-inf"), dtype=ct.float32)
    l_i = ct.zeros((TILE_M, 1), dtype=ct.float32)
    acc = ct.zeros((TILE_M, HEAD_DIM), dtype=ct.float32)

    seq_k = k.shape[1]
    n_blocks = ct.num_tiles(k, axis=1, shape=(1, TILE_N, HEAD_DIM))
    if CAUSAL:
        n_blocks = ct.minimum(n_blocks, ct.cdiv((m_block + 1) * TILE_M, TILE_N))
        rows = m_block * TILE_M + ct.arange(TILE_M, dtype=ct.int32)

    for j in range(n_blocks):
        # K is loaded transposed, (HEAD_DIM, TILE_N), by permuting the last two array axes.
        k_t = ct.load(k, index=(bh, 0, j), shape=(1, HEAD_DIM, TILE_N), order=(0, 2, 1),
                      padding_mode=ct.PaddingMode.ZERO)
        k_t = ct.reshape(k_t, (HEAD_DIM, TILE_N))
        scores = ct.mma(q_tile, k_t, ct.zeros((TILE_M, TILE_N), dtype=ct.float32)) * qk_scale
        cols = j * TILE_N + ct.arange(TILE_N, dtype=ct.int32)
        visible = ct.expand_dims(cols < seq_k, 0)  # keys past the end were zero-padded
        if CAUSAL:
            visible = visible & (ct.expand_dims(rows, 1) >= ct.expand_dims(cols, 0))
        scores = ct.where(visible, scores, float("-inf"))
        m_new = ct.maximum(m_i, ct.max(scores, axis=1, keepdims=True))
        p = ct.exp2(scores - m_new, flush_to_zero=True)
        alpha = ct.exp2(m_i - m_new, flush_to_zero=True)
        l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)
        v_tile = ct.load(v, index=(bh, j, 0), shape=(1, TILE_N, HEAD_DIM),
                         padding_mode=ct.PaddingMode.ZERO)
        v_tile = ct.reshape(v_tile, (TILE_N, HEAD_DIM))
        acc = ct.mma(p.astype(v.dtype), v_tile, acc * alpha)
        m_i = m_new

    out = ct.truediv(acc, l_i, rounding_mode=ct.RoundingMode.APPROX)
    ct.store(o, index=(bh, m_block, 0), tile=ct.reshape(out.astype(o.dtype), (1, TILE_M, HEAD_DIM)))


def attention(q, k, v, causal=False, sm_scale=None):
    """Attention over contiguous (B*H, S, D) CUDA tensors; returns a tensor like ``q``."""
    import torch

    bh, seq, head_dim = q.shape
    if sm_scale is None:
        sm_scale = head_dim ** -0.5
    o = torch.empty_like(q)
    TILE_M, TILE_N = 128, 64
    grid = (ct.cdiv(seq, TILE_M), bh, 1)
    ct.launch(torch.cuda.current_stream(), grid, attention_fwd_kernel,
              (q, k, v, o, float(sm_scale), TILE_M, TILE_N, head_dim, causal))
    return o


def make_inputs(shape, dtype, device="cuda", seed=0):
    """Deterministic keyword arguments of ``attention`` and ``reference`` for one TILEPORT shape."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    dims = (shape["bh"], shape["seq"], shape["head_dim"])
    q, k, v = (torch.randn(dims, generator=g, device=device).to(getattr(torch, dtype)) for _ in range(3))
    return {"q": q, "k": k, "v": v}


def check_variants():
    """Extra keyword arguments to check each shape with: full attention and the causal kernel variant."""
    return [{"causal": False}, {"causal": True}]


def reference(q, k, v, causal=False, sm_scale=None):
    """Plain torch attention computed in float64 (scores materialised), cast back to q's dtype."""
    import torch

    seq = q.shape[1]
    if sm_scale is None:
        sm_scale = q.shape[2] ** -0.5
    scores = (q.double() @ k.double().transpose(1, 2)) * float(sm_scale)
    if causal:
        above = torch.ones((seq, k.shape[1]), dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(above, float("-inf"))
    return (torch.softmax(scores, dim=-1) @ v.double()).to(q.dtype)
