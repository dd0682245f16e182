"""Embedding lookup ``out[i, :] = weight[ids[i], :]`` with pointer gathers.

One block per token: it reads the token's row id, builds a column index tile, and gathers the
row with a mask past ``dim`` (then scatters it, masked, to the output row).

Held-out op for the draft translator (written before the translator was tuned; not tuned on).
"""

import cuda.tile as ct

TILEPORT = {
    "dtypes": ["float16", "float32"],
    "shapes": [{"vocab": 1000, "dim": 256, "tokens": 512}, {"vocab": 50, "dim": 100, "tokens": 33}],
    "params": {"ids": "int32", "dim": "int32"},
    "constants": {"TILE_D": [256]},
}


@ct.kernel
def embedding_kernel(weight, ids, out, dim, TILE_D: ct.Constant[int]):
    i = ct.bid(0)
    token = ct.gather(ids, i)
    cols = ct.arange(TILE_D, dtype=ct.int32)
    in_row = cols < dim
    row = ct.gather(weight, (token, cols), mask=in_row, padding_value=0)
    ct.scatter(out, (i, cols), row, mask=in_row)


def embedding(weight, ids):
    import torch

    vocab, dim = weight.shape
    out = torch.empty((ids.shape[0], dim), dtype=weight.dtype, device=weight.device)
    TILE_D = 1 << max(0, (dim - 1).bit_length())
    ct.launch(torch.cuda.current_stream(), (ids.shape[0], 1, 1), embedding_kernel, (weight, ids, out, dim, TILE_D))
    return out


def make_inputs(shape, dtype, device="cuda", seed=0):
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    cpu = torch.Generator().manual_seed(seed)
    weight = torch.randn((shape["vocab"], shape["dim"]), generator=g, device=device).to(getattr(torch, dtype))
    ids = torch.randint(0, shape["vocab"], (shape["tokens"],), generator=cpu).to(torch.int32).to(device)
    return {"weight": weight, "ids": ids}


def reference(weight, ids):
    return weight[ids.long()]
