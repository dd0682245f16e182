"""Which entries to compile: kernel parameters classified, launches resolved, variants enumerated.

Pure Python (no cuda.tile): it combines the kernel objects' real parameter metadata (from the
child process), the static inspection of the source and the module's TILEPORT declaration.

Variant rules, per kernel, in order:
1. `TILEPORT["variants"]` entries for the kernel, if any, else one constant set per statically
   visible `ct.launch` path, else one set with every constant unknown;
2. an unknown constant takes the values declared in `TILEPORT["constants"]`, else — for a
   `ct.Constant[bool]` or a boolean expression — both False and True, else the default of the
   wrapper argument passed straight through; anything else is an error that says what to declare;
3. identical sets collapse (their reasons are merged); more than MAX_VARIANTS is an error.
Each variant becomes one instance per op dtype (fewer when every array has a fixed dtype).
"""

from __future__ import annotations

import itertools
from typing import Any

from pydantic import BaseModel, Field

from tileport.analysis.declaration import OpDeclaration
from tileport.analysis.schema import ConstantBranch, ConstantValue, KernelInfo, LaunchInfo, MemoryOp, ParamInfo
from tileport.analysis.static import ArgValue, KernelStatic, StaticInfo
from tileport.errors import UserError

MAX_VARIANTS = 32


class ParamMeta(BaseModel):
    """What the kernel object itself says about a parameter (from cuda-tile's annotation parsing)."""

    name: str
    constant: bool = False
    constant_type: str | None = None
    index_dtype: str | None = None  # ArrayAnnotation / ct.IndexedWithInt64
    scalar_dtype: str | None = None  # ScalarAnnotation / ct.ScalarInt64
    static_shape_dims: list[int] = Field(default_factory=list)
    static_stride_dims: list[int] = Field(default_factory=list)
    structured: bool = False  # tuple / list parameter
    annotation: str | None = None


class KernelMeta(BaseModel):
    name: str
    function: str
    line: int
    params: list[ParamMeta]
    compiler_options: dict[str, Any] = Field(default_factory=dict)


class InstancePlan(BaseModel):
    dtype: str
    param_dtypes: dict[str, str]
    stem: str  # file name stem for this instance's artifacts


class VariantPlan(BaseModel):
    kernel: str
    function: str
    name: str
    constants: dict[str, ConstantValue]
    sources: list[str]
    instances: list[InstancePlan]


class Plan(BaseModel):
    kernels: list[KernelInfo]
    launches: list[LaunchInfo]
    variants: list[VariantPlan]
    notes: list[str] = Field(default_factory=list)
    failed: dict[str, str] = Field(default_factory=dict)  # kernel -> why (collect_failures=True)


_KIND_DTYPE = {"float": "float32", "int": "int32", "bool": "bool_"}


def fmt_value(v: ConstantValue) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v)


def _slug_value(v: ConstantValue) -> str:
    return fmt_value(v).replace("-", "m").replace(".", "p").replace("+", "")


slug_value = _slug_value

# An artifact's file name is `<stem>.tileirbc` (and `.tileir`, `.cubin`) inside a target directory: file systems
# allow 255 bytes a name, so a stem past STEM_LIMIT keeps its head and gets a hash of the whole (distinct stems stay
# distinct, the same stem always gets the same name).
STEM_LIMIT = 160


def bounded_stem(stem: str, limit: int = STEM_LIMIT) -> str:
    if len(stem.encode()) <= limit:
        return stem
    import hashlib

    digest = hashlib.sha256(stem.encode()).hexdigest()[:12]
    head = stem.encode()[: limit - len(digest) - 2].decode(errors="ignore").rstrip("_")
    return f"{head}__{digest}"


def _coerce(kernel: str, name: str, ctype: str | None, value: Any, where: str) -> ConstantValue:
    ok = {"bool": isinstance(value, bool),
          "int": isinstance(value, int) and not isinstance(value, bool),
          "float": isinstance(value, (int, float)) and not isinstance(value, bool)}
    if ctype in ok and not ok[ctype]:
        raise UserError(f"{where}: {kernel}.{name} is a ct.Constant[{ctype}] but gets {value!r}; "
                        f"give a {ctype} value")
    if ctype == "float":
        return float(value)
    if not isinstance(value, (bool, int, float)):
        raise UserError(f"{where}: {kernel}.{name} gets {value!r}; constants must be bool, int or float")
    return value


