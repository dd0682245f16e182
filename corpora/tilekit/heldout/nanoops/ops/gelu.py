"""Tanh-approximate GELU on a flat view, with a quick self-check when run as a script."""
import torch
import cuda.tile as ct

from .._common import DEVICE, WARP_TILE, ceil_div, run_kernel


@ct.kernel
def gelu_kernel(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, index=(i,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    inner = 0.7978845608 * (t + 0.044715 * t * t * t)
    ct.store(y, index=(i,), tile=(0.5 * t * (1.0 + ct.tanh(inner))).astype(y.dtype))


def gelu(x, tile=WARP_TILE * 32):
    flat = x.contiguous().view(-1)
    out = torch.empty_like(flat)
    run_kernel(gelu_kernel, (ceil_div(flat.numel(), tile), 1, 1), (flat, out, tile))
    return out.view_as(x)


if __name__ == "__main__":
    for shape in [(4096, 4096), (3, 1000)]:
        for dtype in (torch.float16, torch.float32):
            x = torch.randn(shape, dtype=dtype, device=DEVICE)
            torch.testing.assert_close(gelu(x), torch.nn.functional.gelu(x, approximate="tanh"),
                                       rtol=2e-3, atol=2e-3)
    print("ok")
