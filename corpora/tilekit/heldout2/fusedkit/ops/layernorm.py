import torch
from torch import nn

from .._compat import Kernel, pow2
from ..kernels.layernorm import layernorm_fwd


class _LN(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        x2 = x.view(-1, x.shape[-1])
        y = torch.empty_like(x2)
        Kernel(layernorm_fwd, N_PAD=pow2(x2.shape[1]), HAS_BIAS=bias is not None)(
            (x2.shape[0], 1, 1), x2, weight, bias if bias is not None else weight, y, eps)
        return y.view_as(x)


class FusedLayerNorm(nn.Module):
    def __init__(self, normalized_shape, eps=1e-5, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape)) if bias else None
        self.eps = eps

    def forward(self, x):
        return _LN.apply(x, self.weight, self.bias, self.eps)
