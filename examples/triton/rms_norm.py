"""RMSNorm over the last axis in Triton, the twin of ``examples/rms_norm.py``:
``out = x / sqrt(mean(x**2) + eps) * weight``.

One program per row, the whole row in one masked block (``BLOCK_N`` is the next power of two of
the row length, computed by the wrapper). ``triton.autotune`` picks the warp count per row
length; each config is one variant of the analysis.
"""

import triton
import triton.language as tl

TILEPORT = {
    "dtypes": ["float16", "bfloat16", "float32"],
    "shapes": [{"m": 4096, "n": 4096}, {"m": 16, "n": 8192}, {"m": 1000, "n": 768}],
    "tolerances": {"bfloat16": {"atol": 3e-2, "rtol": 3e-2}},
}


@triton.autotune(configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)], key=["n_cols"])
@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, out_ptr, row_stride, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / n_cols
    inv_rms = tl.rsqrt(mean_sq + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * inv_rms * w
    tl.store(out_ptr + row * row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def rms_norm(x, weight, eps=1e-6):
    """RMSNorm of a contiguous (M, N) CUDA tensor with an (N,) weight."""
    import torch

    m, n = x.shape
    out = torch.empty_like(x)
    rms_norm_kernel[(m,)](x, weight, out, x.stride(0), n, eps, BLOCK_N=triton.next_power_of_2(n))
    return out


def make_inputs(shape, dtype, device="cuda", seed=0):
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn((shape["m"], shape["n"]), generator=g, device=device)
    weight = 1.0 + 0.25 * torch.randn(shape["n"], generator=g, device=device)
    return {"x": x.to(getattr(torch, dtype)), "weight": weight.to(getattr(torch, dtype))}


def reference(x, weight, eps=1e-6):
    import torch

    t = x.float()
    inv_rms = torch.rsqrt(t.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (t * inv_rms * weight.float()).to(x.dtype)
