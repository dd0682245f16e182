"""Row softmax over the last axis of a (M, N) matrix, optionally with a fused input scale.

Two kernels, chosen by the host wrapper:

* ``softmax_row_kernel`` — a row fits in one tile: one view load through
  ``tiled_view(..., padding_mode=NEG_INF)`` so the padded tail contributes ``exp(-inf) = 0``,
  then max, exp, sum and divide in registers.
* ``softmax_chunked_kernel`` — long rows: an online pass over column tiles keeps a running
  max and a rescaled running sum, then a second pass writes the normalised values.

``FUSE_SCALE`` is a structural variant: with it the kernel multiplies by ``scale`` before the
max (one extra ``mulf`` and one extra scalar parameter use); without it that code is absent.

Checking (``tileport.validators.correctness``; torch is imported only inside functions):
``reference(x, scale=None)`` is the same op in plain torch; ``make_inputs(shape, dtype, device,
seed)`` builds deterministic arguments for one ``TILEPORT`` shape; ``check_variants()`` lists the
extra keyword arguments each shape is also checked with.
"""

import cuda.tile as ct

TILEPORT = {
    "dtypes": ["float16", "bfloat16", "float32"],
    "shapes": [{"m": 4096, "n": 4096}, {"m": 1024, "n": 1000}, {"m": 64, "n": 32768}],
    # The wrapper sizes the row kernel's TILE_N from the row length at run time: analyse 1024.
    "constants": {"softmax_row_kernel.TILE_N": [1024]},
    "params": {"scale": "float32"},
}

ROW_LIMIT = 8192  # rows longer than this use the chunked kernel


@ct.kernel
def softmax_row_kernel(x, out, scale, TILE_N: ct.Constant[int], FUSE_SCALE: ct.Constant[bool]):
    row = ct.bid(0)
    rows_in = x.tiled_view((1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF)
    t = rows_in.load((row, 0)).astype(ct.float32)
    if FUSE_SCALE:
        t = t * scale
    row_max = ct.max(t, axis=1, keepdims=True)
    e = ct.exp(t - row_max)
    denom = ct.sum(e, axis=1, keepdims=True)
    rows_out = out.tiled_view((1, TILE_N))
    rows_out.store((row, 0), (e / denom).astype(out.dtype))


@ct.kernel
def softmax_chunked_kernel(x, out, scale, TILE_N: ct.Constant[int], FUSE_SCALE: ct.Constant[bool]):
    row = ct.bid(0)
    cols = x.tiled_view((1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF)
    n_chunks = cols.num_tiles(1)
    running_max = ct.full((1, 1), float("-inf"), dtype=ct.float32)
    running_sum = ct.zeros((1, 1), dtype=ct.float32)
    for j in range(n_chunks):
        t = cols.load((row, j)).astype(ct.float32)
        if FUSE_SCALE:
            t = t * scale
        new_max = ct.maximum(running_max, ct.max(t, axis=1, keepdims=True))
        running_sum = running_sum * ct.exp(running_max - new_max) \
            + ct.sum(ct.exp(t - new_max), axis=1, keepdims=True)
        running_max = new_max
    inv_sum = 1.0 / running_sum
    dst = out.tiled_view((1, TILE_N))
    for j in range(n_chunks):
        t = cols.load((row, j)).astype(ct.float32)
        if FUSE_SCALE:
            t = t * scale
        dst.store((row, j), (ct.exp(t - running_max) * inv_sum).astype(out.dtype))


def _next_power_of_2(n):
    return 1 << max(0, (n - 1).bit_length())


def softmax(x, scale=None):
    """Softmax over the last axis of a contiguous 2-D CUDA tensor; ``scale`` multiplies x first."""
    import torch

    m, n = x.shape
    out = torch.empty_like(x)
    fuse = scale is not None
    scale_value = float(scale) if fuse else 1.0
    stream = torch.cuda.current_stream()
    if n <= ROW_LIMIT:
        TILE_N = _next_power_of_2(n)
        ct.launch(stream, (m, 1, 1), softmax_row_kernel, (x, out, scale_value, TILE_N, fuse))
    else:
        ct.launch(stream, (m, 1, 1), softmax_chunked_kernel, (x, out, scale_value, 2048, fuse))
    return out


def make_inputs(shape, dtype, device="cuda", seed=0):
    """Deterministic keyword arguments of ``softmax`` and ``reference`` for one TILEPORT shape."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    x = 3.0 * torch.randn((shape["m"], shape["n"]), generator=g, device=device)
    return {"x": x.to(getattr(torch, dtype))}


def check_variants():
    """Extra keyword arguments to check each shape with: unscaled, and the fused-scale kernel variant."""
    return [{}, {"scale": 0.37}]


def reference(x, scale=None):
    """Plain torch softmax over the last axis in float32 (``x * scale`` first), cast back to x's dtype."""
    import torch

    t = x.float()
    if scale is not None:
        t = t * float(scale)
    return torch.softmax(t, dim=-1).to(x.dtype)
