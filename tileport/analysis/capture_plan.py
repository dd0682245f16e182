"""Turn captured launches into plan entries (child process only: it holds the kernel objects).

Each captured launch names a kernel object. Its name is the module attribute that holds it, else
that of the module-level kernel it was made from (`replace_hints`), else its function's name (a
factory kernel). A variant is one set of `ct.Constant` values plus what else changes the compiled
body: compiler hints that differ from the module-level kernel's and a factory's closure values.
Arrays take the tensor's dtype and rank; Python scalars int -> int32 (int64 past its range),
float -> float32, bool -> bool_, as the JIT does.
"""

from __future__ import annotations

import functools
from typing import Any

from tileport.analysis.plan import (InstancePlan, KernelMeta, Plan, VariantPlan, bounded_stem, fmt_value,
                                              slug_value)
from tileport.analysis.capture import launch_hints
from tileport.analysis.schema import KernelInfo, LaunchInfo, MemoryOp, ParamInfo
from tileport.analysis.static import StaticInfo

_TORCH_TO_CT = {"bool": "bool_"}
INT32_MAX = 2**31 - 1


@functools.cache
def none_argument_ok() -> bool:
    """Whether cuda-tile takes None as a kernel argument: only where its own signature type can hold it
    (`ConstantConstraint(None)`; cuda-tile 1.7 refuses it under calling convention v2, so a launch passing None
    raises on a GPU as well)."""
    from cuda.tile.compilation import ConstantConstraint

    try:
        ConstantConstraint(None)
    except TypeError:
        return False
    return True


def none_refused(param: str) -> str:
    """Why a launch passing None for `param` makes no variant."""
    import cuda.tile as ct

    if not none_argument_ok():
        return (f"it passes None for '{param}', which cuda-tile {getattr(ct, '__version__', '')} refuses as a kernel "
                "argument (the launch raises on a GPU too; pass a tensor and a ct.Constant flag instead)")
    return f"it passes None for '{param}' (a constant None; tileport drafts no variant for it yet)"


def _simple(v: Any) -> bool:
    return isinstance(v, (bool, int, float)) and not (isinstance(v, float) and v != v)


def kernel_name(module: Any, k: Any) -> tuple[str, Any | None]:
    """(name, the module-level kernel it derives from or None)."""
    import cuda.tile as ct

    fn = k._annotated_function.pyfunc
    if vars(module).get(fn.__name__) is k:  # its def's name before any alias
        return fn.__name__, k
    for name, obj in vars(module).items():
        if obj is k:
            return name, obj
    for name, obj in vars(module).items():
        if isinstance(obj, ct.kernel) and obj._annotated_function.pyfunc is fn:
            return name, obj
    for name, obj in vars(module).items():  # same function source, e.g. a re-decorated def
        if isinstance(obj, ct.kernel) and obj._annotated_function.pyfunc.__code__ is fn.__code__:
            return name, obj
    return fn.__name__, None


def _options(k: Any) -> dict[str, Any]:
    return {key: v for key, v in vars(k._compiler_options).items()
            if not key.startswith("_") and v is not None and _simple(v)}


def _extras(k: Any, base: Any | None) -> dict[str, Any]:
    """Hints that differ from the module-level kernel's, and a factory's closure values."""
    mine = _options(k)
    extras: dict[str, Any] = {}
    if base is not None:
        theirs = _options(base)
        extras.update({key: v for key, v in mine.items() if theirs.get(key) != v})
    else:
        extras.update({key: v for key, v in mine.items() if key != "opt_level" or v != 3})
        fn = k._annotated_function.pyfunc
        for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if _simple(v):
                extras[var] = v
    return extras


def _scalar_dtype(d: dict[str, Any]) -> str:
    if d["kind"] == "bool":
        return "bool_"
    if d["kind"] == "float":
        return "float32"
    return "int32" if abs(d["value"]) <= INT32_MAX else "int64"


