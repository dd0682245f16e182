"""2-D transpose ``out = x.T`` by tiles: load a (TILE_M, TILE_N) tile, transpose it in registers,
store it at the mirrored tile index. Zero padding on ragged edges (stores are clipped).

Held-out op for the draft translator (written before the translator was tuned; not tuned on).
"""

import cuda.tile as ct

TILEPORT = {
    "dtypes": ["float16", "float32"],
    "shapes": [{"m": 1024, "n": 512}, {"m": 1000, "n": 300}],
}


@ct.kernel
def transpose_kernel(x, out, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    t = ct.load(x, index=(bm, bn), shape=(TILE_M, TILE_N), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(bn, bm), tile=ct.transpose(t))


def transpose(x):
    import torch

    m, n = x.shape
    out = torch.empty((n, m), dtype=x.dtype, device=x.device)
    TILE_M, TILE_N = 64, 64
    grid = (ct.cdiv(m, TILE_M), ct.cdiv(n, TILE_N), 1)
    ct.launch(torch.cuda.current_stream(), grid, transpose_kernel, (x, out, TILE_M, TILE_N))
    return out


def make_inputs(shape, dtype, device="cuda", seed=0):
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    return {"x": torch.randn((shape["m"], shape["n"]), generator=g, device=device).to(getattr(torch, dtype))}


def reference(x):
    return x.t().contiguous()