def _classify(k: KernelMeta, s: KernelStatic | None, decl: OpDeclaration, launches: list, filename: str,
              notes: list[str]) -> list[ParamInfo]:
    out: list[ParamInfo] = []
    for p in k.params:
        where = f"{filename}:{k.line}"
        if p.structured:
            raise UserError(f"{where}: {k.name}: parameter '{p.name}' is a tuple/list; tileport analyses "
                            "array, scalar and ct.Constant parameters only")
        if p.constant:
            out.append(ParamInfo(name=p.name, kind="constant", annotation=p.annotation, constant_type=p.constant_type))
            continue
        pd = decl.param(k.name, p.name)
        used_as_array = s is not None and p.name in s.array_ndim
        if pd and pd.kind:
            kind = pd.kind
        elif p.index_dtype or p.static_shape_dims or p.static_stride_dims:
            kind = "array"
        elif p.scalar_dtype:
            kind = "scalar"
        else:
            kind = "array" if used_as_array else "scalar"
        if kind == "array":
            if p.static_shape_dims or p.static_stride_dims:
                raise UserError(f"{where}: {k.name}: parameter '{p.name}' uses static_shape_dims/static_stride_dims; "
                                "tileport cannot pick those values yet — drop the annotation for the analysis")
            ndim = (pd.ndim if pd and pd.ndim is not None else None)
            if ndim is None and s is not None:
                ndim = s.array_ndim.get(p.name)
            if ndim is None:
                why = f" ({s.ndim_evidence[p.name]})" if s is not None and p.name in s.ndim_evidence else ""
                raise UserError(f"{where}: {k.name}: cannot tell the rank of array '{p.name}'{why}; declare it: "
                                f"TILEPORT = {{'params': {{'{k.name}.{p.name}': {{'ndim': N}}}}}}")
            fixed = pd.dtype if pd and isinstance(pd.dtype, str) else None
            out.append(ParamInfo(name=p.name, kind="array", annotation=p.annotation, ndim=ndim,
                                 index_dtype=p.index_dtype or "int32", dtype=fixed))
        else:
            dt = pd.dtype if pd and isinstance(pd.dtype, str) else p.scalar_dtype
            if dt is None:
                idx = [q.name for q in k.params].index(p.name)
                kinds = {ln.args[idx].kind for ln in launches if ln.args and len(ln.args) > idx and ln.args[idx].kind}
                if len(kinds) == 1:
                    dt = _KIND_DTYPE[kinds.pop()]
                    if dt == "int32" and p.scalar_dtype:
                        dt = p.scalar_dtype
                else:
                    dt = "int32"
                    notes.append(f"{k.name}.{p.name}: scalar type not visible in the launches; assumed int32 "
                                 f"(declare TILEPORT['params']['{k.name}.{p.name}'] to change it)")
            out.append(ParamInfo(name=p.name, kind="scalar", annotation=p.annotation, dtype=dt))
    return out


def _launch_infos(k: KernelMeta, params: list[ParamInfo], launches: list, filename: str,
                  notes: list[str]) -> list[tuple[LaunchInfo, dict[str, ArgValue] | None]]:
    out = []
    names = [p.name for p in params]
    consts = [p.name for p in params if p.kind == "constant"]
    for ln in launches:
        by_name: dict[str, ArgValue] | None = None
        if ln.args is not None and len(ln.args) == len(names):
            by_name = dict(zip(names, ln.args))
        elif ln.args is not None:
            notes.append(f"{filename}:{ln.line}: launch passes {len(ln.args)} arguments to {k.name}, "
                         f"which takes {len(names)}; its constants are treated as unknown")
        info = LaunchInfo(
            function=ln.function, line=ln.line, kernel=k.name, grid=ln.grid,
            args=None if ln.args is None else [a.expr for a in ln.args],
            constants={c: (by_name[c].value if by_name and by_name[c].known else None) for c in consts},
            constant_exprs={c: by_name[c].expr for c in consts} if by_name else {},
            guards=ln.guards)
        out.append((info, by_name))
    return out


