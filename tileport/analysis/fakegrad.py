"""Custom autograd Functions on the fake CUDA device (launch capture's CPU mode; child process only).

Capture runs with autograd off (fakecuda: some of torch's C++ kernels abort on a fake leaf that requires grad), so a
`torch.autograd.Function` has no graph and `loss.backward()` reaches none of its backward kernels. Here
`Function.apply` runs `forward` itself with a small context (`save_for_backward`, `saved_tensors`,
`needs_input_grad`, `mark_*`; new-style Functions through `setup_context`) and remembers it; `Tensor.backward()` and
`torch.autograd.backward/grad` then run the `backward` of every Function applied since (the one that made the tensor
with the gradient given, the others with ones of their outputs' shapes), so the backward launches are recorded too.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from tileport.analysis.fakecuda import _patched


class FakeCtx:
    """What a Function's forward/backward use of `ctx`; any other attribute is stored as set."""

    def __init__(self, inputs: tuple):
        import torch

        self.saved_tensors: tuple = ()
        self.needs_input_grad = tuple(isinstance(a, torch.Tensor) and a.is_floating_point() for a in inputs)
        self.materialize_grads = True

    def save_for_backward(self, *tensors: Any) -> None:
        self.saved_tensors = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        pass

    def mark_dirty(self, *a: Any) -> None:
        pass

    def mark_non_differentiable(self, *a: Any) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value


@contextlib.contextmanager
def custom_functions() -> Iterator[list]:
    """Patch `Function.apply` and the backward entry points; yields the list of applied (Function, ctx, output)."""
    import torch
    from torch.autograd.function import Function

    applied: list[tuple[Any, FakeCtx, Any]] = []
    base_setup = getattr(Function, "setup_context", None)

    def apply(cls: Any, *args: Any, **kwargs: Any) -> Any:
        ctx = FakeCtx(args)
        setup = getattr(cls, "setup_context", None)
        if base_setup is not None and setup is not None and getattr(setup, "__func__", setup) is not \
                getattr(base_setup, "__func__", base_setup):
            out = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, out)
        else:
            out = cls.forward(ctx, *args, **kwargs)
        applied.append((cls, ctx, out))
        return out

    def run_backward(target: Any = None, gradient: Any = None) -> None:
        pending = list(applied)
        applied.clear()
        for cls, ctx, out in reversed(pending):
            outs = out if isinstance(out, tuple) else (out,)
            if target is not None and gradient is not None and any(o is target for o in outs):
                grads = tuple(gradient if o is target else _ones(o) for o in outs)
            else:
                grads = tuple(_ones(o) for o in outs)
            cls.backward(ctx, *grads)

    def tensor_backward(self: Any, gradient: Any = None, *a: Any, **k: Any) -> None:
        run_backward(self, gradient)

    def autograd_backward(tensors: Any, grad_tensors: Any = None, *a: Any, **k: Any) -> None:
        run_backward()

    def autograd_grad(outputs: Any, inputs: Any, *a: Any, **k: Any) -> Any:
        run_backward()
        ins = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
        return tuple(torch.zeros_like(i) if isinstance(i, torch.Tensor) else None for i in ins)

    with contextlib.ExitStack() as stack:
        stack.enter_context(_patched(Function, "apply", classmethod(apply)))
        stack.enter_context(_patched(torch.Tensor, "backward", tensor_backward))
        stack.enter_context(_patched(torch.autograd, "backward", autograd_backward))
        stack.enter_context(_patched(torch.autograd, "grad", autograd_grad))
        yield applied


def _ones(t: Any) -> Any:
    import torch

    return torch.ones_like(t) if isinstance(t, torch.Tensor) else None


__all__ = ["FakeCtx", "custom_functions"]
