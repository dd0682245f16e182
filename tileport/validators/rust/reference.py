"""The reference side of a port: `tileport analyze`'s analysis.json, looked up the way a port's spec names it.

- `load_analysis(path)`         — out/<op>/ or its analysis.json -> `Analysis` (bad input: UserError)
- `find_instance(analysis, key)` — the (variant, instance) a `ReferenceKey` names, or a reason it is not there
- `tensor_specs(...)`           — the per-array launch assumptions cuTile Python's JIT compiled the reference
                                   under (shape/stride divisibility, unit strides, base alignment), as a spec's
                                   `tensors` + `strides`, so port and reference are compiled under the same facts
- `derive_spec(analysis)`       — a whole spec skeleton: one entry per kernel, one variant per Constant set x dtype,
                                   each naming its reference
- `sync_spec(spec, analysis)`   — rewrite the assumptions of every variant that names a reference from it
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from tileport.errors import UserError
from tileport.analysis import schema
from tileport.analysis.schema import ANALYSIS_FILE, Analysis, Instance, TargetBuild, Variant as RefVariant
from tileport.validators.rust.spec import DumpSpec, Entry, ReferenceKey, TensorSpec, Variant, const_text, module_ident


# cuTile Python dtype names -> the Rust element types cutile generics take.
RUST_DTYPES = {
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16",
    "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bool_": "bool", "float8_e4m3fn": "f8e4m3fn", "float8_e5m2": "f8e5m2",
}


load_analysis = schema.load_analysis  # the one reader of analysis.json (a directory or the file)


def analysis_path(path: str | Path) -> Path:
    p = Path(path)
    return p / ANALYSIS_FILE if p.is_dir() else p


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):  # True is not the constant 1
        return type(a) is type(b) and a == b
    return a == b


def _same_constants(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return set(a) == set(b) and all(_same_value(a[k], b[k]) for k in a)


def name_values(name: str | None) -> dict[str, str]:
    """`k=v` parts of a variant's name (stage A writes constants and a factory's closure values so)."""
    out = {}
    for part in (name or "").split(","):
        k, sep, v = part.partition("=")
        if sep:
            out[k.strip()] = v.strip()
    return out


def find_instance(analysis: Analysis, key: ReferenceKey) -> tuple[RefVariant, Instance] | str:
    """The reference instance `key` names, or a one-line reason naming what does exist."""
    kernels = sorted({v.kernel for v in analysis.variants})
    variants = [v for v in analysis.variants if v.kernel == key.kernel]
    if not variants:
        return f"the reference has no kernel {key.kernel!r} (it has: {', '.join(kernels) or 'none'})"
    same = [v for v in variants if _same_constants(v.constants, key.constants)]
    if key.closure:  # a factory's instances differ only in closure values, which the variant's name records
        same = [v for v in same if all(name_values(v.name).get(k) == const_text(x) for k, x in key.closure.items())]
    if key.hints:  # a kernel re-wrapped per launch: the instance compiled with the same hints, where stage A named one
        same = [v for v in same if all(name_values(v.name).get(k) == str(x) for k, x in key.hints.items())] or same
    variant = same[0] if same else None
    if variant is None:
        have = "; ".join(v.name or "(no constants)" for v in variants)
        what = f"constants {key.constants}" + (f" and closure values {key.closure}" if key.closure else "")
        return f"{key.kernel} has no variant with {what} (it has: {have})"
    inst = next((i for i in variant.instances if i.dtype == key.dtype), None)
    if inst is None:
        have = ", ".join(i.dtype for i in variant.instances)
        return f"{key.kernel}[{variant.name}] was not instantiated for {key.dtype} (it has: {have})"
    return variant, inst


def find_build(inst: Instance, target: str) -> TargetBuild | None:
    return next((b for b in inst.builds if b.target == target), None)


def _params(analysis: Analysis, kernel: str) -> list[str]:
    info = next((k for k in analysis.kernels if k.name == kernel), None)
    return [p.name for p in info.params] if info else []


def tensor_specs(analysis: Analysis, kernel: str, inst: Instance,
                 params: dict[str, str] | None = None) -> tuple[dict[str, TensorSpec], dict[str, list[int]]]:
    """`tensors` and `strides` of a spec variant for every array parameter of the reference instance, keyed by
    port parameter name (`params` maps port -> reference names; unmapped names are the reference's)."""
    to_port = {ref: port for port, ref in (params or {}).items()}
    names = _params(analysis, kernel)
    tensors: dict[str, TensorSpec] = {}
    strides: dict[str, list[int]] = {}
    for name, sig in zip(names, inst.signature):
        if sig.get("kind") != "array":
            continue
        ndim = int(sig.get("ndim") or len(sig.get("shape_divisible_by") or []))

        def bits(key: str, default: int = 1) -> list[int]:
            vals = list(sig.get(key) or [None] * ndim)
            return [int(v) if isinstance(v, int) and v > 0 else default for v in vals]

        stride_const = list(sig.get("stride_constant") or [None] * ndim)
        port = to_port.get(name, name)
        tensors[port] = TensorSpec(
            shape_div=[_pow2(d) for d in bits("shape_divisible_by")],
            stride_div=[_pow2(d) for d in bits("stride_divisible_by")],
            stride_one=[c == 1 for c in stride_const],
            base_align=_pow2(int(sig.get("base_addr_divisible_by") or 1)),
            elements_disjoint=not sig.get("may_alias_internally", False),
        )
        strides[port] = [int(c) if isinstance(c, int) else -1 for c in stride_const]
    return tensors, strides


def _pow2(d: int) -> int:
    """Largest power of two dividing d (the JIT's facts are powers of two; keep the spec valid regardless)."""
    return d & -d if d > 0 else 1


VARIANT_NAME_MAX = 64  # a spec variant name's limit (rust.spec.Name)


def _variant_name(dtype: str, constants: dict[str, Any]) -> str:
    parts = [RUST_DTYPES.get(dtype, dtype)]
    parts += [f"{k}-{str(v).lower() if isinstance(v, bool) else v}" for k, v in constants.items()]
    name = re.sub(r"[^A-Za-z0-9_\-]", "_", "__".join(parts))
    if len(name) <= VARIANT_NAME_MAX:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]  # long constant sets: keep names unique and in range
    return f"{name[:VARIANT_NAME_MAX - 10].rstrip('_-')}__{digest}"


