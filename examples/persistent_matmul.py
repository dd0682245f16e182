"""Persistent matrix multiply: a fixed grid of blocks strides over all output tiles.

The grid is sized to the number of SMs (times an occupancy factor), not to the problem; each
block loops ``tile = bid, bid + num_blocks, ...`` and maps the linear tile id to (m, n) with a
grouped ("swizzled") order so consecutive tiles of one block reuse the same rows of ``a`` in L2.
The K loop uses ``ct.mma`` into a float32 accumulator, and the kernel carries an occupancy hint.

Checking (``tileport.validators.correctness``; torch is imported only inside functions):
``reference(a, b, num_sms=None)`` is the same op in plain torch; ``make_inputs(shape, dtype, device,
seed)`` builds deterministic arguments for one ``TILEPORT`` shape.
"""

import cuda.tile as ct

TILEPORT = {
    "dtypes": ["float16", "bfloat16"],
    "shapes": [{"m": 4096, "n": 4096, "k": 4096}, {"m": 8192, "n": 1024, "k": 2048}],
    "tolerances": {"float16": {"atol": 5e-2, "rtol": 1e-2}, "bfloat16": {"atol": 1e-1, "rtol": 2e-2}},
}

GROUP_M = 8


@ct.kernel(occupancy=1)
def persistent_matmul_kernel(a, b, c, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int],
                             TILE_K: ct.Constant[int], GROUP: ct.Constant[int]):
    tiles_m = ct.num_tiles(c, axis=0, shape=(TILE_M, TILE_N))
    tiles_n = ct.num_tiles(c, axis=1, shape=(TILE_M, TILE_N))
    num_k = ct.num_tiles(a, axis=1, shape=(TILE_M, TILE_K))
    tiles_per_group = GROUP * tiles_n
    for tile_id in range(ct.bid(0), tiles_m * tiles_n, ct.num_blocks(0)):
        group = tile_id // tiles_per_group
        first_m = group * GROUP
        group_rows = ct.minimum(tiles_m - first_m, GROUP)
        pid_m = first_m + (tile_id % tiles_per_group) % group_rows
        pid_n = (tile_id % tiles_per_group) // group_rows
        acc = ct.zeros((TILE_M, TILE_N), dtype=ct.float32)
        for k in range(num_k):
            a_tile = ct.load(a, index=(pid_m, k), shape=(TILE_M, TILE_K),
                             padding_mode=ct.PaddingMode.ZERO)
            b_tile = ct.load(b, index=(k, pid_n), shape=(TILE_K, TILE_N),
                             padding_mode=ct.PaddingMode.ZERO)
            acc = ct.mma(a_tile, b_tile, acc)
        ct.store(c, index=(pid_m, pid_n), tile=acc.astype(c.dtype))


def persistent_matmul(a, b, num_sms=None):
    """``a @ b`` with one persistent block per SM."""
    import torch

    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    if num_sms is None:
        num_sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    TILE_M, TILE_N, TILE_K = 128, 128, 64
    tiles = ct.cdiv(m, TILE_M) * ct.cdiv(n, TILE_N)
    grid = (min(num_sms, tiles), 1, 1)
    ct.launch(torch.cuda.current_stream(), grid, persistent_matmul_kernel,
              (a, b, c, TILE_M, TILE_N, TILE_K, GROUP_M))
    return c


def make_inputs(shape, dtype, device="cuda", seed=0):
    """Deterministic keyword arguments of ``persistent_matmul`` and ``reference`` for one TILEPORT shape.

    Entries are scaled by ``k ** -0.25`` so that the products have unit variance.
    """
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    m, n, k = shape["m"], shape["n"], shape["k"]
    a = torch.randn((m, k), generator=g, device=device) * k ** -0.25
    b = torch.randn((k, n), generator=g, device=device) * k ** -0.25
    return {"a": a.to(getattr(torch, dtype)), "b": b.to(getattr(torch, dtype))}


def reference(a, b, num_sms=None):
    """Plain torch ``a @ b`` computed in float64 (no TF32 question), cast back to a's dtype."""
    return (a.double() @ b.double()).to(a.dtype)
