"""Softmax throughput against torch, the way Triton's tutorials measure it."""
import torch
import triton
import triton.testing
import cuda.tile as ct


@ct.kernel
def softmax_kernel(x, y, TILE: ct.Constant[int], N_TILES: ct.Constant[int]):
    row = ct.bid(0)
    m = ct.full((1, TILE), -float("inf"), dtype=ct.float32)
    for j in range(N_TILES):
        t = ct.load(x, index=(row, j), shape=(1, TILE), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
        m = ct.maximum(m, t)
    mx = ct.max(m, axis=1, keepdims=True)
    s = ct.zeros((1, 1), dtype=ct.float32)
    for j in range(N_TILES):
        t = ct.load(x, index=(row, j), shape=(1, TILE), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
        s = s + ct.sum(ct.exp(t - mx), axis=1, keepdims=True)
    for j in range(N_TILES):
        t = ct.load(x, index=(row, j), shape=(1, TILE), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
        ct.store(y, index=(row, j), tile=(ct.exp(t - mx) / s).astype(y.dtype))


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["N"],
        x_vals=[256 * i for i in range(2, 34, 8)],
        line_arg="provider",
        line_vals=["cutile-256", "cutile-1024", "torch"],
        line_names=["cuTile (256)", "cuTile (1024)", "Torch"],
        styles=[("blue", "-"), ("red", "-"), ("green", "-")],
        ylabel="GB/s",
        plot_name="softmax-performance",
        args={"M": 4096},
    ))
def benchmark(M, N, provider):
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    stream = torch.cuda.current_stream()
    if provider == "torch":
        ms = triton.testing.do_bench(lambda: torch.softmax(x, axis=-1))
    else:
        provider_ts = provider
        tile_size = int(provider_ts.split("-")[1])
        n_tiles = (N + tile_size - 1) // tile_size
        ms = triton.testing.do_bench(lambda: ct.launch(stream, (M, 1, 1), softmax_kernel, (x, y, tile_size, n_tiles)))
    gbps = lambda ms: 2 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)
    return gbps(ms)


if __name__ == "__main__":
    benchmark.run(show_plots=False, print_data=True)
