"""Tiled matrix multiply ``c = a @ b`` in Triton, the twin of ``examples/matmul.py``.

Each program owns one (BLOCK_M, BLOCK_N) output tile and walks K in BLOCK_K steps with ``tl.dot``
into a float32 accumulator; the block pointers advance by ``BLOCK_K`` along K each step.
``triton.autotune`` chooses between the two tile configurations the cuTile Python version
dispatches between (128x128x64 and 64x64x32); the grid is a lambda of the chosen config.
"""

import triton
import triton.language as tl

TILEPORT = {
    "dtypes": ["float16", "bfloat16"],
    "shapes": [{"m": 4096, "n": 4096, "k": 4096}, {"m": 512, "n": 512, "k": 1024},
               {"m": 1000, "n": 1000, "k": 1000}],
    "tolerances": {"float16": {"atol": 5e-2, "rtol": 1e-2}, "bfloat16": {"atol": 1e-1, "rtol": 2e-2}},
}


@triton.autotune(
    configs=[triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8, num_stages=3),
             triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=4)],
    key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul(a, b):
    """``a @ b`` for contiguous (M, K) and (K, N) CUDA tensors of one dtype."""
    import torch

    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = lambda META: (triton.cdiv(m, META["BLOCK_M"]), triton.cdiv(n, META["BLOCK_N"]))  # noqa: E731
    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1))
    return c


def make_inputs(shape, dtype, device="cuda", seed=0):
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    m, n, k = shape["m"], shape["n"], shape["k"]
    a = torch.randn((m, k), generator=g, device=device) * k ** -0.25
    b = torch.randn((k, n), generator=g, device=device) * k ** -0.25
    return {"a": a.to(getattr(torch, dtype)), "b": b.to(getattr(torch, dtype))}


def reference(a, b):
    return (a.double() @ b.double()).to(a.dtype)


def flops(shape):
    return 2 * shape["m"] * shape["n"] * shape["k"]
