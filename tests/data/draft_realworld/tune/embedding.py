"""Embedding lookup (rank-2 gather with a padding value) and its gradient's row scatter."""
import torch
import cuda.tile as ct


@ct.kernel
def embedding_kernel(Ids, Weight, Out, D: ct.Constant[int], TILE_T: ct.Constant[int]):
    bid = ct.bid(0)
    ids = ct.load(Ids, index=(bid,), shape=(TILE_T,), padding_mode=ct.PaddingMode.ZERO)
    cols = ct.arange(D, dtype=ct.int32)
    vals = ct.gather(Weight, (ids[:, None], cols[None, :]), padding_value=0.0, latency=4)
    rows = bid * TILE_T + ct.arange(TILE_T, dtype=ct.int32)
    ct.scatter(Out, (rows[:, None], cols[None, :]), vals, latency=2)


@ct.kernel
def embedding_rows_kernel(Ids, Weight, Out, D: ct.Constant[int]):
    t = ct.bid(0)
    idx = ct.load(Ids, index=(t,), shape=())
    row = ct.load(Weight, index=(idx, 0), shape=(1, D))
    ct.store(Out, index=(t, 0), tile=row, latency=1)


def embedding(ids: torch.Tensor, weight: torch.Tensor, rows: bool = False) -> torch.Tensor:
    T = ids.shape[0]
    V, D = weight.shape
    out = torch.empty((T, D), device=weight.device, dtype=weight.dtype)
    if rows:
        ct.launch(torch.cuda.current_stream(), (T, 1, 1), embedding_rows_kernel, (ids, weight, out, D))
    else:
        ct.launch(torch.cuda.current_stream(), (ct.cdiv(T, 16), 1, 1), embedding_kernel, (ids, weight, out, D, 16))
    return out


if __name__ == "__main__":
    w = torch.randn(1000, 128, device="cuda", dtype=torch.float16)
    ids = torch.randint(0, 1000, (256,), device="cuda", dtype=torch.int32)
    outs = [embedding(ids, w), embedding(ids, w, rows=True)]
    for o in outs:
        torch.testing.assert_close(o, w[ids.long()])
