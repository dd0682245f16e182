"""Bandwidth of the elementwise kernels."""
import torch
import cuda.tile as ct

from nanoops.kernels.elementwise import add_scaled, relu2d


def bench(n=1 << 24, dtype=torch.bfloat16):
    x = torch.randn(n, dtype=dtype, device="cuda")
    y = torch.randn(n, dtype=dtype, device="cuda")
    out = torch.empty_like(x)
    tile = 1024
    ct.launch(torch.cuda.current_stream(), ((n + tile - 1) // tile, 1, 1), add_scaled, (x, y, out, 0.5, tile))
    m = torch.randn(4096, 4096, dtype=dtype, device="cuda")
    r = torch.empty_like(m)
    ct.launch(torch.cuda.current_stream(), (4096 // 64, 4096 // 64, 1), relu2d, (m, r, 64, 64))
    torch.cuda.synchronize()


if __name__ == "__main__":
    bench()
