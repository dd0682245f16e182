"""Values that are None before a run-time `if` and get their tile inside it: an activation picked by a run-time mode
(if / elif / else, each branch sets the result), and an optional per-row scale loaded and used only in the branch
that needs it."""
import torch
import cuda.tile as ct


@ct.kernel
def activation_kernel(X, Out, mode: int, TILE: ct.Constant[int]):
    i = ct.bid(0)
    x = ct.load(X, index=(i,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    y = None
    if mode == 0:
        y = ct.maximum(x, 0.0)
    elif mode == 1:
        y = x / (1.0 + ct.exp(-x))
    else:
        y = x
    ct.store(Out, index=(i,), tile=y.astype(Out.dtype))


@ct.kernel
def maybe_scale_kernel(X, S, Out, use_scale: int, TILE: ct.Constant[int]):
    i = ct.bid(0)
    y = ct.load(X, index=(i, 0), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO)
    scale = None
    if use_scale != 0:
        scale = ct.load(S, index=(i, 0), shape=(1, 1))
        y = y * scale
    ct.store(Out, index=(i, 0), tile=y)


def activation(x: torch.Tensor, mode: int) -> torch.Tensor:
    out = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(x.numel(), 512), 1, 1), activation_kernel, (x, out, mode, 512))
    return out


def maybe_scale(x: torch.Tensor, s: torch.Tensor, use_scale: bool) -> torch.Tensor:
    out = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (x.shape[0], 1, 1), maybe_scale_kernel,
              (x, s, out, int(use_scale), x.shape[1]))
    return out


if __name__ == "__main__":
    for dt in (torch.float16, torch.float32):
        x = torch.randn(4096, device="cuda", dtype=dt)
        for mode in (0, 1, 2):
            activation(x, mode)
        m = torch.randn(32, 256, device="cuda", dtype=dt)
        maybe_scale(m, torch.rand(32, 1, device="cuda", dtype=dt), True)
