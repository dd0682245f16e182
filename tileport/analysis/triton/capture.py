"""Launch capture for Triton ops: run the op's host code with the JIT launch intercepted (child process only).

`kernel[grid](*args, **kwargs)` goes through `triton.runtime.jit.KernelInterface.__getitem__` for every
kernel object (`JITFunction`, and the `Autotuner` / `Heuristics` wrappers that `triton.autotune` and
`triton.heuristics` put around it). Capture replaces that method: a launch is recorded instead of being
compiled, benchmarked or run, with

* the chain of wrappers unwrapped: every `triton.Config` of an autotuner becomes one launch (so one
  variant), with the config's constexprs and options (num_warps, num_stages, num_ctas, maxnreg);
  heuristics are evaluated on the call's arguments, as Triton evaluates them;
* the grid evaluated: a tuple as given, a lambda called with the launch's meta-parameters;
* each argument described (tensor dtype/rank/shape, scalar value).

Inputs and the CPU stubs are those of cuTile Python capture (`tileport.analysis.capture`):
torch fake tensors on a `cuda` device, `torch.cuda` stubbed; nothing is launched on a CPU machine.
"""

from __future__ import annotations

import contextlib
import time
from types import ModuleType
from typing import Any, Iterator

from tileport.analysis import capture as ct_capture

OPTION_NAMES = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def jit_function(obj: Any) -> Any:
    """The innermost JITFunction under autotune/heuristics wrappers, or None."""
    from triton.runtime.jit import JITFunction

    seen = 0
    while obj is not None and not isinstance(obj, JITFunction) and seen < 8:
        obj = getattr(obj, "fn", None)
        seen += 1
    return obj if isinstance(obj, JITFunction) else None


def chain(obj: Any) -> list[Any]:
    """The wrappers from the outermost to the JITFunction (included)."""
    from triton.runtime.jit import JITFunction

    out = []
    while obj is not None and len(out) < 8:
        out.append(obj)
        if isinstance(obj, JITFunction):
            break
        obj = getattr(obj, "fn", None)
    return out


def _value(v: Any) -> Any:
    """A constexpr / option value as JSON: bool, int, float, str, None; other objects by their text."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    name = getattr(v, "name", None)  # tl.dtype
    return str(name if isinstance(name, str) else v)


class TritonLaunch:
    def __init__(self, kernel: str, grid: list[int] | None, grid_text: str, args: dict[str, dict],
                 constexprs: dict[str, Any], options: dict[str, Any], via: list[str], config: int | None,
                 where: str, entry: str):
        self.kernel, self.grid, self.grid_text, self.args = kernel, grid, grid_text, args
        self.constexprs, self.options, self.via, self.config = constexprs, options, via, config
        self.where, self.entry = where, entry

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


class TritonCapture:
    """Records Triton launches while the op's code runs (duck-types `capture.Capture` for its input driver)."""

    def __init__(self, real_gpu: bool):
        self.real_gpu = real_gpu
        self.launches: list[TritonLaunch] = []
        self.entry = "?"
        self.tried: list[str] = []
        self.errors: list[str] = []

    def rank_mismatch(self, ln: Any) -> str | None:  # Triton kernels take pointers: no rank to check
        return None

    def _where(self) -> str:
        return ct_capture.caller_outside(__file__)

    def record(self, outer: Any, grid: Any, args: tuple, kwargs: dict) -> None:
        from triton.runtime.autotuner import Autotuner, Heuristics

        fn = jit_function(outer)
        if fn is None:
            raise TypeError(f"{type(outer).__name__}[grid]: not a Triton kernel tileport can read")
        where = self._where()
        names = list(fn.arg_names)
        bound = {**dict(zip(names, args)), **kwargs}
        links = chain(outer)
        via = [type(x).__name__ for x in links[:-1]]
        tuner = next((x for x in links if isinstance(x, Autotuner)), None)
        configs = list(tuner.configs) if tuner is not None and tuner.configs else [None]
        for ci, cfg in enumerate(configs):
            meta = dict(bound)
            options = {k: meta.pop(k) for k in OPTION_NAMES if k in meta}
            if cfg is not None:
                meta.update(cfg.all_kwargs() if hasattr(cfg, "all_kwargs") else cfg.kwargs)
                for k in OPTION_NAMES:
                    if getattr(cfg, k, None) is not None:
                        options[k] = getattr(cfg, k)
                for k in OPTION_NAMES:
                    meta.pop(k, None)
            for h in (x for x in links if isinstance(x, Heuristics)):
                for name, heur in h.values.items():
                    meta[name] = heur(dict(meta))
            g = grid(meta) if callable(grid) else grid
            grid_vals = [int(x) for x in (g if isinstance(g, (tuple, list)) else (g,))]
            described = {}
            for p in fn.params:
                if p.is_constexpr:
                    continue
                described[p.name] = ct_capture.describe_arg(meta.get(p.name, p.default if p.has_default else None))
            constexprs = {p.name: _value(meta.get(p.name, p.default if p.has_default else None))
                          for p in fn.params if p.is_constexpr}
            self.launches.append(TritonLaunch(
                kernel=fn.fn.__name__, grid=grid_vals + [1] * (3 - len(grid_vals)),
                grid_text="lambda" if callable(grid) else repr(tuple(grid_vals)), args=described,
                constexprs=constexprs, options={k: _value(v) for k, v in options.items()}, via=via,
                config=ci if cfg is not None else None, where=where, entry=self.entry))
        if self.real_gpu:
            outer.run(*args, grid=grid, warmup=False, **kwargs)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        from triton.runtime.jit import KernelInterface

        cap = self

        def getitem(kernel_self: Any, grid: Any) -> Any:
            return lambda *args, **kwargs: cap.record(kernel_self, grid, args, kwargs)

        with contextlib.ExitStack() as stack:
            stack.enter_context(ct_capture._patched(KernelInterface, "__getitem__", getitem))
            if not self.real_gpu:  # the same complete CUDA stub as cuTile capture (fake tensors, device, streams)
                from tileport.analysis.fakecuda import fake_cuda

                stack.enter_context(fake_cuda())
            yield


def capture(module: ModuleType, dtypes: list[str], *, time_budget_s: float = 120.0) -> dict[str, Any]:
    """Run the op's entry points with Triton launches intercepted; {launches, tried, errors, mode, seconds}."""
    import torch

    t0 = time.perf_counter()
    real = bool(torch.cuda.is_available())
    cap = TritonCapture(real)
    torch_dtypes = [getattr(torch, d) for d in dtypes if hasattr(torch, d)] or [torch.float16]
    deadline = time.monotonic() + time_budget_s
    ct_capture.call_op(cap, module, torch_dtypes, "cuda", deadline)
    return {"launches": [ln.to_json() for ln in cap.launches], "tried": cap.tried, "errors": cap.errors,
            "mode": "gpu" if real else "fake tensors (CPU)", "seconds": round(time.perf_counter() - t0, 4)}
