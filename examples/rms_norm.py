"""RMSNorm over the last axis: ``out = x / sqrt(mean(x**2) + eps) * weight``.

One block per row. ``CHUNKS`` is an integer structural variant: a row that fits in one tile
(``CHUNKS == 1``) is loaded once and kept in registers; a longer row is walked twice in
``TILE_N``-wide chunks (sum of squares, then normalise), trading a second read for registers.
The host wrapper picks the variant from the row length.

Checking (``tileport.validators.correctness``; torch is imported only inside functions):
``reference(x, weight, eps=1e-6)`` is the same op in plain torch; ``make_inputs(shape, dtype,
device, seed)`` builds deterministic arguments for one ``TILEPORT`` shape.
"""

import cuda.tile as ct

TILEPORT = {
    "dtypes": ["float16", "bfloat16", "float32"],
    "shapes": [{"m": 4096, "n": 4096}, {"m": 16, "n": 8192}, {"m": 1000, "n": 768}],
    "tolerances": {"bfloat16": {"atol": 3e-2, "rtol": 3e-2}},
    "params": {"eps": "float32"},
    # The long-row launch computes CHUNKS from the row length; analyse an 8192-wide row.
    "constants": {"rms_norm_kernel.CHUNKS": [4]},
}

MAX_SINGLE_TILE = 4096


@ct.kernel
def rms_norm_kernel(x, weight, out, eps, TILE_N: ct.Constant[int], CHUNKS: ct.Constant[int]):
    row = ct.bid(0)
    n = x.shape[1]
    if CHUNKS == 1:
        t = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO)
        t = t.astype(ct.float32)
        mean_sq = ct.sum(t * t, axis=1, keepdims=True) / n
        inv_rms = ct.rsqrt(mean_sq + eps)
        w = ct.load(weight, index=(0,), shape=(TILE_N,), padding_mode=ct.PaddingMode.ZERO)
        y = t * inv_rms * ct.reshape(w.astype(ct.float32), (1, TILE_N))
        ct.store(out, index=(row, 0), tile=y.astype(out.dtype))
    else:
        acc = ct.zeros((1, TILE_N), dtype=ct.float32)
        for c in range(CHUNKS):
            t = ct.load(x, index=(row, c), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO)
            t = t.astype(ct.float32)
            acc = acc + t * t
        inv_rms = ct.rsqrt(ct.sum(acc, axis=1, keepdims=True) / n + eps)
        for c in range(CHUNKS):
            t = ct.load(x, index=(row, c), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO)
            w = ct.load(weight, index=(c,), shape=(TILE_N,), padding_mode=ct.PaddingMode.ZERO)
            y = t.astype(ct.float32) * inv_rms * ct.reshape(w.astype(ct.float32), (1, TILE_N))
            ct.store(out, index=(row, c), tile=y.astype(out.dtype))


def rms_norm(x, weight, eps=1e-6):
    """RMSNorm of a contiguous (M, N) CUDA tensor with an (N,) weight."""
    import torch

    m, n = x.shape
    out = torch.empty_like(x)
    stream = torch.cuda.current_stream()
    if n <= MAX_SINGLE_TILE:
        ct.launch(stream, (m, 1, 1), rms_norm_kernel, (x, weight, out, eps, 4096, 1))
    else:
        chunks = ct.cdiv(n, 2048)
        ct.launch(stream, (m, 1, 1), rms_norm_kernel, (x, weight, out, eps, 2048, chunks))
    return out


def make_inputs(shape, dtype, device="cuda", seed=0):
    """Deterministic keyword arguments of ``rms_norm`` and ``reference`` for one TILEPORT shape."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn((shape["m"], shape["n"]), generator=g, device=device)
    weight = 1.0 + 0.25 * torch.randn(shape["n"], generator=g, device=device)
    return {"x": x.to(getattr(torch, dtype)), "weight": weight.to(getattr(torch, dtype))}


def reference(x, weight, eps=1e-6):
    """Plain torch RMSNorm in float32, cast back to x's dtype."""
    import torch

    t = x.float()
    inv_rms = torch.rsqrt(t.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (t * inv_rms * weight.float()).to(x.dtype)
