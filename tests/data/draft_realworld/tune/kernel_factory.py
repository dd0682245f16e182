"""Kernels made by a factory per tile size and unroll depth, as compile-time benchmarks and autotuners make them:
every instance is a new `axpy` with the same name, constants and dtype, told apart only by its closure values."""
import torch
import cuda.tile as ct


def make_axpy(tile: int, steps: int):
    @ct.kernel
    def axpy(x, y, out):
        i = ct.bid(0)
        a = ct.load(x, index=(i,), shape=(tile,), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(y, index=(i,), shape=(tile,), padding_mode=ct.PaddingMode.ZERO)
        acc = a * b
        for _ in range(steps):
            acc = acc * 0.5 + a
        ct.store(out, index=(i,), tile=acc)

    return axpy


def run(x: torch.Tensor, y: torch.Tensor, tile: int, steps: int) -> torch.Tensor:
    out = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(x.numel(), tile), 1, 1), make_axpy(tile, steps), (x, y, out))
    return out


def reference(x: torch.Tensor, y: torch.Tensor, steps: int) -> torch.Tensor:
    acc = x * y
    for _ in range(steps):
        acc = acc * 0.5 + x
    return acc


if __name__ == "__main__":
    x = torch.rand(5000, device="cuda")
    y = torch.rand(5000, device="cuda")
    for tile, steps in ((128, 1), (256, 3), (128, 2)):
        torch.testing.assert_close(run(x, y, tile, steps), reference(x, y, steps))
