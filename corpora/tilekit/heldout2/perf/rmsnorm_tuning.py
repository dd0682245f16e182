"""Pick the RMSNorm tile width per hidden size with do_bench."""
import torch
import cuda.tile as ct
from triton.testing import do_bench


@ct.kernel
def rmsnorm_tiled(x, y, eps, TILE: ct.Constant[int], TILES: ct.Constant[int]):
    r = ct.bid(0)
    ss = ct.zeros((1, 1), dtype=ct.float32)
    for j in range(TILES):
        t = ct.load(x, index=(r, j), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
        ss = ss + ct.sum(t * t, axis=1, keepdims=True)
    inv = ct.rsqrt(ss / (TILE * TILES) + eps)
    for j in range(TILES):
        t = ct.load(x, index=(r, j), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
        ct.store(y, index=(r, j), tile=(t * inv).astype(y.dtype))


def main():
    results = {}
    for hidden in (2048, 8192):
        x = torch.randn(4096, hidden, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        for provider in ("cutile-256", "cutile-1024"):
            tile = int(provider.rsplit("-", 1)[1])
            fn = lambda: ct.launch(torch.cuda.current_stream(), (x.shape[0], 1, 1), rmsnorm_tiled,
                                   (x, y, 1e-6, tile, hidden // tile))
            results[(hidden, provider)] = do_bench(fn, warmup=25, rep=100)
    best = {h: min((ms, p) for (hh, p), ms in results.items() if hh == h)[1] for h in (2048, 8192)}
    print(best)


if __name__ == "__main__":
    main()
