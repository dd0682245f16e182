"""SwiGLU forward and backward through one launch helper that takes the kernel as a parameter."""
import torch
import cuda.tile as ct


@ct.kernel
def swiglu_fwd(gate, up, out, TILE_N: ct.Constant[int]):
    row, col = ct.bid(0), ct.bid(1)
    g = ct.load(gate, index=(row, col), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    u = ct.load(up, index=(row, col), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    s = g / (1.0 + ct.exp(-g))
    ct.store(out, index=(row, col), tile=(s * u).astype(out.dtype))


@ct.kernel
def swiglu_bwd(gate, up, dout, dgate, dup, TILE_N: ct.Constant[int]):
    row, col = ct.bid(0), ct.bid(1)
    g = ct.load(gate, index=(row, col), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    u = ct.load(up, index=(row, col), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    d = ct.load(dout, index=(row, col), shape=(1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    sig = 1.0 / (1.0 + ct.exp(-g))
    ct.store(dup, index=(row, col), tile=(d * g * sig).astype(dup.dtype))
    ct.store(dgate, index=(row, col), tile=(d * u * sig * (1.0 + g * (1.0 - sig))).astype(dgate.dtype))


def _launch_rows(kernel, rows: int, cols: int, tile_n: int, *tensors):
    grid = (rows, (cols + tile_n - 1) // tile_n, 1)
    ct.launch(torch.cuda.current_stream(), grid, kernel, (*tensors, tile_n))


def swiglu_forward(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(gate)
    M, N = gate.shape
    _launch_rows(swiglu_fwd, M, N, 256, gate, up, out)
    return out


def swiglu_backward(gate: torch.Tensor, up: torch.Tensor, dout: torch.Tensor):
    dgate, dup = torch.empty_like(gate), torch.empty_like(up)
    M, N = gate.shape
    _launch_rows(swiglu_bwd, M, N, 256, gate, up, dout, dgate, dup)
    return dgate, dup
