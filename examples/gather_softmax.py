"""Softmax over selected rows, addressed through an index array (pointer-style gather/scatter).

``out[row_ids[i], :] = softmax(x[row_ids[i], :n])`` for every ``i``: each block reads one row
index, builds a column index tile with ``ct.arange``, masks the columns past ``n``, and uses
``ct.gather``/``ct.scatter`` (pointer loads/stores, not view loads) with ``-inf`` padding on the
masked lanes. This is the shape of an MoE/sampling kernel where rows arrive in routed order.

``LOG_SOFTMAX`` is a structural variant: it returns ``t - max - log(sum)`` instead of
``exp(t - max) / sum``.

Checking (``tileport.validators.correctness``; torch is imported only inside functions):
``reference(x, row_ids, log=False, out=None)`` is the same op in plain torch; ``make_inputs(shape,
dtype, device, seed)`` builds deterministic arguments for one ``TILEPORT`` shape;
``check_variants()`` lists the extra keyword arguments each shape is also checked with.
"""

import cuda.tile as ct

TILEPORT = {
    "dtypes": ["float16", "float32"],
    "shapes": [{"m": 4096, "n": 1000, "rows": 512}, {"m": 128, "n": 4096, "rows": 128}],
    "params": {"row_ids": "int32"},
    "constants": {"TILE_N": [1024]},
}


@ct.kernel
def gather_softmax_kernel(x, out, row_ids, n, TILE_N: ct.Constant[int],
                          LOG_SOFTMAX: ct.Constant[bool]):
    i = ct.bid(0)
    row = ct.gather(row_ids, i)
    cols = ct.arange(TILE_N, dtype=ct.int32)
    in_row = cols < n
    t = ct.gather(x, (row, cols), mask=in_row, padding_value=float("-inf")).astype(ct.float32)
    row_max = ct.max(t, axis=0)
    shifted = t - row_max
    e = ct.exp(shifted)
    denom = ct.sum(e, axis=0)
    if LOG_SOFTMAX:
        result = shifted - ct.log(denom)
    else:
        result = e / denom
    ct.scatter(out, (row, cols), result.astype(out.dtype), mask=in_row)


def gather_softmax(x, row_ids, log=False, out=None):
    """(Log-)softmax of the rows of ``x`` listed in the int32 tensor ``row_ids``, written in place."""
    import torch

    m, n = x.shape
    if out is None:
        out = torch.zeros_like(x)
    TILE_N = 1 << max(0, (n - 1).bit_length())
    grid = (row_ids.shape[0], 1, 1)
    ct.launch(torch.cuda.current_stream(), grid, gather_softmax_kernel,
              (x, out, row_ids, n, TILE_N, log))
    return out


def make_inputs(shape, dtype, device="cuda", seed=0):
    """Deterministic keyword arguments of ``gather_softmax`` and ``reference`` for one TILEPORT shape.

    ``row_ids`` are ``rows`` distinct rows in shuffled order (so scattered rows never collide).
    """
    import torch

    cpu = torch.Generator().manual_seed(seed)
    g = torch.Generator(device=device).manual_seed(seed)
    x = 3.0 * torch.randn((shape["m"], shape["n"]), generator=g, device=device)
    row_ids = torch.randperm(shape["m"], generator=cpu)[: shape["rows"]].to(torch.int32).to(device)
    return {"x": x.to(getattr(torch, dtype)), "row_ids": row_ids}


def check_variants():
    """Extra keyword arguments to check each shape with: softmax and the log-softmax kernel variant."""
    return [{"log": False}, {"log": True}]


def reference(x, row_ids, log=False, out=None):
    """Plain torch: rows ``row_ids`` of ``out`` (zeros when not given) get the (log-)softmax of x's rows."""
    import torch

    if out is None:
        out = torch.zeros_like(x)
    rows = row_ids.long()
    t = x[rows].float()
    result = torch.log_softmax(t, dim=-1) if log else torch.softmax(t, dim=-1)
    out[rows] = result.to(out.dtype)
    return out
