"""Append new keys to a paged KV cache (rank-4 cache, slot from a page table) and a decode-step dot product."""
import torch
import cuda.tile as ct


@ct.kernel
def kv_append_kernel(KNew, Cache, Slots, HEAD_D: ct.Constant[int]):
    t = ct.bid(0)
    h = ct.bid(1)
    slot = ct.load(Slots, index=(t,), shape=())
    page = slot // 16
    offset = slot % 16
    k = ct.load(KNew, index=(t, h, 0), shape=(1, 1, HEAD_D))
    ct.store(Cache, index=(page, h, offset, 0), tile=k.reshape((1, 1, 1, HEAD_D)), latency=1)


@ct.kernel
def decode_dot_kernel(Q, K, Out, SEQ_TILE: ct.Constant[int], HEAD_D: ct.Constant[int]):
    b = ct.bid(0)
    h = ct.bid(1)
    sb = ct.bid(2)
    q = ct.load(Q, index=(b, h, 0), shape=(1, 1, HEAD_D)).reshape((1, HEAD_D)).astype(ct.float32)
    k = ct.load(K, index=(b, h, sb, 0), shape=(1, 1, SEQ_TILE, HEAD_D)).reshape((SEQ_TILE, HEAD_D))
    scores = ct.sum(k.astype(ct.float32) * q, axis=1)
    ct.store(Out, index=(b, h, sb), tile=scores.reshape((1, 1, SEQ_TILE)))


def kv_append(k_new: torch.Tensor, cache: torch.Tensor, slots: torch.Tensor):
    T, H, D = k_new.shape
    ct.launch(torch.cuda.current_stream(), (T, H, 1), kv_append_kernel, (k_new, cache, slots, D))
    return cache


def decode_dot(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    B, H, S, D = k.shape
    out = torch.empty((B, H, S), device=q.device, dtype=torch.float32)
    ct.launch(torch.cuda.current_stream(), (B, H, ct.cdiv(S, 64)), decode_dot_kernel, (q, k, out, 64, D))
    return out


if __name__ == "__main__":
    cache = torch.zeros(32, 8, 16, 64, device="cuda", dtype=torch.float16)
    kv_append(torch.randn(20, 8, 64, device="cuda", dtype=torch.float16), cache,
              torch.arange(20, device="cuda", dtype=torch.int32))
    decode_dot(torch.randn(2, 8, 64, device="cuda", dtype=torch.float16),
               torch.randn(2, 8, 256, 64, device="cuda", dtype=torch.float16))
