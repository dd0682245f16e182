"""Fused SwiGLU activation: ``out = silu(x[:, :N]) * x[:, N:]`` for ``x`` of shape (M, 2N).

The gate and up halves are two sliced views of the same input array (``Array.slice``), so
the kernel reads each element once and never materialises ``silu(gate)``. Math runs in
float32 and the result is cast back to the output dtype.

Checking (``tileport.validators.correctness``; torch is imported only inside functions):
``reference(x)`` is the same op in plain torch; ``make_inputs(shape, dtype, device, seed)`` builds
deterministic arguments for one ``TILEPORT`` shape.
"""

import cuda.tile as ct

TILEPORT = {
    "dtypes": ["float16", "bfloat16", "float32"],
    "shapes": [{"m": 128, "n": 4096}, {"m": 4096, "n": 11008}, {"m": 33, "n": 1000}],
    "tolerances": {"float16": {"atol": 2e-3, "rtol": 2e-3}},
}


@ct.kernel
def silu_and_mul_kernel(x, out, n, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int]):
    row_block = ct.bid(0)
    col_block = ct.bid(1)
    gate_half = x.slice(axis=1, start=0, stop=n)
    up_half = x.slice(axis=1, start=n, stop=2 * n)
    gate = ct.load(gate_half, index=(row_block, col_block), shape=(TILE_M, TILE_N),
                   padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    up = ct.load(up_half, index=(row_block, col_block), shape=(TILE_M, TILE_N),
                 padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    silu = gate / (1.0 + ct.exp(-gate))
    ct.store(out, index=(row_block, col_block), tile=(silu * up).astype(out.dtype))


def silu_and_mul(x):
    """SwiGLU of a contiguous (M, 2N) CUDA tensor; returns an (M, N) tensor of x's dtype."""
    import torch

    m, two_n = x.shape
    n = two_n // 2
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    TILE_M, TILE_N = 16, 256
    grid = (ct.cdiv(m, TILE_M), ct.cdiv(n, TILE_N), 1)
    ct.launch(torch.cuda.current_stream(), grid, silu_and_mul_kernel, (x, out, n, TILE_M, TILE_N))
    return out


def make_inputs(shape, dtype, device="cuda", seed=0):
    """Deterministic keyword arguments of ``silu_and_mul`` and ``reference`` for one TILEPORT shape."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    x = 2.0 * torch.randn((shape["m"], 2 * shape["n"]), generator=g, device=device)
    return {"x": x.to(getattr(torch, dtype))}


def reference(x):
    """Plain torch ``silu(x[:, :N]) * x[:, N:]`` in float32, cast back to x's dtype."""
    import torch

    n = x.shape[1] // 2
    gate, up = x[:, :n].float(), x[:, n:].float()
    return (torch.nn.functional.silu(gate) * up).to(x.dtype)
