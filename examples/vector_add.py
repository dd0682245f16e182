"""Elementwise vector add, ``out = x + y``, one 1-D tile per block.

The smallest useful op: it shows the plain partitioned ``ct.load``/``ct.store`` pair with
zero padding on the ragged last tile, and a host wrapper that picks the tile size.

Checking (``tileport.validators.correctness``; torch is imported only inside functions):
``reference(x, y, out=None)`` is the same op in plain torch; ``make_inputs(shape, dtype, device,
seed)`` builds deterministic arguments for one ``TILEPORT`` shape.
"""

import cuda.tile as ct

# What tileport cannot infer from the code: dtypes, problem sizes and tolerances to test with.
TILEPORT = {
    "dtypes": ["float16", "bfloat16", "float32"],
    "shapes": [{"n": 4096}, {"n": 1 << 20}, {"n": 1_000_003}],
}


@ct.kernel
def vector_add_kernel(x, y, out, TILE: ct.Constant[int]):
    block = ct.bid(0)
    a = ct.load(x, index=(block,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    b = ct.load(y, index=(block,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(block,), tile=a + b)


def vector_add(x, y, out=None):
    """Return ``x + y`` for two contiguous 1-D CUDA tensors of the same dtype."""
    import torch

    if out is None:
        out = torch.empty_like(x)
    n = x.shape[0]
    TILE = 1024
    grid = (ct.cdiv(n, TILE), 1, 1)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, TILE))
    return out


def make_inputs(shape, dtype, device="cuda", seed=0):
    """Deterministic keyword arguments of ``vector_add`` and ``reference`` for one TILEPORT shape."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    n = shape["n"]
    x = torch.randn(n, generator=g, device=device).to(getattr(torch, dtype))
    y = torch.randn(n, generator=g, device=device).to(getattr(torch, dtype))
    return {"x": x, "y": y}


def reference(x, y, out=None):
    """Plain torch ``x + y`` (float32 math, cast back to x's dtype); fills ``out`` when given."""
    result = (x.float() + y.float()).to(x.dtype)
    if out is None:
        return result
    out.copy_(result)
    return out
