"""Launch capture: run the op's own host code with `ct.launch` intercepted (child process only).

What static analysis cannot see (constants computed from shapes or config objects, kernels chosen
by an expression, made by a factory, replaced hints, launches through helpers or an autotuner), the
wrapper computes itself when it runs. Capture calls the op's entry points with inputs and records
every launch: the kernel object, the grid, and each argument (tensor dtype/rank/shape, scalar or
constant value).

* CPU machine: tensors come from torch's `FakeTensorMode` on a `cuda` device (shapes, no data);
  `torch.cuda` calls a wrapper makes (current_stream, is_available, synchronize, ...) are stubbed
  and `ct.launch` records without launching.
* GPU machine: real CUDA tensors; the launch is recorded and then really made.

`cuda.tile.tune.exhaustive_search` is intercepted too: every config of the search space is
recorded as a launch (so each becomes a variant), and the first config is returned as the best.

Inputs, in order: the op's `tileport_inputs(op, device)` (an iterable of `(callable, args, kwargs)`),
else conventional inputs per public entry point (functions, and `torch.nn.Module` subclasses
built with integer sizes): tensor parameters get a rank from their use, tried as square and ragged
extents, for each op dtype; optional tensor parameters (default None) are also tried set.

Imports torch lazily; `available()` says whether it can run here.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import re
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

from tileport.analysis.fakecuda import _patched  # one patcher for both captures


LAUNCH_HINTS = ("num_ctas", "occupancy")  # what an op sets per launch (`ct.kernel(fn._pyfunc, num_ctas=2)`)


def launch_hints(k: Any) -> dict[str, int]:
    """The integer compiler hints a launched kernel object carries: what E must launch the module-level kernel with
    again (`replace_hints`) to time what the op ran. Here, not in capture_plan: the GPU host's capture carries only
    tileport.analysis and the modules it needs (analysis.remote)."""
    opts = getattr(k, "_compiler_options", None)
    return {key: v for key in LAUNCH_HINTS
            if isinstance(v := getattr(opts, key, None), int) and not isinstance(v, bool)}

SKIP_ENTRIES = {"reference", "make_inputs", "check_variants", "tileport_inputs", "main"}
ONE_D_NAMES = {"weight", "bias", "w", "b", "gamma", "beta", "g"}
INDEX_HINTS = ("idx", "index", "indices", "ids", "offsets", "positions")
EXTENTS = (128, 100)  # square power-of-two sizes, then ragged ones (tails, masked paths)
MAX_RANK_TRIES = 12
MAX_CALLS = 400


def available() -> str | None:
    """None when torch can be imported here, else why not."""
    try:
        import torch  # noqa: F401
    except Exception as e:  # pragma: no cover - depends on the interpreter
        return f"{type(e).__name__}: {e}"
    return None


class RankMismatch(Exception):
    """Raised at an intercepted launch whose tensor ranks contradict the kernel body (so other ranks are tried)."""


class Launch:
    """One intercepted launch; `entry` names the call (or test id) that made it, `source` its kind:
    "test", "main", "bench" (the op's own code paths) or "guess" (inputs capture built)."""

    def __init__(self, kernel: Any, grid: Any, args: tuple, where: str, entry: str, via: str, source: str = "guess"):
        self.kernel, self.grid, self.args, self.where, self.entry, self.via = kernel, grid, args, where, entry, via
        self.source = source


def describe_arg(a: Any) -> dict[str, Any]:
    from tileport.analysis.hostcapture import Described

    if isinstance(a, Described):  # as the GPU host described it (hostcapture.replayed)
        return a.desc
    import torch

    if isinstance(a, torch.Tensor):
        return {"kind": "tensor", "dtype": str(a.dtype).removeprefix("torch."), "ndim": a.dim(),
                "shape": list(a.shape)}
    if isinstance(a, bool):
        return {"kind": "bool", "value": a}
    if isinstance(a, int):
        return {"kind": "int", "value": a}
    if isinstance(a, float):
        return {"kind": "float", "value": a}
    if a is None:
        return {"kind": "none"}
    from tileport.analysis.fakearrays import describe

    return describe(a) or {"kind": "other", "type": type(a).__name__}


def caller_outside(file: str, depth: int = 3) -> str:
    """`file:line in function` of the first frame above `depth` that is not in `file` (where a launch came from)."""
    f = sys._getframe(depth)
    while f is not None and Path(f.f_code.co_filename).name == Path(file).name:
        f = f.f_back
    return f"{Path(f.f_code.co_filename).name}:{f.f_lineno} in {f.f_code.co_name}" if f else "?"


class Capture:
    """Records launches while the op's code runs."""

    def __init__(self, module: ModuleType, real_gpu: bool, ranks: dict[str, dict[str, int | None]] | None = None):
        import cuda.tile as ct

        self.ranks = ranks or {}  # kernel function -> parameter -> rank its body implies (static analysis)
        self.ct = ct
        self.module = module
        self.real_gpu = real_gpu
        self.launches: list[Launch] = []
        self.entry = "?"
        self.tried: list[str] = []
        self.errors: list[str] = []
        self.source = "guess"
        self.fake = None  # the FakeCuda state while active on a CPU machine
        self._orig_launch = ct.launch

    def rank_mismatch(self, ln: Launch) -> str | None:
        import torch

        fn = ln.kernel._annotated_function.pyfunc
        want = self.ranks.get(fn.__name__) or {}
        for pname, a in zip(inspect.signature(fn).parameters, ln.args):
            r = want.get(pname)
            if r is not None and isinstance(a, torch.Tensor) and a.dim() != r:
                return f"{fn.__name__}.{pname} is used as a rank-{r} array but got rank {a.dim()}"
        return None

    # -- interception -------------------------------------------------------------------------
    def _where(self) -> str:
        return caller_outside(__file__)

    def launch(self, stream: Any, grid: Any, kernel: Any, kernel_args: Any, *a: Any, **kw: Any) -> None:
        ln = Launch(kernel, grid, tuple(kernel_args), self._where(), self.entry, "ct.launch", self.source)
        bad = self.rank_mismatch(ln) if self.source == "guess" else None  # the op's own code is the truth
        if bad:  # the wrapper accepted inputs of a rank the kernel does not take: stop before launching
            raise RankMismatch(bad)
        self.launches.append(ln)
        if self.real_gpu:
            self._orig_launch(stream, grid, kernel, kernel_args, *a, **kw)

    def exhaustive_search(self, search_space: Any, stream: Any, grid_fn: Callable, kernel: Any, args_fn: Callable,
                          hints_fn: Callable | None = None, **_: Any) -> Any:
        from cuda.tile.tune._tune import Measurement, TuningResult

        where = self._where()
        configs = list(search_space)
        for cfg in configs:
            k = kernel if isinstance(kernel, self.ct.kernel) else kernel(cfg)
            hints = hints_fn(cfg) if hints_fn is not None else None
            if hints:
                k = k.replace_hints(**hints)
            self.launches.append(Launch(k, grid_fn(cfg), tuple(args_fn(cfg)), where, self.entry,
                                        "exhaustive_search", self.source))
        if not configs:
            raise ValueError("exhaustive_search: empty search space")
        # Nothing was timed: the first config stands in as the best (every config is a variant anyway).
        best = Measurement(config=configs[0], mean_us=0.0, num_samples=0, error_margin_us=0.0)
        return TuningResult(best=best, successes=[best], failures=[])

    def _rebound(self, val: Any) -> Any:
        """The intercepting twin of a launcher bound to cuTile's own `launch`, else None."""
        if val is self._orig_launch:
            return self.launch
        if isinstance(val, functools.partial) and val.func is self._orig_launch:
            return functools.partial(self.launch, *val.args, **(val.keywords or {}))
        return None

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        import torch

        import cuda.tile.tune as tune

        with contextlib.ExitStack() as stack:
            stack.enter_context(_patched(self.ct, "launch", self.launch))
            stack.enter_context(_patched(tune, "exhaustive_search", self.exhaustive_search))
            # modules that did `from cuda.tile import launch` / `from cuda.tile.tune import exhaustive_search`, and
            # launchers bound before capture began: `functools.partial(ct.launch, ...)`, class attributes
            for mod in list(sys.modules.values()):
                d = getattr(mod, "__dict__", None)
                if not d or mod is self.ct or mod is tune or getattr(mod, "__name__", "").startswith(("cuda.", "torch")):
                    continue
                for name, val in list(d.items()):
                    if (new := self._rebound(val)) is not None:
                        stack.enter_context(_patched(mod, name, new))
                    elif getattr(val, "__name__", None) == "exhaustive_search" and \
                            getattr(val, "__module__", "").startswith("cuda.tile.tune"):
                        stack.enter_context(_patched(mod, name, self.exhaustive_search))
                    elif isinstance(val, type) and getattr(val, "__module__", None) == mod.__name__:
                        for attr, cval in list(vars(val).items()):
                            inner = cval.__func__ if isinstance(cval, staticmethod) else cval
                            if (new := self._rebound(inner)) is not None:
                                stack.enter_context(_patched(val, attr, staticmethod(new)))
            if not self.real_gpu:
                from tileport.analysis.fakecuda import fake_cuda

                self.fake = stack.enter_context(fake_cuda())
                from tileport.analysis.fakegrad import custom_functions

                stack.enter_context(custom_functions())  # autograd is off on fake tensors: run backward kernels too
            yield


# ---------------------------------------------------------------------------------------------
# Inputs


def _entry_points(module: ModuleType) -> list[tuple[str, Any]]:
    import torch

    out = []
    for name, obj in vars(module).items():
        if name.startswith("_") or name in SKIP_ENTRIES or name.startswith(("test", "bench")):
            continue
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            out.append((name, obj))
        elif inspect.isclass(obj) and issubclass(obj, torch.nn.Module):
            out.append((name, obj))
    # functions whose source mentions a launch first
    def score(item: tuple[str, Any]) -> int:
        try:
            src = inspect.getsource(item[1])
        except (OSError, TypeError):
            return 1
        return 0 if ("launch" in src or "exhaustive_search" in src) else 1
    return sorted(out, key=score)


def _shape(rank: int, extent: int, cube: bool = False) -> tuple[int, ...]:
    """Small leading dimensions and `extent`-wide last two, or (cube) every dimension `extent`: one extent for all
    makes every dimension equal to every other, so a wrapper's consistency checks between arguments hold."""
    if rank <= 0:
        return ()
    if cube:
        return (extent,) * rank
    return (2,) * max(0, rank - 2) + (extent,) * min(rank, 2)


def _kind_of(p: inspect.Parameter) -> str:
    """"int" / "float" / "bool" for annotated scalars, "tensor" for an unannotated or Tensor-annotated parameter,
    "other" for anything else (a dict of hints, a config object: left to its default)."""
    ann = p.annotation
    if ann is inspect.Parameter.empty:
        return "tensor"
    text = ann if isinstance(ann, str) else getattr(ann, "__name__", None) or repr(ann)
    if text in ("bool", "int", "float"):
        return text
    return "tensor" if "Tensor" in str(text) or "Tensor" in repr(ann) else "other"


def _rank_plans(names: list[str]) -> list[dict[str, int]]:
    guess = {n: _default_rank(n) for n in names}
    plans = [guess]
    for r in (1, 2, 3, 4):
        plans.append({n: (1 if n.lower() in ONE_D_NAMES and r > 1 else r) for n in names})
        plans.append({n: r for n in names})
    for combo in itertools.product((2, 1, 4, 3), repeat=len(names)):
        plans.append(dict(zip(names, combo)))
        if len(plans) > 4 * MAX_RANK_TRIES:
            break
    seen, out = set(), []
    for p in plans:
        key = tuple(sorted(p.items()))
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out[:MAX_RANK_TRIES]


def _tensor(torch: Any, name: str, shape: tuple[int, ...], dtype: Any, device: str, hinted: bool = False) -> Any:
    if not hinted and any(h in name.lower() for h in INDEX_HINTS):
        return torch.zeros(shape, dtype=torch.int32, device=device)
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype, device=device)
    return torch.zeros(shape, dtype=dtype, device=device)


