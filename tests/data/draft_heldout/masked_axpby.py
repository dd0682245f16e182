"""Masked elementwise ``out = clamp(alpha * x + beta * y, -limit, limit)`` over a 1-D array of any length.

Pointer-style: offsets from ``ct.arange``, ``ct.gather``/``ct.scatter`` with a mask for the
ragged last tile; three float32 scalar parameters.

Held-out op for the draft translator (written before the translator was tuned; not tuned on).
"""

import cuda.tile as ct

TILEPORT = {
    "dtypes": ["float16", "float32"],
    "shapes": [{"n": 4096}, {"n": 100_003}],
    "params": {"alpha": "float32", "beta": "float32", "limit": "float32", "n": "int32"},
}


@ct.kernel
def masked_axpby_kernel(x, y, out, n, alpha, beta, limit, TILE: ct.Constant[int]):
    block = ct.bid(0)
    offs = block * TILE + ct.arange(TILE, dtype=ct.int32)
    valid = offs < n
    a = ct.gather(x, offs, mask=valid, padding_value=0.0).astype(ct.float32)
    b = ct.gather(y, offs, mask=valid, padding_value=0.0).astype(ct.float32)
    r = alpha * a + beta * b
    r = ct.minimum(ct.maximum(r, -limit), limit)
    ct.scatter(out, offs, r.astype(out.dtype), mask=valid)


def masked_axpby(x, y, alpha=0.75, beta=-1.25, limit=2.0):
    import torch

    n = x.shape[0]
    out = torch.empty_like(x)
    TILE = 512
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(n, TILE), 1, 1), masked_axpby_kernel,
              (x, y, out, n, float(alpha), float(beta), float(limit), TILE))
    return out


def make_inputs(shape, dtype, device="cuda", seed=0):
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    n = shape["n"]
    t = getattr(torch, dtype)
    return {"x": torch.randn(n, generator=g, device=device).to(t),
            "y": torch.randn(n, generator=g, device=device).to(t)}


def reference(x, y, alpha=0.75, beta=-1.25, limit=2.0):
    import torch

    return torch.clamp(alpha * x.float() + beta * y.float(), -limit, limit).to(x.dtype)
