"""Leaky ReLU with a constant slope and an optional clamp, both as ct.Constant choices (two launches)."""
import torch
import cuda.tile as ct

NEG_SLOPE = 0.01
CLAMP_MAX = 6.0


@ct.kernel
def leaky_relu_kernel(x, y, BLOCK: ct.Constant[int], CLAMP: ct.Constant[bool]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid,), shape=(BLOCK,), padding_mode=ct.PaddingMode.ZERO, allow_tma=True)
    v = t.astype(ct.float32)
    v = ct.where(v >= 0.0, v, v * NEG_SLOPE)
    if CLAMP:
        v = ct.minimum(v, CLAMP_MAX)
    ct.store(y, index=(pid,), tile=v.astype(y.dtype))


def leaky_relu(x: torch.Tensor, clamp: bool = False) -> torch.Tensor:
    flat = x.reshape(-1)
    y = torch.empty_like(flat)
    block = 1024
    ct.launch(torch.cuda.current_stream(), ((flat.numel() + block - 1) // block,), leaky_relu_kernel,
              (flat, y, block, clamp))
    return y.view_as(x)


def relu6_like(x: torch.Tensor) -> torch.Tensor:
    return leaky_relu(x, clamp=True)