def captured_plan(module: Any, launches: list, static: StaticInfo, kernel_meta_fn, describe_arg,
                  wanted: set[str] | None, filename: str) -> tuple[Plan, dict[tuple[str, str], Any], list[str]]:
    """(plan of the captured kernels in `wanted` (None: all), kernel object per (kernel, variant name), notes)."""
    by_static = {s.name: s for s in static.kernels}
    infos: dict[str, KernelInfo] = {}
    objects: dict[tuple[str, str], Any] = {}
    variants: dict[tuple[str, str], VariantPlan] = {}
    out_launches: list[LaunchInfo] = []
    notes: list[str] = []
    names_by_fn: dict[Any, str] = {}
    first_value: dict[tuple[str, str], Any] = {}  # (kernel, unread constant) -> the value its variants all use
    for ln in launches:
        name, base = kernel_name(module, ln.kernel)
        fn = ln.kernel._annotated_function.pyfunc
        if base is None:  # factory kernels: distinct functions with one name get #2, #3
            if fn.__code__ not in names_by_fn:
                taken = set(names_by_fn.values())
                n, i = name, 2
                while n in taken or (n != name and hasattr(module, n)):
                    n, i = f"{name}_{i}", i + 1
                names_by_fn[fn.__code__] = n
            name = names_by_fn[fn.__code__]
        if wanted is not None and name not in wanted:
            continue
        meta = KernelMeta.model_validate(kernel_meta_fn(name, ln.kernel))
        args = [describe_arg(a) for a in ln.args]
        if len(args) != len(meta.params):
            notes.append(f"{ln.where}: launch passes {len(args)} arguments to {name}, which takes "
                         f"{len(meta.params)}; skipped")
            continue
        params: list[ParamInfo] = []
        consts: dict[str, Any] = {}
        pdt: dict[str, str] = {}
        bad = None
        for p, a in zip(meta.params, args):
            if p.constant:
                if a["kind"] not in ("bool", "int", "float"):
                    bad = f"ct.Constant '{p.name}' got a {a.get('type', a['kind'])}"
                    break
                v = a["value"]
                if p.constant_type == "float":
                    v = float(v)
                consts[p.name] = v
                params.append(ParamInfo(name=p.name, kind="constant", annotation=p.annotation,
                                        constant_type=p.constant_type))
            elif a["kind"] == "tensor":
                dt = _TORCH_TO_CT.get(a["dtype"], a["dtype"])
                pdt[p.name] = dt
                params.append(ParamInfo(name=p.name, kind="array", annotation=p.annotation, ndim=a["ndim"],
                                        index_dtype=p.index_dtype or "int32"))
            elif a["kind"] in ("bool", "int", "float"):
                dt = p.scalar_dtype or _scalar_dtype(a)
                pdt[p.name] = dt
                params.append(ParamInfo(name=p.name, kind="scalar", annotation=p.annotation, dtype=dt))
            elif a["kind"] == "none":
                bad = none_refused(p.name)
                break
            else:
                bad = f"parameter '{p.name}' got {a.get('type', a['kind'])}"
                break
        if bad:
            notes.append(f"{ln.where}: launch of {name} skipped: {bad}")
            continue
        s = by_static.get(name) or next((k for k in static.kernels if k.function == fn.__name__), None)
        for c in [c for c in consts if s is not None and c not in s.reads]:
            # the body never reads it: values differ only in the signature, so one variant covers them
            consts[c] = first_value.setdefault((name, c), consts[c])
        extras = _extras(ln.kernel, base)
        values = {**consts, **extras}
        vname = ",".join(f"{c}={fmt_value(v)}" for c, v in values.items())
        if name not in infos:
            infos[name] = KernelInfo(
                name=name, line=fn.__code__.co_firstlineno, params=params, compiler_options=_options(ln.kernel),
                memory_ops=[MemoryOp(**m.model_dump()) for m in (s.memory if s else [])],
                math_ops=s.math_ops if s else [], loops=s.loops if s else 0)
        where = f"captured {ln.where}" + (f" via {ln.via}" if ln.via != "ct.launch" else "")
        out_launches.append(LaunchInfo(function=ln.where.rsplit(" in ", 1)[-1], line=int(ln.where.split(":")[1].split()[0])
                                       if ":" in ln.where else 0, kernel=name, grid=repr(tuple(ln.grid))
                                       if isinstance(ln.grid, (tuple, list)) else repr(ln.grid),
                                       args=[_arg_text(a) for a in args], constants=dict(consts),
                                       constant_exprs={}, captured=True, entry=ln.entry))
        key = (name, vname)
        arrays = [pdt[p.name] for p in params if p.kind == "array"]
        op_dtype = arrays[0] if arrays else (next(iter(pdt.values()), "none"))
        if key not in variants:
            variants[key] = VariantPlan(kernel=name, function=fn.__name__, name=vname, constants=consts,
                                        sources=[], instances=[])
            objects[key] = ln.kernel
        v = variants[key]
        if where not in v.sources:
            v.sources.append(where)
        if not any(i.param_dtypes == pdt for i in v.instances):
            slug = "__".join(f"{c}-{slug_value(x)}" for c, x in values.items())
            dup = sum(1 for i in v.instances if i.dtype == op_dtype)
            stem = bounded_stem("__".join(x for x in (name, slug, op_dtype + (f"_{dup + 1}" if dup else "")) if x))
            v.instances.append(InstancePlan(dtype=op_dtype, param_dtypes=pdt, stem=stem))
    plan = Plan(kernels=list(infos.values()), launches=_dedupe(out_launches), variants=list(variants.values()),
                notes=notes)
    return plan, objects, notes


def _arg_text(a: dict[str, Any]) -> str:
    if a["kind"] == "tensor":
        return f"{a['dtype']}[{'x'.join(map(str, a['shape']))}]"
    if a["kind"] in ("bool", "int", "float"):
        return repr(a["value"])
    return a.get("type", a["kind"])


def _dedupe(launches: list[LaunchInfo]) -> list[LaunchInfo]:
    seen: set[tuple] = set()
    out = []
    for ln in launches:
        key = (ln.function, ln.line, ln.kernel, ln.grid, tuple(sorted(ln.constants.items())))
        if key not in seen:
            seen.add(key)
            out.append(ln)
    return out


def configurations(module: Any, launches: list, describe_arg) -> list[dict[str, Any]]:
    """The distinct launches (kernel, grid, argument dtypes/shapes/values), first origin kept, in launch order:
    the configurations stages D/E check and time when they came from the op's own tests or scripts."""
    seen: set[tuple] = set()
    out: list[dict[str, Any]] = []
    for ln in launches:
        name, _ = kernel_name(module, ln.kernel)
        described = [describe_arg(a) for a in ln.args]
        if any(d["kind"] == "none" for d in described) and not none_argument_ok():
            continue  # the reference refuses it too (none_refused): nothing to judge or time
        args = [_arg_text(d) for d in described]
        grid = repr(tuple(ln.grid)) if isinstance(ln.grid, (tuple, list)) else repr(ln.grid)
        hints = launch_hints(ln.kernel)
        key = (name, grid, tuple(args), tuple(sorted(hints.items())))
        if key in seen:
            continue
        seen.add(key)
        arrays = [a.split("[", 1)[0] for a in args if "[" in a]
        out.append({"kernel": name, "source": ln.source, "origin": ln.entry, "dtype": arrays[0] if arrays else "none",
                    "grid": grid, "args": args, **({"hints": hints} if hints else {})})
    return out

