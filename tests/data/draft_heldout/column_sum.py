"""Column sums ``out[j] = sum_i x[i, j]``: a reduction along axis 0.

Each block owns TILE_N columns and walks the rows in TILE_M steps, accumulating a float32
(TILE_M, TILE_N) tile; one ``ct.sum(axis=0)`` at the end. Result cast to out's dtype.

Held-out op for the draft translator (written before the translator was tuned; not tuned on).
"""

import cuda.tile as ct

TILEPORT = {
    "dtypes": ["float16", "float32"],
    "shapes": [{"m": 4096, "n": 1024}, {"m": 777, "n": 300}],
    "tolerances": {"float16": {"atol": 5e-2, "rtol": 1e-2}},
}


@ct.kernel
def column_sum_kernel(x, out, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int]):
    bn = ct.bid(0)
    num_m = ct.num_tiles(x, axis=0, shape=(TILE_M, TILE_N))
    acc = ct.zeros((TILE_M, TILE_N), dtype=ct.float32)
    for i in range(num_m):
        t = ct.load(x, index=(i, bn), shape=(TILE_M, TILE_N), padding_mode=ct.PaddingMode.ZERO)
        acc = acc + t.astype(ct.float32)
    total = ct.sum(acc, axis=0)
    ct.store(out, index=(bn,), tile=total.astype(out.dtype))


def column_sum(x):
    import torch

    m, n = x.shape
    out = torch.empty((n,), dtype=x.dtype, device=x.device)
    TILE_M, TILE_N = 32, 128
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(n, TILE_N), 1, 1), column_sum_kernel, (x, out, TILE_M, TILE_N))
    return out


def make_inputs(shape, dtype, device="cuda", seed=0):
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    return {"x": torch.randn((shape["m"], shape["n"]), generator=g, device=device).to(getattr(torch, dtype))}


def reference(x):
    return x.double().sum(dim=0).to(x.dtype)