def _param_dtype(torch: Any, name: str, dtype: Any, hints: Any) -> Any:
    """The op dtype, unless the wrapper's own checks name others for this parameter (then the op dtype if it is
    among them, else the first they name)."""
    named = [getattr(torch, d) for d in (hints.dtypes.get(name, []) if hints is not None else [])
             if isinstance(getattr(torch, d, None), torch.dtype)]
    if not named or dtype in named:
        return dtype
    return named[0]


def _values(sig: inspect.Signature, ranks: dict[str, int], extent: int, dtype: Any, device: str,
            fill_optional: bool, hints: Any = None, cube: bool = False) -> tuple[list, dict] | None:
    import torch

    args: list = []
    kwargs: dict = {}
    first_tensor = None
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        has_default = p.default is not inspect.Parameter.empty
        if has_default and not (fill_optional and p.default is None and _kind_of(p) == "tensor"):
            continue
        kind = _kind_of(p)
        if kind == "other" and has_default:
            continue
        if kind == "int":
            v: Any = extent
        elif kind == "float":
            v = 1.0
        elif kind == "bool":
            v = False
        elif has_default:  # an optional tensor: like the first tensor argument
            if first_tensor is None:
                return None
            v = _tensor(torch, p.name, tuple(first_tensor.shape), _param_dtype(torch, p.name, dtype, hints), device,
                        hinted=bool(hints and p.name in hints.dtypes))
        else:
            v = _tensor(torch, p.name, _shape(ranks.get(p.name, 2), extent, cube),
                        _param_dtype(torch, p.name, dtype, hints), device, hinted=bool(hints and p.name in hints.dtypes))
            first_tensor = first_tensor if first_tensor is not None else v
        if p.kind == p.KEYWORD_ONLY:
            kwargs[p.name] = v
        else:
            args.append(v)
    return args, kwargs


