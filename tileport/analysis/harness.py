"""Timing harnesses run with their timing stubbed (child process only): the timed callable runs once per
configuration, so its launches are recorded and nothing waits for samples that a fake device cannot give.

Benchmark scripts launch through a harness rather than directly:

* `triton.testing.do_bench(fn, ...)` / `do_bench_cudagraph(fn, ...)`: `fn` is called once; the "time" is 1.0 ms
  (a list of them when `quantiles` are asked for), so a script's GB/s or TFLOP/s arithmetic does not divide by zero;
* `@triton.testing.perf_report(Benchmark(...))` run by `benchmark.run(...)`: every `x_vals` x `line_vals` point is
  called once with the benchmark's `args`, in order, each launch named after its point (`N=4096 provider=cutile-256`),
  so the constants a provider string implies (`int(provider.split('-')[1])`) are recorded per provider; no pandas
  table, no plot;
* `torch.utils.benchmark.Timer` (`timeit`, `blocked_autorange`, `adaptive_autorange`) and the standard library's
  `timeit.Timer`: the statement runs once;
* CUDA-event loops and `time.perf_counter` loops run as written (a fake launch costs microseconds); the fake
  events report 1.0 ms (`fakecuda.FakeEvent.elapsed_time`).

Harness modules are patched where they are and in every module that imported their functions by name.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import timeit
from typing import Any, Callable, Iterator

from tileport.analysis.fakecuda import _patched

STUB_MS = 1.0


def _bench_once(errors: list[str]) -> Callable[..., Any]:
    def do_bench(fn: Callable[[], Any], *args: Any, quantiles: Any = None, **kwargs: Any) -> Any:
        fn()
        return [STUB_MS] * len(quantiles) if quantiles else STUB_MS
    return do_bench


def _mark_run(cap: Any, errors: list[str], label: str) -> Callable[..., Any]:
    def run(self: Any, *args: Any, **kwargs: Any) -> None:
        benches = self.benchmarks if isinstance(self.benchmarks, (list, tuple)) else [self.benchmarks]
        for bench in benches:
            names = list(bench.x_names)
            for x in bench.x_vals:
                xs = dict(zip(names, x)) if isinstance(x, (list, tuple)) else {n: x for n in names}
                lines = list(bench.line_vals) or [None]
                for line in lines:
                    call = {**xs, **({bench.line_arg: line} if bench.line_arg and line is not None else {}),
                            **(bench.args or {})}
                    point = " ".join(f"{k}={v}" for k, v in {**xs, **({bench.line_arg: line} if line is not None
                                                                     else {})}.items())
                    previous = cap.entry
                    cap.entry = f"{label} {self.fn.__name__}({point})"
                    try:
                        self.fn(**call)
                    except (Exception, SystemExit) as e:  # the script's own code: one point failing is one line
                        from tileport.analysis.capture import _short_error

                        errors.append(f"{cap.entry}: {_short_error(e)}")
                    finally:
                        cap.entry = previous
        return None
    return run


def _replace_everywhere(stack: contextlib.ExitStack, orig: Any, new: Any) -> None:
    """Patch every non-library module attribute that is `orig` (a `from triton.testing import do_bench`)."""
    for mod in list(sys.modules.values()):
        d = getattr(mod, "__dict__", None)
        if not d or getattr(mod, "__name__", "").startswith(("triton", "torch", "cuda.", "numpy")):
            continue
        for name, val in list(d.items()):
            if val is orig:
                stack.enter_context(_patched(mod, name, new))


def wanted(texts: list[str]) -> list[str]:
    """The harness modules the given sources use (imported up front, so their patches are in place)."""
    mods = []
    if any("triton" in t for t in texts) or "triton" in sys.modules:
        mods.append("triton.testing")
    if any("torch.utils.benchmark" in t or "benchmark.Timer" in t for t in texts) or \
            "torch.utils.benchmark" in sys.modules:
        mods.append("torch.utils.benchmark")
    return mods


@contextlib.contextmanager
def stubbed(cap: Any, errors: list[str], texts: list[str]) -> Iterator[None]:
    """Timing harnesses stubbed while the op's sources run (see the module doc)."""
    with contextlib.ExitStack() as stack:
        for name in wanted(texts):
            try:
                mod = importlib.import_module(name)
            except Exception:  # not installed here: the script's own import names what is missing
                continue
            if name == "triton.testing":
                for fn_name in ("do_bench", "do_bench_cudagraph"):
                    orig = getattr(mod, fn_name, None)
                    if orig is not None:
                        new = _bench_once(errors)
                        stack.enter_context(_patched(mod, fn_name, new))
                        _replace_everywhere(stack, orig, new)
                if hasattr(mod, "Mark"):
                    stack.enter_context(_patched(mod.Mark, "run", _mark_run(cap, errors, "perf_report")))
            elif name == "torch.utils.benchmark":
                timer = mod.Timer
                orig_timeit = timer.timeit

                def once(self: Any, number: int = 1, _orig: Any = orig_timeit) -> Any:
                    return _orig(self, number=1)

                stack.enter_context(_patched(timer, "timeit", once))
                for meth in ("blocked_autorange", "adaptive_autorange"):
                    if hasattr(timer, meth):
                        stack.enter_context(_patched(timer, meth, lambda self, *a, **k: self.timeit(1)))
        orig_std = timeit.Timer.timeit
        stack.enter_context(_patched(timeit.Timer, "timeit", lambda self, number=1: orig_std(self, 1)))
        stack.enter_context(_patched(timeit.Timer, "repeat",
                                     lambda self, repeat=1, number=1: [orig_std(self, 1)]))
        yield


__all__ = ["STUB_MS", "stubbed", "wanted"]
