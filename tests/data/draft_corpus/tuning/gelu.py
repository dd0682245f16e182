"""Elementwise tanh-GELU over a flat tensor, with the device helper from a sibling module and TMA hints."""
import torch
import cuda.tile as ct

from .._device import gelu_tanh

BLOCK = 1024


@ct.kernel
def gelu_fwd_kernel(x, y, BLOCK_SIZE: ct.Constant[int]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid,), shape=(BLOCK_SIZE,), padding_mode=ct.PaddingMode.ZERO, allow_tma=True)
    g = gelu_tanh(t.astype(ct.float32))
    ct.store(y, index=(pid,), tile=g.astype(y.dtype), allow_tma=True)


def gelu(x: torch.Tensor) -> torch.Tensor:
    flat = x.contiguous().view(-1)
    out = torch.empty_like(flat)
    grid = (ct.cdiv(flat.numel(), BLOCK), 1, 1)
    ct.launch(torch.cuda.current_stream(), grid, gelu_fwd_kernel, (flat, out, BLOCK))
    return out.view_as(x)


if __name__ == "__main__":
    for n in (4096, 10000, 1 << 16):
        a = torch.randn(n, device="cuda", dtype=torch.float16)
        torch.testing.assert_close(gelu(a), torch.nn.functional.gelu(a, approximate="tanh"), atol=2e-3, rtol=2e-3)
