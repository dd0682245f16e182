"""In-place updates of rank-4 / rank-5 attention caches: an exponential moving average over a (batch, heads, seq,
head_dim) cache the kernel reads and writes, a grouped-query expansion into a (batch, kv_heads, group, seq, head_dim)
cache, a fill whose loop runs over the cache's own tile count, and a rolling cache whose newest key is scattered to
position 0 of each (token, head)."""
import torch
import cuda.tile as ct


@ct.kernel
def ema_update_kernel(Cache, New, decay: float, TILE_S: ct.Constant[int], D: ct.Constant[int]):
    b = ct.bid(0)
    h = ct.bid(1)
    s = ct.bid(2)
    old = ct.load(Cache, index=(b, h, s, 0), shape=(1, 1, TILE_S, D)).astype(ct.float32)
    new = ct.load(New, index=(b, h, s, 0), shape=(1, 1, TILE_S, D)).astype(ct.float32)
    mixed = old * decay + new * (1.0 - decay)
    ct.store(Cache, index=(b, h, s, 0), tile=mixed.astype(Cache.dtype))


@ct.kernel
def gqa_expand_kernel(K, Out, GROUP: ct.Constant[int], TILE_S: ct.Constant[int], D: ct.Constant[int]):
    b = ct.bid(0)
    kh = ct.bid(1)
    s = ct.bid(2)
    k = ct.load(K, index=(b, kh, s, 0), shape=(1, 1, TILE_S, D))
    for g in range(GROUP):
        ct.store(Out, index=(b, kh, g, s, 0), tile=k.reshape((1, 1, 1, TILE_S, D)))


@ct.kernel
def cache_fill_kernel(Cache, Rows, TILE_S: ct.Constant[int], D: ct.Constant[int]):
    b = ct.bid(0)
    h = ct.bid(1)
    n_tiles = ct.num_tiles(Cache, axis=2, shape=(1, 1, TILE_S, D))
    row = ct.load(Rows, index=(b, 0), shape=(1, D)).reshape((1, 1, 1, D))
    for s in range(n_tiles):
        ct.store(Cache, index=(b, h, s, 0), tile=ct.broadcast_to(row, (1, 1, TILE_S, D)))


@ct.kernel
def newest_first_kernel(KNew, Cache, D: ct.Constant[int]):
    t = ct.bid(0)
    h = ct.bid(1)
    cols = ct.arange(D, dtype=ct.int32)
    k = ct.load(KNew, index=(t, h, 0), shape=(1, 1, D)).reshape((D,))
    ct.scatter(Cache, (t, h, 0, cols), k)


def ema_update(cache: torch.Tensor, new: torch.Tensor, decay: float = 0.9) -> torch.Tensor:
    B, H, S, D = cache.shape
    ct.launch(torch.cuda.current_stream(), (B, H, ct.cdiv(S, 32)), ema_update_kernel, (cache, new, decay, 32, D))
    return cache


def gqa_expand(k: torch.Tensor, group: int) -> torch.Tensor:
    B, KH, S, D = k.shape
    out = torch.empty((B, KH, group, S, D), device=k.device, dtype=k.dtype)
    ct.launch(torch.cuda.current_stream(), (B, KH, ct.cdiv(S, 32)), gqa_expand_kernel, (k, out, group, 32, D))
    return out


def cache_fill(cache: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    B, H, S, D = cache.shape
    ct.launch(torch.cuda.current_stream(), (B, H, 1), cache_fill_kernel, (cache, rows, 32, D))
    return cache


def newest_first(k_new: torch.Tensor, cache: torch.Tensor) -> torch.Tensor:
    T, H, D = k_new.shape
    ct.launch(torch.cuda.current_stream(), (T, H, 1), newest_first_kernel, (k_new, cache, D))
    return cache


if __name__ == "__main__":
    for dt in (torch.float16, torch.float32):
        cache = torch.randn(2, 4, 128, 64, device="cuda", dtype=dt)
        ema_update(cache, torch.randn_like(cache))
        gqa_expand(torch.randn(2, 2, 96, 64, device="cuda", dtype=dt), 4)
        cache_fill(cache, torch.randn(2, 64, device="cuda", dtype=dt))
        newest_first(torch.randn(2, 4, 64, device="cuda", dtype=dt), cache)
