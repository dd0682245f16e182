"""Tiled matrix multiply ``c = a @ b`` with ``ct.mma`` and a float32 accumulator.

Each block owns one (TILE_M, TILE_N) output tile and walks K in TILE_K steps. The host wrapper
dispatches between two tile configurations (a structural variant: different tile shapes change
the loads, the MMA shape and the loop trip count): large problems use 128x128x64 tiles, small
ones 64x64x32 so that enough blocks exist to fill the GPU.

Checking (``tileport.validators.correctness``; torch is imported only inside functions):
``reference(a, b)`` is the same op in plain torch; ``make_inputs(shape, dtype, device, seed)``
builds deterministic arguments for one ``TILEPORT`` shape.
"""

import cuda.tile as ct

TILEPORT = {
    "dtypes": ["float16", "bfloat16"],
    "shapes": [{"m": 4096, "n": 4096, "k": 4096}, {"m": 512, "n": 512, "k": 1024},
               {"m": 1000, "n": 1000, "k": 1000}],
    "tolerances": {"float16": {"atol": 5e-2, "rtol": 1e-2}, "bfloat16": {"atol": 1e-1, "rtol": 2e-2}},
}

LARGE_PROBLEM = 2048 * 2048


@ct.kernel
def matmul_kernel(a, b, c, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int],
                  TILE_K: ct.Constant[int]):
    pid_m = ct.bid(0)
    pid_n = ct.bid(1)
    num_k = ct.num_tiles(a, axis=1, shape=(TILE_M, TILE_K))
    acc = ct.zeros((TILE_M, TILE_N), dtype=ct.float32)
    for k in range(num_k):
        a_tile = ct.load(a, index=(pid_m, k), shape=(TILE_M, TILE_K), padding_mode=ct.PaddingMode.ZERO)
        b_tile = ct.load(b, index=(k, pid_n), shape=(TILE_K, TILE_N), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a_tile, b_tile, acc)
    ct.store(c, index=(pid_m, pid_n), tile=acc.astype(c.dtype))


def matmul(a, b):
    """``a @ b`` for contiguous (M, K) and (K, N) CUDA tensors of one dtype."""
    import torch

    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    if m * n >= LARGE_PROBLEM:
        tm, tn, tk = 128, 128, 64
    else:
        tm, tn, tk = 64, 64, 32
    grid = (ct.cdiv(m, tm), ct.cdiv(n, tn), 1)
    ct.launch(torch.cuda.current_stream(), grid, matmul_kernel, (a, b, c, tm, tn, tk))
    return c


def make_inputs(shape, dtype, device="cuda", seed=0):
    """Deterministic keyword arguments of ``matmul`` and ``reference`` for one TILEPORT shape.

    Entries are scaled by ``k ** -0.25`` so that the products have unit variance.
    """
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    m, n, k = shape["m"], shape["n"], shape["k"]
    a = torch.randn((m, k), generator=g, device=device) * k ** -0.25
    b = torch.randn((k, n), generator=g, device=device) * k ** -0.25
    return {"a": a.to(getattr(torch, dtype)), "b": b.to(getattr(torch, dtype))}


def reference(a, b):
    """Plain torch ``a @ b`` computed in float64 (no TF32 question), cast back to a's dtype."""
    return (a.double() @ b.double()).to(a.dtype)


def flops(shape):
    """Floating-point operations of one call (multiply and add counted apart): the perf gate reports each side's
    FLOP/s against a cuBLAS GEMM measured on the same GPU."""
    return 2 * shape["m"] * shape["n"] * shape["k"]
