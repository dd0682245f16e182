"""Row softmax over the last axis of a (M, N) matrix in Triton, the twin of ``examples/softmax.py``.

One program per row: the row is loaded as one masked block (``other=-inf`` so the padded tail
contributes ``exp(-inf) = 0``), then max, exp, sum and divide in registers. ``BLOCK_N`` comes from
``triton.heuristics`` (the next power of two of the row length); ``FUSE_SCALE`` is a structural
variant (the wrapper passes it), as in the cuTile Python version.

``reference``, ``make_inputs`` and ``check_variants`` are those of the cuTile Python twin, so both
sides are checked and timed on the same inputs.
"""

import triton
import triton.language as tl

TILEPORT = {
    "dtypes": ["float16", "bfloat16", "float32"],
    "shapes": [{"m": 4096, "n": 4096}, {"m": 1024, "n": 1000}, {"m": 64, "n": 32768}],
}


@triton.heuristics({"BLOCK_N": lambda args: triton.next_power_of_2(args["n_cols"])})
@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, scale,
                   BLOCK_N: tl.constexpr, FUSE_SCALE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    if FUSE_SCALE:
        x = x * scale
    x_max = tl.max(x, axis=0)
    e = tl.exp(x - x_max)
    denom = tl.sum(e, axis=0)
    y = e / denom
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x, scale=None):
    """Softmax over the last axis of a contiguous 2-D CUDA tensor; ``scale`` multiplies x first."""
    import torch

    m, n = x.shape
    out = torch.empty_like(x)
    fuse = scale is not None
    softmax_kernel[(m,)](x, out, x.stride(0), out.stride(0), n, float(scale) if fuse else 1.0, FUSE_SCALE=fuse)
    return out


def make_inputs(shape, dtype, device="cuda", seed=0):
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    x = 3.0 * torch.randn((shape["m"], shape["n"]), generator=g, device=device)
    return {"x": x.to(getattr(torch, dtype))}


def check_variants():
    return [{}, {"scale": 0.37}]


def reference(x, scale=None):
    import torch

    t = x.float()
    if scale is not None:
        t = t * float(scale)
    return torch.softmax(t, dim=-1).to(x.dtype)
