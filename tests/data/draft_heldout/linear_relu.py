"""GEMM with a bias + activation epilogue: ``c = act(a @ b + bias)``.

Float32 MMA accumulator over K in TILE_K steps; the bias row (TILE_N,) is broadcast over the
tile; ``RELU`` is a structural variant (a constant branch: ReLU or identity).

Held-out op for the draft translator (written before the translator was tuned; not tuned on).
"""

import cuda.tile as ct

TILEPORT = {
    "dtypes": ["float16", "bfloat16"],
    "shapes": [{"m": 1024, "n": 1024, "k": 512}, {"m": 300, "n": 200, "k": 100}],
    "tolerances": {"float16": {"atol": 5e-2, "rtol": 1e-2}, "bfloat16": {"atol": 1e-1, "rtol": 2e-2}},
}


@ct.kernel
def linear_relu_kernel(a, b, bias, c, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int],
                       TILE_K: ct.Constant[int], RELU: ct.Constant[bool]):
    pid_m = ct.bid(0)
    pid_n = ct.bid(1)
    num_k = ct.num_tiles(a, axis=1, shape=(TILE_M, TILE_K))
    acc = ct.zeros((TILE_M, TILE_N), dtype=ct.float32)
    for k in range(num_k):
        a_tile = ct.load(a, index=(pid_m, k), shape=(TILE_M, TILE_K), padding_mode=ct.PaddingMode.ZERO)
        b_tile = ct.load(b, index=(k, pid_n), shape=(TILE_K, TILE_N), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a_tile, b_tile, acc)
    bias_tile = ct.load(bias, index=(pid_n,), shape=(TILE_N,), padding_mode=ct.PaddingMode.ZERO)
    acc = acc + ct.reshape(bias_tile.astype(ct.float32), (1, TILE_N))
    if RELU:
        acc = ct.maximum(acc, 0.0)
    ct.store(c, index=(pid_m, pid_n), tile=acc.astype(c.dtype))


def linear_relu(a, b, bias, relu=True):
    import torch

    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    tm, tn, tk = 64, 64, 32
    grid = (ct.cdiv(m, tm), ct.cdiv(n, tn), 1)
    ct.launch(torch.cuda.current_stream(), grid, linear_relu_kernel, (a, b, bias, c, tm, tn, tk, relu))
    return c


def make_inputs(shape, dtype, device="cuda", seed=0):
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    m, n, k = shape["m"], shape["n"], shape["k"]
    t = getattr(torch, dtype)
    a = torch.randn((m, k), generator=g, device=device) * k ** -0.25
    b = torch.randn((k, n), generator=g, device=device) * k ** -0.25
    bias = torch.randn(n, generator=g, device=device)
    return {"a": a.to(t), "b": b.to(t), "bias": bias.to(t)}


def check_variants():
    return [{"relu": True}, {"relu": False}]


def reference(a, b, bias, relu=True):
    import torch

    r = a.double() @ b.double() + bias.double()
    return (torch.relu(r) if relu else r).to(a.dtype)
