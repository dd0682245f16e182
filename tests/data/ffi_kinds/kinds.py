"""Four output kinds a launcher must take beyond one view tile per block, for the port in this directory
(kernel.rs): a permuted store (block (bm, bn) writes tile (bn, bm) of `t`), an output the port reaches through
a raw device pointer (`copy`), a rank-4 output (`d`, which the port takes as `&Tensor`: cutile 0.5 has no
`&mut Tensor` above rank 3), and an output with more tiles than the launch has blocks (`h`: only its head is
written; the port's slab partition must be cut to the slabs the grid reaches). tests/validators/gpu/test_ffi_kinds.py builds it; on a GPU `tileport gate pack
tests/data/ffi_kinds --op tests/data/ffi_kinds/kinds.py` then `tileport gate run` judges it.
"""

import cuda.tile as ct

TILEPORT = {
    "dtypes": ["float32"],
    "shapes": [{"m": 1000, "n": 300}, {"m": 64, "n": 4096}],
}


@ct.kernel
def transpose_kernel(x, out, TILE: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    t = ct.load(x, index=(bm, bn), shape=(TILE, TILE), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(bn, bm), tile=ct.transpose(t))


@ct.kernel
def copy_kernel(x, out, TILE: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(out, index=(b,), tile=ct.load(x, index=(b,), shape=(TILE,)))


@ct.kernel
def scale4_kernel(x, out, TILE: ct.Constant[int]):
    b = ct.bid(0)
    i = ct.bid(1)
    j = ct.bid(2)
    t = ct.load(x, index=(b, i, 0, j), shape=(1, TILE, 1, TILE))
    ct.store(out, index=(b, i, 0, j), tile=t + t)


@ct.kernel
def head_kernel(x, out, TILE: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(TILE,))
    ct.store(out, index=(b,), tile=t + t)


def kinds(x):
    import torch

    m, n = x.shape
    t = torch.empty((n, m), dtype=x.dtype, device=x.device)
    stream = torch.cuda.current_stream()
    ct.launch(stream, (ct.cdiv(m, 64), ct.cdiv(n, 64), 1), transpose_kernel, (x, t, 64))
    flat = x.reshape(-1)
    c = torch.empty_like(flat)
    ct.launch(stream, (ct.cdiv(flat.numel(), 1024), 1, 1), copy_kernel, (flat, c, 1024))
    x4 = x.reshape(2, m // 2, 1, n)
    d = torch.empty_like(x4)
    ct.launch(stream, (2, ct.cdiv(m // 2, 32), ct.cdiv(n, 32)), scale4_kernel, (x4, d, 32))
    h = torch.zeros_like(flat)
    ct.launch(stream, (2, 1, 1), head_kernel, (flat, h, 1024))  # 2 blocks over a longer tensor: its head only
    return t, c.view(m, n), d.view(m, n), h.view(m, n)


def make_inputs(shape, dtype, device="cuda", seed=0):
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    return {"x": torch.randn((shape["m"], shape["n"]), generator=g, device=device).to(getattr(torch, dtype))}


def reference(x):
    import torch

    h = torch.zeros_like(x).view(-1)
    h[:2048] = (x + x).reshape(-1)[:2048]
    return x.t().contiguous(), x.clone(), x + x, h.view(x.shape)
