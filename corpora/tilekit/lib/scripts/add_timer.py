"""Vector add, timed with torch.utils.benchmark."""
import torch
import torch.utils.benchmark as benchmark
import cuda.tile as ct


@ct.kernel
def add_kernel(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    x = ct.load(a, index=(i,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    y = ct.load(b, index=(i,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(c, index=(i,), tile=x + y)


def add(a, b, tile=2048):
    c = torch.empty_like(a)
    ct.launch(torch.cuda.current_stream(), ((a.numel() + tile - 1) // tile, 1, 1), add_kernel, (a, b, c, tile))
    return c


def main():
    for n in (1 << 20, 1 << 24):
        for dtype in (torch.float16, torch.float32):
            a = torch.randn(n, device="cuda", dtype=dtype)
            b = torch.randn(n, device="cuda", dtype=dtype)
            t = benchmark.Timer(stmt="add(a, b)", globals={"add": add, "a": a, "b": b},
                                label="add", sub_label=f"{n}", description=str(dtype))
            m = t.blocked_autorange(min_run_time=1.0)
            print(f"{n:>10} {dtype}: {3 * a.numel() * a.element_size() / m.median / 1e9:.1f} GB/s")


if __name__ == "__main__":
    main()
