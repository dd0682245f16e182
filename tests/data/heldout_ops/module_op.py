"""A torch.nn.Module whose forward launches the kernel (how many model codebases wrap their ops)."""
import torch
import cuda.tile as ct


@ct.kernel
def fused_add_rmsnorm_kernel(x, residual, w, out, new_residual, eps, N_COLS: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, N_COLS)).astype(ct.float32)
    r = ct.load(residual, index=(row, 0), shape=(1, N_COLS)).astype(ct.float32)
    s = t + r
    ct.store(new_residual, index=(row, 0), tile=s.astype(new_residual.dtype))
    inv = ct.rsqrt(ct.sum(s * s, axis=1, keepdims=True) / N_COLS + eps)
    wt = ct.reshape(ct.load(w, index=(0,), shape=(N_COLS,)).astype(ct.float32), (1, N_COLS))
    ct.store(out, index=(row, 0), tile=(s * inv * wt).astype(out.dtype))


class FusedAddRMSNorm(torch.nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        M, N = x.shape
        out = torch.empty_like(x)
        new_res = torch.empty_like(residual)
        ct.launch(torch.cuda.current_stream(), (M,), fused_add_rmsnorm_kernel,
                  (x, residual, self.weight, out, new_res, self.eps, N))
        return out, new_res