def _variants_for(k: KernelMeta, params: list[ParamInfo], decl: OpDeclaration,
                  launches: list[tuple[LaunchInfo, dict[str, ArgValue] | None]], filename: str,
                  notes: list[str], s: KernelStatic | None = None) -> list[tuple[dict[str, ConstantValue], list[str]]]:
    consts = [p for p in params if p.kind == "constant"]
    ctype = {p.name: p.constant_type for p in consts}
    where = f"{filename}:{k.line}"
    # Each start: (name -> value or ArgValue-for-unknown, reason)
    starts: list[tuple[dict[str, Any], str]] = []
    declared = [v for v in decl.variants if v.kernel == k.name]
    if declared:
        for v in declared:
            extra = set(v.constants) - set(ctype)
            if extra:
                raise UserError(f"{filename}: TILEPORT variant for {k.name} names {sorted(extra)}, which are not "
                                f"ct.Constant parameters of it ({', '.join(ctype) or 'none'})")
            starts.append(({c: v.constants.get(c) for c in ctype}, "declared"))
    elif launches:
        for info, by_name in launches:
            vals = {c: (by_name[c].value if by_name[c].known else by_name[c]) if by_name else None for c in ctype}
            guard = f" when {' and '.join(info.guards)}" if info.guards else ""
            starts.append((vals, f"launch {info.function}:{info.line}{guard}"))
    else:
        starts.append(({c: None for c in ctype}, "no launch found"))
        if ctype:
            notes.append(f"{k.name}: no ct.launch of it was found; constants come from TILEPORT or enumeration")

    sets: dict[tuple, tuple[dict[str, ConstantValue], list[str]]] = {}
    for vals, reason in starts:
        choices: list[list[tuple[ConstantValue, str | None]]] = []
        for c in ctype:
            v = vals[c]
            if v is not None and not isinstance(v, ArgValue):
                choices.append([(_coerce(k.name, c, ctype[c], v, where), None)])
                continue
            arg: ArgValue | None = v
            declared_vals = decl.constant_values(k.name, c)
            expr = "" if arg is None else (f" (`{arg.expr} = {arg.origin}`)" if arg.origin else f" (`{arg.expr}`)")
            if declared_vals is not None:
                choices.append([(_coerce(k.name, c, ctype[c], x, f"{filename}: TILEPORT constants"), "declared " + c)
                                for x in declared_vals])
                notes.append(f"{k.name}.{c} is computed at run time{expr}; analysed the declared "
                             f"{', '.join(fmt_value(x) for x in declared_vals)}")
            elif ctype[c] == "bool" or (arg is not None and arg.kind == "bool"):
                choices.append([(False, f"enumerated {c}"), (True, f"enumerated {c}")])
            elif s is not None and c not in s.reads:
                # The body never reads it: every value compiles to the same code, so any one will do.
                placeholder: ConstantValue = {"bool": False, "float": 0.0}.get(ctype[c] or (arg.kind if arg else None) or "", 0)
                choices.append([(placeholder, f"unread {c}")])
                notes.append(f"{k.name}.{c} is computed at run time{expr} but the kernel body never reads it; "
                             f"analysed with {fmt_value(placeholder)}")
            elif arg is not None and arg.default is not None and arg.expr.isidentifier():
                choices.append([(_coerce(k.name, c, ctype[c], arg.default, where), f"default {c}")])
                notes.append(f"{k.name}.{c} comes from wrapper argument `{arg.expr}`; analysed its default "
                             f"{fmt_value(arg.default)}")
            else:
                raise UserError(f"{where}: {k.name}: the value of ct.Constant '{c}' is not visible statically"
                                f"{expr}; declare the values to analyse: "
                                f"TILEPORT = {{'constants': {{'{k.name}.{c}': [...]}}}}")
        for combo in itertools.product(*choices):
            values = {c: v for c, (v, _) in zip(ctype, combo)}
            reasons = [reason] + [r for _, r in combo if r]
            key = tuple((c, type(v).__name__, v) for c, v in values.items())
            if key in sets:
                sets[key][1].extend(r for r in reasons if r not in sets[key][1])
            else:
                sets[key] = (values, reasons)
    if len(sets) > MAX_VARIANTS:
        raise UserError(f"{where}: {k.name} would have {len(sets)} variants (limit {MAX_VARIANTS}); list the ones "
                        f"that matter in TILEPORT['variants']")
    return list(sets.values())


def _check_declaration(decl: OpDeclaration, kernels: list[KernelMeta], filename: str) -> None:
    params = {(k.name, p.name): p for k in kernels for p in k.params}
    names = {p for _, p in params}
    kernel_names = {k.name for k in kernels}
    for key in decl.constants:
        kern, _, pname = key.rpartition(".")
        ok = (params.get((kern, pname)) is not None and params[(kern, pname)].constant) if kern else any(
            p.constant and n == pname for (_, n), p in params.items())
        if not ok:
            raise UserError(f"{filename}: TILEPORT['constants'] key '{key}' names no ct.Constant parameter; "
                            f"use 'PARAM' or 'kernel.PARAM'")
    for key in decl.params:
        kern, _, pname = key.rpartition(".")
        if (kern and (kern, pname) not in params) or (not kern and pname not in names):
            raise UserError(f"{filename}: TILEPORT['params'] key '{key}' names no kernel parameter; "
                            f"use 'PARAM' or 'kernel.PARAM'")
    for v in decl.variants:
        if v.kernel not in kernel_names:
            raise UserError(f"{filename}: TILEPORT['variants'] names kernel '{v.kernel}', which the module does not "
                            f"define; kernels: {', '.join(sorted(kernel_names))}")


