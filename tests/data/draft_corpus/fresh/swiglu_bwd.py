"""Backward of SwiGLU: d_gate and d_up from d_out, with the sigmoid helper from the shared device module."""
import torch
import cuda.tile as ct

from .._device import sigmoid


@ct.kernel
def swiglu_bwd_kernel(DOUT, GATE, UP, DGATE, DUP, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int]):
    i = ct.bid(0)
    j = ct.bid(1)
    dout = ct.load(DOUT, index=(i, j), shape=(TILE_M, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    g = ct.load(GATE, index=(i, j), shape=(TILE_M, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    u = ct.load(UP, index=(i, j), shape=(TILE_M, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    sg = sigmoid(g)
    silu = g * sg
    d_silu = sg * (1.0 + g * (1.0 - sg))
    ct.store(DGATE, index=(i, j), tile=(dout * u * d_silu).astype(DGATE.dtype))
    ct.store(DUP, index=(i, j), tile=(dout * silu).astype(DUP.dtype))


def swiglu_backward(dout: torch.Tensor, gate: torch.Tensor, up: torch.Tensor):
    m, n = gate.shape
    dg = torch.empty_like(gate)
    du = torch.empty_like(up)
    tm, tn = (8, 128) if n >= 128 else (16, 64)
    grid = ((m + tm - 1) // tm, (n + tn - 1) // tn, 1)
    ct.launch(torch.cuda.current_stream(), grid, swiglu_bwd_kernel, (dout, gate, up, dg, du, tm, tn))
    return dg, du
