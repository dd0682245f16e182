"""Reductions unrolled at compile time (`ct.static_iter`) whose accumulator starts as None and becomes the first
item's tile: a row sum over a fixed number of chunks, an elementwise max over three tensors (the `if best is None`
statement form), and pairwise products unrolled inside a run-time loop over the row."""
import torch
import cuda.tile as ct

PAD_ZERO = ct.PaddingMode.ZERO


@ct.kernel
def chunk_sum_kernel(X, Out, CHUNKS: ct.Constant[int], TILE: ct.Constant[int]):
    row = ct.bid(0)
    acc = None
    for c in ct.static_iter(range(CHUNKS)):
        t = ct.load(X, index=(row, c), shape=(1, TILE), padding_mode=PAD_ZERO).astype(ct.float32)
        acc = t if acc is None else acc + t
    ct.store(Out, index=(row, 0), tile=ct.sum(acc, axis=1, keepdims=True).astype(Out.dtype))


@ct.kernel
def max3_kernel(A, B, C, Out, TILE: ct.Constant[int]):
    i = ct.bid(0)
    best = None
    for src in ct.static_iter((A, B, C)):
        t = ct.load(src, index=(i,), shape=(TILE,), padding_mode=PAD_ZERO)
        if best is None:
            best = t
        else:
            best = ct.maximum(best, t)
    ct.store(Out, index=(i,), tile=best)


@ct.kernel
def pair_product_sum_kernel(X, Out, N: int, TILE: ct.Constant[int]):
    row = ct.bid(0)
    total = ct.zeros((1, TILE), dtype=ct.float32)
    for j in range(ct.cdiv(N, 2 * TILE)):
        pair = None
        for h in ct.static_iter(range(2)):
            t = ct.load(X, index=(row, 2 * j + h), shape=(1, TILE), padding_mode=PAD_ZERO).astype(ct.float32)
            pair = t if pair is None else pair * t
        total = total + pair
    ct.store(Out, index=(row, 0), tile=ct.sum(total, axis=1, keepdims=True))


def chunk_sum(x: torch.Tensor, chunks: int = 4) -> torch.Tensor:
    out = torch.empty((x.shape[0], 1), device=x.device, dtype=x.dtype)
    ct.launch(torch.cuda.current_stream(), (x.shape[0], 1, 1), chunk_sum_kernel, (x, out, chunks, x.shape[1] // chunks))
    return out


def max3(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(a)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(a.numel(), 256), 1, 1), max3_kernel, (a, b, c, out, 256))
    return out


def pair_product_sum(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty((x.shape[0], 1), device=x.device, dtype=torch.float32)
    ct.launch(torch.cuda.current_stream(), (x.shape[0], 1, 1), pair_product_sum_kernel, (x, out, x.shape[1], 64))
    return out


if __name__ == "__main__":
    for dt in (torch.float16, torch.float32):
        x = torch.randn(16, 512, device="cuda", dtype=dt)
        chunk_sum(x)
        max3(x.reshape(-1), -x.reshape(-1), x.reshape(-1) * 0.5)
        pair_product_sum(x)
