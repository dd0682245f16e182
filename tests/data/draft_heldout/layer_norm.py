"""LayerNorm over the last axis: ``out = (x - mean) / sqrt(var + eps) * weight + bias``.

One block per row; the row fits in one ``TILE_N`` tile (zero padding past ``n``, masked out of
the variance with ``ct.where``). Statistics in float32, result cast back to x's dtype.

Held-out op for the draft translator (written before the translator was tuned; not tuned on).
"""

import cuda.tile as ct

TILEPORT = {
    "dtypes": ["float16", "float32"],
    "shapes": [{"m": 256, "n": 1024}, {"m": 100, "n": 1000}],
    "tolerances": {"float16": {"atol": 1e-2, "rtol": 1e-2}},
    "params": {"eps": "float32"},
    "constants": {"TILE_N": [1024]},
}


@ct.kernel
def layer_norm_kernel(x, weight, bias, out, eps, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    n = x.shape[1]
    t = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    mean = ct.sum(t, axis=1, keepdims=True) / n
    cols = ct.arange(TILE_N, dtype=ct.int32)
    centered = ct.where(ct.expand_dims(cols < n, 0), t - mean, 0.0)
    var = ct.sum(centered * centered, axis=1, keepdims=True) / n
    inv_std = ct.rsqrt(var + eps)
    w = ct.load(weight, index=(0,), shape=(TILE_N,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    b = ct.load(bias, index=(0,), shape=(TILE_N,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    y = centered * inv_std * ct.reshape(w, (1, TILE_N)) + ct.reshape(b, (1, TILE_N))
    ct.store(out, index=(row, 0), tile=y.astype(out.dtype))


def layer_norm(x, weight, bias, eps=1e-5):
    """LayerNorm of a contiguous (M, N) CUDA tensor, N <= 1024."""
    import torch

    m, n = x.shape
    out = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (m, 1, 1), layer_norm_kernel, (x, weight, bias, out, eps, 1024))
    return out


def make_inputs(shape, dtype, device="cuda", seed=0):
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    m, n = shape["m"], shape["n"]
    x = 2.0 * torch.randn((m, n), generator=g, device=device) + 0.5
    weight = 1.0 + 0.25 * torch.randn(n, generator=g, device=device)
    bias = 0.1 * torch.randn(n, generator=g, device=device)
    t = getattr(torch, dtype)
    return {"x": x.to(t), "weight": weight.to(t), "bias": bias.to(t)}


def reference(x, weight, bias, eps=1e-5):
    import torch

    return torch.nn.functional.layer_norm(x.float(), (x.shape[1],), weight.float(), bias.float(), eps).to(x.dtype)
