"""Dropout with a counter-based hash (bit ops on int32 tiles), a float literal in the input's dtype."""
import torch
import cuda.tile as ct


@ct.kernel
def dropout_kernel(X, Y, seed: int, p: float, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    offs = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    h = ct.bitwise_xor(offs, seed)
    h = h * 73244475
    h = ct.bitwise_xor(h, ct.bitwise_rshift(h, 16))
    r = ct.bitwise_and(h, 16777215).astype(ct.float32) * (1.0 / 16777216.0)
    x = ct.load(X, index=(bid,), shape=(TILE,), latency=2)
    scale = 1.0 / (1.0 - p)
    y = ct.where(r >= p, x.astype(ct.float32) * scale, 0.0)
    ct.store(Y, index=(bid,), tile=y.astype(Y.dtype))


@ct.kernel
def scaled_residual_kernel(X, R, Y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(X, index=(bid,), shape=(TILE,))
    r = ct.load(R, index=(bid,), shape=(TILE,))
    y = x * 0.5 + r
    ct.store(Y, index=(bid,), tile=y)


def dropout(x: torch.Tensor, p: float = 0.1, seed: int = 1234) -> torch.Tensor:
    y = torch.empty_like(x)
    n = x.numel()
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(n, 1024), 1, 1), dropout_kernel, (x, y, seed, p, 1024))
    return y


def scaled_residual(x: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(x.numel(), 1024), 1, 1), scaled_residual_kernel, (x, r, y, 1024))
    return y


if __name__ == "__main__":
    for dt in (torch.float16, torch.float32):
        x = torch.randn(8192, device="cuda", dtype=dt)
        dropout(x)
        scaled_residual(x, torch.randn_like(x))
