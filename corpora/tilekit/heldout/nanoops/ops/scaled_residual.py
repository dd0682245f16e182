"""out = x + scale * residual on a flat view (a fused residual add)."""
import torch
import cuda.tile as ct

from .._common import WARP_TILE, ceil_div, run_kernel


@ct.kernel
def scaled_residual_kernel(x, res, out, scale, TILE: ct.Constant[int]):
    i = ct.bid(0)
    a = ct.load(x, index=(i,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    b = ct.load(res, index=(i,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    ct.store(out, index=(i,), tile=(a + scale * b).astype(out.dtype))


def scaled_residual(x, residual, scale=1.0, tile=WARP_TILE * 32):
    assert x.shape == residual.shape and x.dtype == residual.dtype
    flat, rflat = x.contiguous().view(-1), residual.contiguous().view(-1)
    out = torch.empty_like(flat)
    run_kernel(scaled_residual_kernel, (ceil_div(flat.numel(), tile), 1, 1), (flat, rflat, out, float(scale), tile))
    return out.view_as(x)