_ENTRY_RE = re.compile(r"#\[\s*cutile::entry[^\]]*\]\s*(?:pub\s+)?(?:unsafe\s+)?fn\s+(\w+)")


def port_tensor_params(kernel_rs: str) -> dict[str, dict[str, bool]]:
    """Per `#[cutile::entry]` fn of a port's kernel.rs: parameter -> whether it is a `Tensor` (False: a raw
    pointer or a scalar, which take no tensor facts). Unparseable entries are left out."""
    out: dict[str, dict[str, bool]] = {}
    for m in _ENTRY_RE.finditer(kernel_rs):
        i, depth = m.end(), 0
        while i < len(kernel_rs) and not (kernel_rs[i] == "(" and depth == 0):  # skip the generics
            depth += {"<": 1, ">": -1}.get(kernel_rs[i], 0)
            i += 1
        start, depth = i + 1, 0
        for j in range(start, len(kernel_rs)):
            c = kernel_rs[j]
            if c in "([{<":
                depth += 1
            elif c in ")]}>" and not (c == ">" and kernel_rs[j - 1] == "-"):
                if depth == 0 and c == ")":
                    break
                depth -= 1
        else:
            continue
        params: dict[str, bool] = {}
        chunk, depth = "", 0
        for c in kernel_rs[start:j] + ",":
            if c == "," and depth == 0:
                name, _, ty = chunk.partition(":")
                if name.strip():
                    params[name.strip().removeprefix("mut ").strip()] = "Tensor<" in ty
                chunk = ""
                continue
            depth += 1 if c in "([{<" else -1 if c in ")]}>" else 0
            chunk += c
        out[m.group(1)] = params
    return out


