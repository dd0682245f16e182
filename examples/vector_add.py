"""Elementwise vector add, ``out = x + y``, one 1-D tile per block.

The smallest useful op: it shows the plain partitioned ``ct.load``/``ct.store`` pair with
zero padding on the ragged last tile, and a host wrapper that picks the tile size.
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