def build_plan(kernels: list[KernelMeta], static: StaticInfo, decl: OpDeclaration, *, filename: str,
               kernel_filter: str | None = None, collect_failures: bool = False) -> Plan:
    notes = list(static.notes)
    _check_declaration(decl, kernels, filename)
    if kernel_filter is not None and kernel_filter not in {k.name for k in kernels}:
        raise UserError(f"{filename}: no kernel named '{kernel_filter}'; kernels: "
                        f"{', '.join(k.name for k in kernels)}")
    by_static = {s.name: s for s in static.kernels}
    infos: list[KernelInfo] = []
    all_launches: list[LaunchInfo] = []
    variants: list[VariantPlan] = []
    failed: dict[str, str] = {}
    for k in kernels:
        if not collect_failures:
            _plan_kernel(k, by_static, static, decl, filename, kernel_filter, notes, infos, all_launches, variants)
            continue
        marks = (len(infos), len(all_launches), len(variants), len(notes))
        try:
            _plan_kernel(k, by_static, static, decl, filename, kernel_filter, notes, infos, all_launches, variants)
        except UserError as e:
            failed[k.name] = str(e)
            del infos[marks[0]:], all_launches[marks[1]:], variants[marks[2]:], notes[marks[3]:]
    # keep notes unique, in order
    seen_notes: set[str] = set()
    notes = [n for n in notes if not (n in seen_notes or seen_notes.add(n))]
    return Plan(kernels=infos, launches=all_launches, variants=variants, notes=notes, failed=failed)


def _plan_kernel(k: KernelMeta, by_static: dict, static: StaticInfo, decl: OpDeclaration, filename: str,
                 kernel_filter: str | None, notes: list[str], infos: list[KernelInfo],
                 all_launches: list[LaunchInfo], variants: list[VariantPlan]) -> None:
    s = by_static.get(k.name)
    launches = [ln for ln in static.launches if ln.kernel == k.name]
    params = _classify(k, s, decl, launches, filename, notes)
    const_names = {p.name for p in params if p.kind == "constant"}
    infos.append(KernelInfo(
        name=k.name, line=k.line, params=params, compiler_options=k.compiler_options,
        constant_branches=[ConstantBranch(line=i.line, condition=i.condition,
                                          constants=[n for n in i.names if n in const_names])
                           for i in (s.if_sites if s else []) if const_names & set(i.names)],
        memory_ops=[MemoryOp(**m.model_dump()) for m in (s.memory if s else [])],
        math_ops=s.math_ops if s else [], loops=s.loops if s else 0))
    resolved = _launch_infos(k, params, launches, filename, notes)
    all_launches.extend(info for info, _ in resolved)
    if kernel_filter is not None and k.name != kernel_filter:
        return
    for values, sources in _variants_for(k, params, decl, resolved, filename, notes, s):
        name = ",".join(f"{c}={fmt_value(v)}" for c, v in values.items())
        slug = "__".join(f"{c}-{_slug_value(v)}" for c, v in values.items())
        instances: list[InstancePlan] = []
        seen: set[tuple] = set()
        for op_dtype in decl.dtypes:
            pdt: dict[str, str] = {}
            for p in params:
                if p.kind == "array":
                    pd = decl.param(k.name, p.name)
                    pdt[p.name] = (pd.dtype_for(op_dtype) if pd and pd.dtype else None) or p.dtype or op_dtype
                elif p.kind == "scalar":
                    pdt[p.name] = p.dtype or "int32"
            key = tuple(sorted(pdt.items()))
            if key in seen:
                continue
            seen.add(key)
            stem = bounded_stem("__".join(x for x in (k.name, slug, op_dtype) if x))
            instances.append(InstancePlan(dtype=op_dtype, param_dtypes=pdt, stem=stem))
        variants.append(VariantPlan(kernel=k.name, function=k.function, name=name, constants=values,
                                    sources=sources, instances=instances))
