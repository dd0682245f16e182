"""Persistent GEMM with an optional bias and optional residual in the epilogue, grouped tile order from a helper
returning a tuple, bf16/fp16/fp32 inputs (tf32 for fp32)."""
import torch
import cuda.tile as ct

PadZero = ct.PaddingMode.ZERO


def _pid_to_tile(pid, num_pid_m, num_pid_n, GROUP: ct.Constant[int]):
    width = GROUP * num_pid_n
    group = pid // width
    first = group * GROUP
    rows = min(num_pid_m - first, GROUP)
    return first + (pid % width) % rows, (pid % width) // rows


@ct.kernel(occupancy=ct.ByTarget(sm_100=1, default=2))
def gemm_epilogue_kernel(A, B, bias, residual, C, alpha: float, BM: ct.Constant[int], BN: ct.Constant[int],
                         BK: ct.Constant[int], GROUP: ct.Constant[int]):
    M, K = A.shape
    N = B.shape[1]
    num_pid_m = ct.cdiv(M, BM)
    num_pid_n = ct.cdiv(N, BN)
    mma_dtype = ct.tfloat32 if A.dtype == ct.float32 else A.dtype
    for pid in range(ct.bid(0), num_pid_m * num_pid_n, ct.num_blocks(0)):
        pm, pn = _pid_to_tile(pid, num_pid_m, num_pid_n, GROUP)
        acc = ct.zeros((BM, BN), dtype=ct.float32)
        for kk in range(ct.cdiv(K, BK)):
            a = ct.load(A, (pm, kk), (BM, BK), padding_mode=PadZero, latency=3)
            b = ct.load(B, (kk, pn), (BK, BN), padding_mode=PadZero, latency=3)
            acc = ct.mma(a.astype(mma_dtype), b.astype(mma_dtype), acc)
        acc = acc * alpha
        if bias is not None:
            acc = acc + ct.load(bias, (pn,), (BN,), padding_mode=PadZero).astype(ct.float32)[None, :]
        if residual is not None:
            acc = acc + ct.load(residual, (pm, pn), (BM, BN), padding_mode=PadZero).astype(ct.float32)
        ct.store(C, (pm, pn), acc.astype(C.dtype))


def gemm(a, b, bias=None, residual=None, alpha=1.0):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    bm, bn, bk = 128, 64, 32
    grid = (min(ct.cdiv(M, bm) * ct.cdiv(N, bn), 132), 1, 1)
    ct.launch(torch.cuda.current_stream(), grid, gemm_epilogue_kernel, (a, b, bias, residual, c, alpha, bm, bn, bk, 8))
    return c


if __name__ == "__main__":
    for dt in (torch.bfloat16, torch.float32):
        a = torch.randn(256, 128, device="cuda", dtype=dt)
        b = torch.randn(128, 192, device="cuda", dtype=dt)
        bias = torch.randn(192, device="cuda", dtype=dt)
        gemm(a, b)
        gemm(a, b, bias=bias, residual=torch.randn(256, 192, device="cuda", dtype=dt), alpha=0.5)