def derive_spec(analysis: Analysis, module: str | None = None, targets: list[str] | None = None,
                port_params: dict[str, dict[str, bool]] | None = None) -> DumpSpec:
    """A spec skeleton from the analysis: entry `<kernel minus _kernel>` per reference kernel, one variant per
    Constant set x dtype with generics `[dtype, constants...]`, the reference's array assumptions, and a
    `reference` key so the self-check pairs it. Entry/generic/parameter names are the reference's: edit them
    to the port's (and add `reference.params` where a parameter is renamed)."""
    entries: dict[str, list[Variant]] = {}
    for rv in analysis.variants:
        entry_name = rv.kernel[: -len("_kernel")] if rv.kernel.endswith("_kernel") else rv.kernel
        for inst in rv.instances:
            tensors, strides = _only_tensors(*tensor_specs(analysis, rv.kernel, inst), (port_params or {}).get(entry_name))
            generics = [RUST_DTYPES.get(inst.dtype, inst.dtype)]
            generics += [str(v).lower() if isinstance(v, bool) else str(v) for v in rv.constants.values()
                         if isinstance(v, (bool, int))]
            variant = Variant(name=_variant_name(inst.dtype, rv.constants), generics=generics, strides=strides,
                              tensors=tensors,
                              reference=ReferenceKey(kernel=rv.kernel, constants=dict(rv.constants), dtype=inst.dtype))
            entries.setdefault(entry_name, []).append(variant)
    if not entries:
        raise UserError(f"the analysis of {analysis.op} has no kernel instances to derive a spec from")
    return DumpSpec(module=module or module_ident(analysis.op), entries=[Entry(name=n, variants=vs) for n, vs in entries.items()],
                    targets=targets or list(analysis.targets) or ["sm_90"])


def _only_tensors(tensors: dict[str, TensorSpec], strides: dict[str, list[int]],
                  port: dict[str, bool] | None) -> tuple[dict[str, TensorSpec], dict[str, list[int]]]:
    """Drop the facts of parameters the port declares as something other than a Tensor (a raw pointer)."""
    if not port:
        return tensors, strides
    keep = [n for n in tensors if port.get(n, True)]
    return {n: tensors[n] for n in keep}, {n: strides[n] for n in keep if n in strides}


def sync_spec(spec: DumpSpec, analysis: Analysis,
              port_params: dict[str, dict[str, bool]] | None = None) -> tuple[DumpSpec, list[str]]:
    """Replace `tensors` / `strides` of every variant that names a reference with the reference's assumptions
    (parameters the reference does not have are kept). Returns the new spec and one line per change."""
    changes: list[str] = []
    new = spec.model_copy(deep=True)
    for entry in new.entries:
        for variant in entry.variants:
            if variant.reference is None:
                continue
            found = find_instance(analysis, variant.reference)
            if isinstance(found, str):
                changes.append(f"{entry.name}/{variant.name}: not synced: {found}")
                continue
            rv, inst = found
            tensors, strides = _only_tensors(*tensor_specs(analysis, rv.kernel, inst, variant.reference.params),
                                             (port_params or {}).get(entry.name))
            for name in [n for n in variant.tensors if (port_params or {}).get(entry.name, {}).get(n, True) is False]:
                del variant.tensors[name]  # a raw-pointer parameter takes no tensor facts
                variant.strides.pop(name, None)
                changes.append(f"{entry.name}/{variant.name}: {name} is not a Tensor in the port; its tensor facts "
                               "were dropped")
            for name in tensors:
                if variant.tensors.get(name) != tensors[name] or variant.strides.get(name) != strides[name]:
                    changes.append(f"{entry.name}/{variant.name}: {name} <- {_describe(tensors[name])}, "
                                   f"strides {strides[name]}")
                variant.tensors[name] = tensors[name]
                variant.strides[name] = strides[name]
            # cuTile Python does not specialise scalar arguments: a divisibility hint the reference lacks goes
            to_port = {ref: port for port, ref in variant.reference.params.items()}
            for name, sig in zip(_params(analysis, rv.kernel), inst.signature):
                port = to_port.get(name, name)
                if sig.get("kind") == "scalar" and port in variant.scalar_hints:
                    del variant.scalar_hints[port]
                    changes.append(f"{entry.name}/{variant.name}: scalar hint on {port} dropped (the reference "
                                   "assumes nothing about scalars)")
    return DumpSpec.model_validate(new.model_dump()), changes


def _describe(t: TensorSpec) -> str:
    return (f"shape_div {t.shape_div}, stride_div {t.stride_div}, stride_one {t.stride_one}, "
            f"base_align {t.base_align}")
