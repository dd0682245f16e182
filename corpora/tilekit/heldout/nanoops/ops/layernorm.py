"""LayerNorm with affine weight and bias, as a torch.nn.Module."""
import torch
import cuda.tile as ct

from .._common import pow2, run_kernel


@ct.kernel
def layernorm_fwd(x, w, b, y, eps, BLOCK: ct.Constant[int]):
    r = ct.bid(0)
    t = ct.load(x, index=(r, 0), shape=(1, BLOCK), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    n = x.shape[1]
    mean = ct.sum(t, axis=1, keepdims=True) / n
    cols = ct.arange(BLOCK, dtype=ct.int32)
    d = ct.where(ct.expand_dims(cols < n, 0), t - mean, 0.0)
    var = ct.sum(d * d, axis=1, keepdims=True) / n
    wt = ct.reshape(ct.load(w, index=(0,), shape=(BLOCK,), padding_mode=ct.PaddingMode.ZERO), (1, BLOCK))
    bt = ct.reshape(ct.load(b, index=(0,), shape=(BLOCK,), padding_mode=ct.PaddingMode.ZERO), (1, BLOCK))
    ct.store(y, index=(r, 0), tile=(d * ct.rsqrt(var + eps) * wt.astype(ct.float32) + bt.astype(ct.float32)).astype(y.dtype))


class FusedLayerNorm(torch.nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))
        self.bias = torch.nn.Parameter(torch.zeros(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.view(-1, shape[-1])
        y = torch.empty_like(x)
        run_kernel(layernorm_fwd, (x.shape[0], 1, 1),
                   (x, self.weight.to(x.dtype), self.bias.to(x.dtype), y, self.eps, pow2(shape[-1])))
        return y.view(shape)
