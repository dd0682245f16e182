"""Softmax as an autograd.Function and an nn.Module (the kernels live in tilelib.kernels.softmax)."""
import torch
import torch.nn as nn

from ..kernels.softmax import softmax_bwd_kernel, softmax_fwd_kernel
from ..utils import LaunchSpec, next_power_of_2


class _SoftmaxFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).contiguous()
        n_rows, n_cols = x2.shape
        y = torch.empty_like(x2)
        LaunchSpec(softmax_fwd_kernel, (n_rows,))(x2, y, next_power_of_2(n_cols))
        ctx.save_for_backward(y)
        return y.view(shape)

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        dy2 = dy.reshape(y.shape).contiguous()
        dx = torch.empty_like(y)
        LaunchSpec(softmax_bwd_kernel, (y.shape[0],))(dy2, y, dx, next_power_of_2(y.shape[1]))
        return dx.view(dy.shape)


def softmax(x):
    return _SoftmaxFn.apply(x)


class Softmax(nn.Module):
    def __init__(self, dim: int = -1):
        super().__init__()
        assert dim == -1, "only the last dimension"

    def forward(self, x):
        return _SoftmaxFn.apply(x)