def _tensor_params(sig: inspect.Signature) -> list[str]:
    return [p.name for p in sig.parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.default is inspect.Parameter.empty
            and _kind_of(p) == "tensor"]


def _call_label(name: str, args: list, kwargs: dict) -> str:
    import torch

    def fmt(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            return f"{str(v.dtype).removeprefix('torch.')}[{'x'.join(map(str, v.shape))}]"
        return repr(v)
    parts = [fmt(a) for a in args] + [f"{k}={fmt(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def _default_rank(name: str) -> int:
    low = name.lower()
    return 1 if low in ONE_D_NAMES or any(h in low for h in INDEX_HINTS) else 2


def _short_error(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    if not msg and e.__traceback__ is not None:  # a bare `assert cond`: its source line says what failed
        import traceback

        frames = traceback.extract_tb(e.__traceback__)
        if frames and frames[-1].line:
            msg = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}: {frames[-1].line.strip()}"
    return f"{type(e).__name__}: {msg[:160]}"


def _try(cap: Capture, name: str, obj: Any, sig: inspect.Signature, ranks: dict[str, int], extent: int,
         dtype: Any, device: str, fill: bool, hints: Any = None, cube: bool = False) -> bool | None:
    """One call with built inputs: True when it launched, False when it did not, None when no inputs fit."""
    before = len(cap.launches)
    with cap.active():
        vals = _values(sig, ranks, extent, dtype, device, fill, hints, cube)
        if vals is None:
            return None
        args, kwargs = vals
        label = _call_label(name, args, kwargs)
        cap.entry = label
        cap.tried.append(label)
        try:
            if inspect.isclass(obj):
                _construct(obj, extent).forward(*args, **kwargs)
            else:
                obj(*args, **kwargs)
        except (Exception, SystemExit) as e:  # the op's own code: anything may happen
            cap.errors.append(f"{label}: {_short_error(e)}" + (" (after it launched)" if len(cap.launches) > before
                                                                else ""))
        bad = next((why for ln in cap.launches[before:] if (why := cap.rank_mismatch(ln))), None)
        if bad:  # a search-space launch of the wrong rank (not stopped at ct.launch): try other ranks
            del cap.launches[before:]
            cap.errors.append(f"{label}: {bad}")
            return False
    return len(cap.launches) > before


UNPACK = re.compile(r"values to unpack \(expected (\d+)")


def _hinted_plans(tensors: list[str], hints: Any) -> list[dict[str, int]]:
    """Rank plans from the wrapper's own unpacking/indexing: parameters it says nothing about get the usual guess,
    then the rank of the parameters it unpacks (a wrapper comparing `k.shape == q.shape` unpacks only q)."""
    if not tensors or not (hints.exact or hints.at_least):
        return []
    base = {n: _default_rank(n) for n in tensors}
    known = {n: r for n in tensors if (r := hints.rank(n)) is not None}
    plans = [{**base, **known}]
    for r in sorted(set(hints.exact.values()), reverse=True):
        plans.append({**{n: (1 if _default_rank(n) == 1 else r) for n in tensors}, **known})
    return plans


def _from_error(message: str, tensors: list[str], hints: Any) -> dict[str, int] | None:
    """`not enough values to unpack (expected 4, got 2)`: the wrapper unpacks a shape of rank 4."""
    m = UNPACK.search(message)
    if not m:
        return None
    r = int(m.group(1))
    known = {n: rk for n in tensors if (rk := hints.rank(n)) is not None}
    return {**{n: (1 if _default_rank(n) == 1 else r) for n in tensors}, **known}


def _run_entry(cap: Capture, name: str, obj: Any, dtypes: list[Any], device: str, deadline: float) -> None:
    """Call one entry point with built inputs: find a rank plan that launches (the wrapper's own unpacking,
    indexing and dtype checks first, every extent equal first, a rank read off an unpacking error next), then
    reuse it for every dtype and extent, also with optional tensors set."""
    from tileport.analysis.wrapper_hints import hints_for

    fn = obj
    if inspect.isclass(obj):
        fn = obj.forward if "forward" in vars(obj) or hasattr(obj, "forward") else getattr(obj, "__call__", obj)
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    if inspect.isclass(obj):
        sig = sig.replace(parameters=list(sig.parameters.values())[1:])  # drop self
    hints = hints_for(fn)
    tensors = _tensor_params(sig)
    has_optional = any(p.default is None for p in sig.parameters.values())
    good: tuple[dict[str, int], bool] | None = None
    import torch

    first = tensors[0] if tensors else None
    named = [getattr(torch, d) for d in hints.dtypes.get(first, []) if isinstance(getattr(torch, d, None), torch.dtype)]
    for dtype in list(dict.fromkeys([*dtypes, *named])):
        for extent in EXTENTS:
            if good is not None:
                queue = [good]
            else:
                plans = _hinted_plans(tensors, hints) + (_rank_plans(tensors) if tensors else [{}])
                queue = [(p, True) for p in plans] + [(p, False) for p in plans]
            tried: set[tuple] = set()
            while queue:
                ranks, cube = queue.pop(0)
                key = (tuple(sorted(ranks.items())), cube)
                if key in tried:
                    continue
                tried.add(key)
                if time.monotonic() > deadline or len(cap.tried) >= MAX_CALLS:
                    return
                n_err = len(cap.errors)
                if _try(cap, name, obj, sig, ranks, extent, dtype, device, False, hints, cube):
                    good = (ranks, cube)
                    if has_optional:
                        _try(cap, name, obj, sig, ranks, extent, dtype, device, True, hints, cube)
                    break
                if len(cap.errors) > n_err and (retry := _from_error(cap.errors[-1], tensors, hints)):
                    queue.insert(0, (retry, cube))


def _construct(cls: Any, extent: int) -> Any:
    import torch

    sig = inspect.signature(cls.__init__)
    args = []
    for p in list(sig.parameters.values())[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is not inspect.Parameter.empty:
            continue
        kind = _kind_of(p)
        args.append({"int": extent, "float": 1.0, "bool": False}.get(kind, extent))
    with torch.device("cuda"):  # parameters made in __init__ land on the (fake or real) GPU
        return cls(*args)


def call_op(cap: Any, module: ModuleType, torch_dtypes: list, device: str, deadline: float) -> None:
    """Call the op under the capture `cap` (cuTile's or Triton's): the calls its `tileport_inputs(op, device)`
    returns when it defines one, else each entry point with guessed inputs. What fails is kept in `cap.errors`."""
    inputs_fn = getattr(module, "tileport_inputs", None)
    if not callable(inputs_fn):
        for name, obj in _entry_points(module):
            _run_entry(cap, name, obj, torch_dtypes, device, deadline)
        return
    with cap.active():  # one fake-tensor mode for the inputs and the calls
        try:
            calls = list(inputs_fn(module, device))
        except (Exception, SystemExit) as e:
            cap.errors.append(f"tileport_inputs(op, {device!r}): {_short_error(e)}")
            calls = []
        for fn, args, kwargs in calls:
            label = _call_label(getattr(fn, "__name__", "call"), list(args), dict(kwargs))
            cap.entry = label
            cap.tried.append(label)
            try:
                fn(*args, **kwargs)
            except (Exception, SystemExit) as e:
                cap.errors.append(f"{label}: {_short_error(e)}")


def capture(module: ModuleType, dtypes: list[str], *, ranks: dict[str, dict[str, int | None]] | None = None,
            time_budget_s: float = 120.0, tests: list[str] | None = None, op_path: Path | None = None,
            run_main: bool = False, tests_limit_s: float = 120.0, tests_budget_s: float = 30.0,
            seed: list | None = None) -> dict[str, Any]:
    """Run the op's own tests / scripts / `__main__` block (when given), else its entry points with built inputs;
    returns {launches: [Launch], tried, errors, mode, seconds, tolerances, sources}. `seed`: launches recorded before
    (a script's while it was imported): kept first, and with them no inputs are guessed.
    ranks: kernel function -> parameter -> the array rank its body implies (inputs of other ranks are retried)."""
    import torch

    t0 = time.perf_counter()
    real = bool(torch.cuda.is_available())
    cap = Capture(module, real, ranks)
    cap.launches.extend(seed or [])  # launches made before (a script's, while it was imported)
    device = "cuda"
    torch_dtypes = [getattr(torch, d) for d in dtypes if hasattr(torch, d)] or [torch.float16]
    deadline = time.monotonic() + time_budget_s
    tolerances: list = []
    sources: list[str] = []
    if (tests or run_main) and op_path is not None:
        from tileport.analysis.testrun import run_sources

        errors, tolerances, sources = run_sources(cap, module, op_path, list(tests or []), run_main, tests_limit_s,
                                                  tests_budget_s)
        cap.errors.extend(errors)
        cap.tried.extend(sources)
    if not cap.launches:  # else the op's own code paths launched: no guessed inputs
        call_op(cap, module, torch_dtypes, device, deadline)
    if seed:
        sources = [f"{op_path.name if op_path else module.__name__} (import)"] + sources
    return {"launches": cap.launches, "tried": cap.tried, "errors": cap.errors, "tolerances": tolerances,
            "sources": sources, "mode": "gpu" if real else "fake tensors (CPU)",
            "seconds": round(time.perf_counter() - t0, 4)}


__all__ = ["available", "capture", "describe_arg", "Launch"]
