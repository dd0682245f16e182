"""GELU (tanh approximation), checked against Hugging Face's activation."""
import torch
import cuda.tile as ct
from transformers.activations import GELUTanh  # the reference the model code uses


@ct.kernel
def gelu_tanh_kernel(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, index=(i,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    inner = 0.7978845608 * (t + 0.044715 * t * t * t)
    ct.store(y, index=(i,), tile=(0.5 * t * (1.0 + ct.tanh(inner))).astype(y.dtype))


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    flat = x.reshape(-1)
    y = torch.empty_like(flat)
    ct.launch(torch.cuda.current_stream(), ((flat.numel() + 1023) // 1024, 1, 1), gelu_tanh_kernel, (flat, y, 1024))
    return y.view_as(x)


reference = GELUTanh()
