"""Plan the Rust entries of a draft from the analysis, translate each, and assemble kernel.rs, spec and contract.

One entry per kernel x *structural* group: the analysis' variants of a kernel are grouped by the truth values of
the constant branches in its body (and by its bool/float constants, which are folded, not generics), so each
entry is straight-line code for one branch choice. Integer `ct.Constant` parameters the body still uses after
folding are const generics; the spec carries one variant per (analysis variant x dtype) naming its reference.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from tileport.draft.body import INDENT, BodyTranslator, rust_name
from tileport.draft.syntax import canonical_ct
from tileport.draft.schema import Draft, Hole, HostContract, HostEntry, HostParam, HostVariant
from tileport.draft.values import INTS, OP_DTYPE, RUST_DTYPE, Array, Unsupported, Val, shape_macro
from tileport.errors import UserError
from tileport.analysis.schema import Analysis, KernelInfo, Variant as RefVariant
from tileport.analysis.static import Unknown, fold_constant, module_values
from tileport.validators.rust.reference import name_values, tensor_specs
from tileport.validators.rust.spec import (DumpSpec, Entry, Extent, ReferenceKey, Variant, limited, module_ident,
                                           rust_ident)

# cutile-compiler 0.5.0 kernel_entry_generator.rs:132-139: a `&mut Tensor` entry parameter has rank 3 at most (cutile
# 0.5.0 tensor.rs:916-953 partition_launch_grid: "Mutable tensor must be at most rank 3.")
MAX_MUT_RANK = 3

_HINT_KEYS = {"occupancy": "occupancy", "num_ctas": "num_cta_in_cga", "num_cta_in_cga": "num_cta_in_cga"}


def draft_port(analysis: Analysis, kernel: str | None = None) -> Draft:
    """Translate the analysed op (or one kernel of it) to a cutile-rs draft; see the package docstring.

    Bad input is a one-line UserError; a statement the translator cannot handle is a hole; a translator bug outside
    any statement is a one-line UserError saying so (never a traceback)."""
    try:
        return _draft_port(analysis, kernel)
    except UserError:
        raise
    except (ArithmeticError, AttributeError, IndexError, KeyError, TypeError, ValueError, RecursionError,
            SyntaxError) as e:
        raise UserError(f"tileport draft failed on {analysis.op}: {type(e).__name__}: {str(e)[:200]} (a tileport "
                        "bug; please report it with the op)") from e


def _draft_port(analysis: Analysis, kernel: str | None) -> Draft:
    path = Path(analysis.source.path)
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot read the op source {path} named by the analysis: {e.strerror or e}") from None
    tree = ast.parse(source, filename=str(path))
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    module_consts = module_values(path, tree)
    kernels = [k for k in analysis.kernels if kernel is None or k.name == kernel]
    if not kernels:
        have = ", ".join(k.name for k in analysis.kernels) or "none"
        raise UserError(f"{analysis.op} has no kernel {kernel!r} (it has: {have})")

    lines = source.splitlines()
    module = module_ident(analysis.op)
    entries_rs: list[str] = []
    spec_entries: list[Entry] = []
    host_entries: list[HostEntry] = []
    holes: list[Hole] = []
    seen_holes: set[tuple] = set()
    used_entry_names: set[str] = set()
    helpers: set[int] = set()

    for info in kernels:
        fn = functions.get(info.name) or _nested_kernel(tree, info.name)
        variants = [v for v in analysis.variants if v.kernel == info.name and v.instances]
        if fn is None or not variants:
            continue
        fn = canonical_ct(fn, tree, module_consts)
        for group, folded in _fold_shape_constants(fn, info, _groups(fn, info, variants, module_consts),
                                                   module_consts, lines, path.name, analysis.targets):
            base_name = _entry_name(info.name, folded, used_entry_names)
            dtypes: list[str | None] = [None]
            if _probe(fn, info, group, folded, module_consts, lines, path.name, analysis.targets).needs_dtype:
                dtypes = sorted({i.dtype for v in group for i in v.instances})
            for dtype in dtypes:
                entry_name = base_name if dtype is None else limited(f"{base_name}_{RUST_DTYPE.get(dtype, dtype)}")
                used_entry_names.add(entry_name)
                _draft_entry(analysis, info, fn, group, folded, module_consts, lines, path, entry_name, dtype,
                             seen_holes, holes, entries_rs, spec_entries, host_entries, helpers, functions)

    if not spec_entries:
        raise UserError(f"the analysis of {analysis.op} has no kernel instances to draft")
    header = (f"// Draft port of {path.name}, written by `tileport draft` (deterministic translation, no model).\n"
              f"// One entry per kernel and constant-branch choice; integer ct.Constant parameters are const generics.\n")
    if holes:
        header += (f"// {len(holes)} construct(s) are left as TILEPORT-HOLE regions for a writer to fill "
                   f"({sum(h.gap for h in holes)} of them named cutile-rs gaps).\n")
    body = "\n\n".join([_strides_helper(n) for n in sorted(helpers)] + entries_rs)
    kernel_rs = (f"{header}#[cutile::module]\npub mod {module} {{\n{INDENT}use cutile::core::*;\n\n{body}\n}}\n")
    kernel_rs, holes = _number_holes(kernel_rs, holes)
    spec = DumpSpec(module=module, entries=spec_entries, targets=list(analysis.targets) or ["sm_90"])
    contract = HostContract(module=module, op=analysis.op, entries=host_entries,
                            assumptions=list(analysis.assumptions),
                            notes=["an output with a static tile shape (`partition` in its parameter) is launched "
                                   "as `tensor.partition(shape)`: cutile requires the launch grid to equal that "
                                   "partition grid (ceil(dim / tile) per axis, 1 past the rank)",
                                   "an output with dynamic tile dims (`{[-1, ...]}`) is stored through partition_mut "
                                   "of the whole tensor; cutile 0.5 cannot launch it (the entry's comment says why)"])
    return Draft(op=analysis.op, kernel_rs=kernel_rs, spec=spec, host_contract=contract, holes=holes)


def _variant_name(dtype: str, constants: dict) -> str:
    parts = [RUST_DTYPE.get(dtype, dtype)] + [f"{k}-{str(v).lower() if isinstance(v, bool) else v}"
                                               for k, v in constants.items()]
    return limited(re.sub(r"[^A-Za-z0-9_.-]", "_", "__".join(parts)))


def _nested_kernel(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    """A kernel defined inside a factory function (one definition of that name, else None)."""
    found = [n for top in tree.body if isinstance(top, (ast.FunctionDef, ast.ClassDef))
             for n in ast.walk(top) if n is not top and isinstance(n, ast.FunctionDef) and n.name == name]
    if len(found) != 1:
        return None
    found[0]._tileport_nested = True  # its free names are closure values (see _free_names)
    return found[0]


def _number_holes(kernel_rs: str, holes: list[Hole]) -> tuple[str, list[Hole]]:
    """Give each hole region its id, h1, h2, ... in order of appearance in kernel.rs (the hole contract)."""
    order: dict[str, str] = {}
    for m in re.finditer(r"@HOLE[0-9]+@", kernel_rs):
        order.setdefault(m.group(0), f"h{len(order) + 1}")
    kernel_rs = re.sub(r"@HOLE[0-9]+@", lambda m: order[m.group(0)], kernel_rs)
    numbered = [h.model_copy(update={"id": order[h.id]}) for h in holes if h.id in order]
    return kernel_rs, sorted(numbered, key=lambda h: int(h.id[1:]))


def _probe(fn, info, group, folded, module_consts, lines, file, targets) -> BodyTranslator:
    """A first translation, generic over E: does the body need a literal of the op dtype (`needs_dtype`), or tile
    extents computed from int constants (`fold_requests`)?"""
    probe: set[int] = set()
    _, _, _, _, tr = _entry(fn, info, group, folded, module_consts, lines, file, "probe", lambda e: None, targets,
                            probe, None)
    return tr


def _fold_shape_constants(fn, info, groups, module_consts, lines, file, targets):
    """Split each group by the values of the int constants its tile extents compute with (fold_requests): those
    constants are folded in the entry (static per variant, named in its name), the rest stay const generics."""
    out = []
    pending = list(groups)
    while pending:
        group, folded = pending.pop(0)
        asked = _probe(fn, info, group, folded, module_consts, lines, file, targets).fold_requests - set(folded)
        names = sorted(n for n in asked if all(isinstance(v.constants.get(n), int)
                                               and not isinstance(v.constants.get(n), bool) for v in group))
        if not names:
            out.append((group, folded))
            continue
        by_value: dict[tuple, list[RefVariant]] = {}
        for v in group:
            by_value.setdefault(tuple(v.constants[n] for n in names), []).append(v)
        pending[:0] = [(sub, {**folded, **dict(zip(names, values))}) for values, sub in by_value.items()]
    return out


def _draft_entry(analysis, info, fn, group, folded, module_consts, lines, path, entry_name, dtype, seen_holes,
                 holes, entries_rs, spec_entries, host_entries, helpers, functions) -> None:
    def on_hole(e: Unsupported, entry=entry_name, kname=info.name) -> str:
        node = e.node
        token = f"@HOLE{len(holes)}@"  # numbered h1, h2, ... by appearance once kernel.rs is assembled
        holes.append(Hole(what=e.what, file=path.name, line=getattr(node, "lineno", fn.lineno),
                          col=getattr(node, "col_offset", 0) + 1, kernel=kname, entry=entry, detail=e.detail,
                          id=token, gap=e.gap))
        return token

    if dtype is not None:
        group = [v.model_copy(update={"instances": [i for i in v.instances if i.dtype == dtype]}) for v in group]
        group = [v for v in group if v.instances]
    text, generics, params, uses_e, tr = _entry(fn, info, group, folded, module_consts, lines, path.name,
                                                entry_name, on_hole, analysis.targets, helpers, dtype)
    entries_rs.append(text)
    extents = tr.slab_extents
    closure = {k.removeprefix(CLOSURE): v for k, v in folded.items() if k.startswith(CLOSURE)}
    hints = {_PY_HINT.get(k[len(HINT):], k[len(HINT):]): v for k, v in folded.items() if k.startswith(HINT)}
    spec_entries.append(Entry(name=entry_name, variants=_spec_variants(analysis, info, group, generics, uses_e,
                                                                       extents, closure, hints),
                              extents={g: Extent(param=p, axis=d) for g, (_, _, p, d) in extents.items()}))
    host_entries.append(_host_entry(analysis, info, entry_name, group, generics, params, uses_e, folded, functions,
                                    extents))


# ---- planning -------------------------------------------------------------------------------------

CLOSURE = "closure:"  # a folded key naming a factory kernel's closure value (the analysis' variant name has it)


def _free_names(fn: ast.FunctionDef) -> set[str]:
    """Names a kernel defined inside a factory reads from its closure (neither parameters nor assigned)."""
    if getattr(fn, "_tileport_nested", False) is False:
        return set()
    body = [n for st in fn.body for n in ast.walk(st)]
    bound = {a.arg for a in fn.args.args + fn.args.kwonlyargs} | {
        n.id for n in body if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return {n.id for n in body if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


def _closure_values(v: RefVariant, free: set[str]) -> dict[str, Any]:
    """A factory kernel's closure values, as stage A's capture recorded them in the variant name (k=v, ...)."""
    out: dict[str, Any] = {}
    for key, text in name_values(v.name).items():
        if key not in free or key in v.constants:
            continue
        value = fold_constant(ast.Constant(True) if text == "true" else ast.Constant(False) if text == "false"
                              else ast.parse(text, mode="eval").body if text.strip() else ast.Constant(None), {}) \
            if text.replace(".", "", 1).replace("-", "", 1).replace("e", "", 1).isalnum() else Unknown(text)
        if isinstance(value, (bool, int, float)):
            out[key] = value
    return out


def _constant_tests(fn: ast.FunctionDef, constants: set[str], module_consts: dict[str, Any]) -> list[ast.expr]:
    """`if` / conditional-expression tests made only of constants: they fold per entry."""
    tests = []
    for node in ast.walk(fn):
        if isinstance(node, (ast.If, ast.IfExp)):
            names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
            if names and names <= constants | set(module_consts) and names & constants:
                tests.append(node.test)
    return tests


def _groups(fn: ast.FunctionDef, info: KernelInfo, variants: list[RefVariant], module_consts: dict[str, Any]):
    """[(variants, folded)]: folded maps each folded test (ast.dump) -> bool, and bool/float constants -> value."""
    constants = {p.name for p in info.params if p.kind == "constant"}
    free = _free_names(fn)
    closures = {id(v): _closure_values(v, free) for v in variants}
    constants |= {k for c in closures.values() for k in c}
    tests = _constant_tests(fn, constants, module_consts)
    groups: dict[tuple, tuple[list[RefVariant], dict[str, Any]]] = {}
    for v in variants:
        env = {**module_consts, **v.constants, **closures[id(v)]}
        folded: dict[str, Any] = {f"{CLOSURE}{k}": val for k, val in closures[id(v)].items()}
        for t in tests:
            value = fold_constant(t, env)  # stage A's evaluator: a branch folds exactly as the analysis saw it
            if not isinstance(value, Unknown):
                folded[ast.dump(t)] = bool(value)
        for name, value in v.constants.items():
            if isinstance(value, (bool, float)):
                folded[name] = value
        folded.update(_variant_hints(v))
        key = tuple(sorted((k, repr(val)) for k, val in folded.items()))
        groups.setdefault(key, ([], folded))[0].append(v)
    return list(groups.values())


HINT = "hint:"  # a folded key naming a per-launch compiler hint (`ct.kernel(fn, num_ctas=2)` per launch)
_PY_HINT = {"num_cta_in_cga": "num_ctas"}  # a hint under cuTile Python's option name (CompilerOptions)


def _variant_hints(v: RefVariant) -> dict[str, int]:
    """Hints stage A recorded for this variant's launches (in its name, `num_ctas=2,occupancy=1`), when the kernel is
    re-wrapped per launch: the entry is written per hint value, as each reference was compiled."""
    out: dict[str, int] = {}
    for part in v.name.split(","):
        key, _, text = part.partition("=")
        if key in _HINT_KEYS and key not in v.constants and text.strip().lstrip("-").isdigit():
            out[f"{HINT}{key}"] = int(text)
    return out


def _entry_name(kernel: str, folded: dict[str, Any], used: set[str]) -> str:
    base = kernel[: -len("_kernel")] if kernel.endswith("_kernel") and len(kernel) > 7 else kernel
    parts = []
    for key, value in folded.items():
        if key.startswith("Compare(") or key.startswith("Name(") or key.startswith("BoolOp(") \
                or key.startswith("UnaryOp("):
            text = _test_text(key)
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
                continue  # a bare bool constant: named below from the constant itself
            parts.append(_slug(text) if value else f"not_{_slug(text)}")
        elif isinstance(value, bool):
            if value:
                parts.append(key.removeprefix(CLOSURE).lower())
        else:
            parts.append(f"{key.removeprefix(CLOSURE).lower()}_{_slug(str(value))}")
    name = limited(rust_ident("_".join([base] + [p for p in parts if p])), 60)
    candidate, n = name, 2
    while candidate in used:
        candidate, n = f"{name}_{n}", n + 1
    return candidate


def _test_text(dump: str) -> str:
    try:
        node = eval(dump, {k: getattr(ast, k) for k in dir(ast) if not k.startswith("_")})  # noqa: S307 - ast dump
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - naming only
        return "cond"


def _slug(text: str) -> str:
    text = text.replace("==", " eq ").replace("!=", " ne ").replace("<=", " le ").replace(">=", " ge ")
    text = text.replace("<", " lt ").replace(">", " gt ").replace(" and ", " and ").replace(" or ", " or ")
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


# ---- one entry ------------------------------------------------------------------------------------

def _stored_arrays(fn: ast.FunctionDef) -> set[str]:
    views: dict[str, str] = {}
    stored: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            v = node.value
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "tiled_view" \
                    and isinstance(v.func.value, ast.Name):
                views[node.targets[0].id] = v.func.value.id
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if isinstance(f.value, ast.Name) and f.value.id == "ct" and f.attr in ("store", "scatter") and node.args:
                if isinstance(node.args[0], ast.Name):
                    stored.add(node.args[0].id)
            elif f.attr == "store" and isinstance(f.value, ast.Name) and f.value.id in views:
                stored.add(views[f.value.id])
    return stored


def _entry(fn: ast.FunctionDef, info: KernelInfo, group: list[RefVariant], folded: dict[str, Any],
           module_consts: dict[str, Any], lines: list[str], file: str, entry_name: str, on_hole, targets: list[str],
           helpers: set[int], concrete: str | None = None):
    inst = group[0].instances[0]
    stored = _stored_arrays(fn)
    params: dict[str, Val] = {}
    sig: list[tuple[str, str, HostParam]] = []
    shared_outputs: set[str] = set()
    uses_e = False
    int_consts = [p.name for p in info.params if p.kind == "constant" and p.name not in folded
                  and all(isinstance(v.constants.get(p.name), int) and not isinstance(v.constants.get(p.name), bool)
                          for v in group)]
    non_int = {p.name: group[0].constants.get(p.name) for p in info.params
               if p.kind == "constant" and p.name not in int_consts}
    for p in info.params:
        rname = rust_name(p.name)
        if p.kind == "array":
            fixed = p.dtype or (inst.param_dtypes.get(p.name) if inst.param_dtypes.get(p.name) != inst.dtype else None)
            seen = {i.param_dtypes.get(p.name) for v in group for i in v.instances}
            if fixed is None and len(seen) == 1 and RUST_DTYPE.get(next(iter(seen)) or "", "") in INTS:
                fixed = next(iter(seen))  # an index array (int in every variant) is not of the op's float dtype
            dtype = RUST_DTYPE.get(fixed, fixed) if fixed else (RUST_DTYPE.get(concrete, concrete) if concrete
                                                                  else OP_DTYPE)
            uses_e |= dtype == OP_DTYPE
            ndim = p.ndim or 1
            arr = Array(rname, ndim, dtype, mutable=p.name in stored)
            params[p.name] = Val("array", rname, value=arr)
            # cutile-compiler 0.5.0 kernel_entry_generator.rs:132-139 refuses a `&mut Tensor` parameter of rank > 3
            # ("Unable to partition tensors with rank > 3"): such an output is a `&Tensor`, every view of it an
            # unsafe PartitionMut (make_partition_view_mut), whatever the body does with it first (a load, a
            # num_tiles, a scatter)
            shared = arr.mutable and ndim > MAX_MUT_RANK
            if shared:
                shared_outputs.add(rname)
            ref = "&mut " if arr.mutable and not shared else "&"
            rt = f"{ref}Tensor<{dtype}, {{ [{', '.join(['-1'] * ndim)}] }}>"
            sig.append((rname, rt, HostParam(name=rname, kind="tensor", rust_type=rt, ndim=ndim, output=arr.mutable,
                                             shared_output=shared, dtype=fixed or concrete or "op")))
        elif p.kind == "scalar":
            sdt = p.dtype or inst.param_dtypes.get(p.name) or "int32"
            rt = RUST_DTYPE.get(sdt, sdt)
            params[p.name] = Val("scalar", rname, rt)
            sig.append((rname, rt, HostParam(name=rname, kind="scalar", rust_type=rt, dtype=sdt)))
    consts_env = {k: v for k, v in non_int.items() if v is not None}
    consts_env.update({k[len(CLOSURE):]: v for k, v in folded.items() if k.startswith(CLOSURE)})
    strides = {}
    for p, sig_ in zip(info.params, inst.signature):
        if sig_.get("kind") == "array":
            strides[rust_name(p.name)] = [c if c == 1 else None for c in (sig_.get("stride_constant") or [])]

    def translator(hole_sink) -> BodyTranslator:
        tr = BodyTranslator(source_lines=lines, file=file, params=params, folded=consts_env,
                            generics=set(int_consts), module_consts=module_consts, on_hole=hole_sink)
        tr.prologue.used_names |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
        tr.shared_outputs = set(shared_outputs)
        tr.depth = 2
        tr.folded_tests = {k: v for k, v in folded.items() if k.startswith(("Compare(", "Name(", "BoolOp(", "UnaryOp("))}
        tr.stride_constants = strides
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                tr.local_defs.setdefault(node.targets[0].id, set()).update(
                    n.id for n in ast.walk(node.value) if isinstance(n, ast.Name))
        return tr

    # Two passes: the first counts how often each binding is read (cuTile contracts a product read once, by an
    # add/sub, into an fma); the second writes the entry knowing that.
    first = translator(lambda e: None)
    first.run(list(fn.body))
    tr = translator(on_hole)
    tr.known_uses, tr.known_fusable = first.uses, first.fusable
    tr.run(list(fn.body))
    notes = _static_outputs(tr, sig, int_consts)
    _thread_loop_tokens(tr)
    notes += [f"output `{n}` has rank > 3, which cutile-rs 0.5 cannot take as `&mut Tensor` (cutile-compiler "
              "kernel_entry_generator.rs:134: \"Unable to partition tensors with rank > 3\"): it is a `&Tensor` "
              "written in place through an unsafe PartitionMut (make_partition_view_mut); the launcher passes the "
              "reference's tensor" for n in sorted(shared_outputs)]
    used_generics = [c for c in int_consts if _uses_name(tr, c)] + list(tr.slab_extents)
    generic_decl = ([f"E: ElementType"] if uses_e else []) + [f"const {c}: i32" for c in used_generics]
    hints = _hints(info, targets, fn, module_consts, {k[len(HINT):]: v for k, v in folded.items()
                                                      if k.startswith(HINT)})
    keys = [hints] if hints else []
    # cuTile Python never traps on a view access (out-of-range tiles are padded / clipped); without this the
    # cutile JIT adds a bounds assert wherever it cannot prove a computed tile index in range. An output kept with
    # dynamic dims (`notes`) is launched whole, and cutile 0.5 turns a block-id store index into it into a host
    # launch check on the view's extent that the whole-output binding cannot satisfy (gpu.ffi: Out::whole)
    # A store through a whole-output view (`_static_outputs`) needs it too: proving its block-id index in range,
    # cutile 0.5 adds a launch check against the extent of the launch-partitioned `&mut` output, which is its
    # per-block partition (every such port refused to launch on an H100, 2026-12-06: "launch check failed:
    # num_tile_blocks(0) <= ceil(extent(out, 0)/1)").
    unchecked = bool(tr.computed_index or notes or tr.full_views)
    if unchecked:
        keys.append("unchecked_accesses = true")
    attr = f"#[cutile::entry({', '.join(keys)})]"
    unsafe = "unsafe " if unchecked else ""
    out = [f"{INDENT}// SAFETY: tile indices are computed as in the reference, which clips and pads, never traps."]\
        if unsafe else []
    out += [f"{INDENT}{attr}",
           f"{INDENT}{unsafe}fn {entry_name}{'<' + ', '.join(generic_decl) + '>' if generic_decl else ''}("]
    out += [f"{INDENT * 2}{n}: {t}," for n, t, _ in sig]
    out.append(f"{INDENT}) {{")
    out += [INDENT * 2 + line for line in tr.prologue.lines]
    out += tr.lines
    out.append(f"{INDENT}}}")
    comment = _entry_comment(info, folded, used_generics) + [f"{INDENT}// {n}" for n in notes]
    helpers.update(tr.helpers)
    return "\n".join(comment + out), used_generics, [h for _, _, h in sig], uses_e, tr


def _static_outputs(tr: BodyTranslator, sig: list, int_consts: list[str]) -> list[str]:
    """Give each output the kernel writes through one view a static tile shape, the way cutile launches a `&mut`
    output: as a partition of the tensor whose shape is the declared one, one partition per block (the launch grid
    must equal that partition grid), each block getting ITS OWN tile or slab.

    * Stored once per block at exactly its block ids (bid(d) on axis d, or 0) with the view's tile: the output is
      declared with that tile shape.
    * Stored several times per block (a loop over j at (bid, j), or several indices): a slab per block. An axis
      every store indexes by bid(d) (or 0) keeps the tile's extent; any other axis spans the whole output (a const
      generic `<OUT>_DIM<d>`, bound at launch to the output's extent).

    Either way every store keeps the reference's own index, through a view of the whole output
    (`partition_full_mut`), so the port's IR stores where the reference's does. cutile's block-relative stores
    (`out.store(tile)`, `out.partition_mut(tile)`) add the block id of every axis, so an axis the reference indexes
    by 0 or by a loop counter read `bid(y)` and scaled it after the wait for the tile, on every block's path to its
    store: the only SASS difference of the rms_norm, softmax and layer_norm ports, whose one-block-per-SM rows were
    1.5-3 % slower on an H100 (benchmarks/cubin_ab.py, one launcher: 1.017-1.031 before, 1.000-1.004 after). Such
    an entry is `unchecked_accesses`, as the reference, which clips (see `_entry`).

    Other outputs (pointer stores, block ids on another axis, other uses of the output) keep dynamic dims; the
    returned notes say why (the gate cannot launch them as drafted). `tr.slab_extents` gets each extent generic ->
    (the tile's extent on that axis and how many tiles the literal store indices need: the representative its spec
    variants use for the IR check; the output; the axis); the spec entry's `extents` tells the launcher to bind it
    to that output's extent."""
    notes = []
    tr.slab_extents = {}
    tr.full_views = False
    for k, (name, rust_t, host) in enumerate(sig):
        if host.kind != "tensor" or not host.output or host.shared_output:
            continue
        plan, why = _static_plan(tr, name, int_consts)
        if plan is None:
            notes.append(f"output `{name}` keeps dynamic tile dims, so `tileport gpu` cannot launch this entry: {why}")
            continue
        shape, whole, stores, view_line = plan
        taken = set(int_consts) | tr.prologue.used_names | set(tr.slab_extents)
        dims = [t for t in shape]
        for d, w in enumerate(whole):
            if w:
                dims[d] = f"{rust_ident(name).upper()}_DIM{d}"
                while dims[d] in taken:
                    dims[d] += "_"
                taken.add(dims[d])
        dtype = rust_t.split("<", 1)[1].split(",", 1)[0]
        new_t = f"&mut Tensor<{dtype}, {{ [{', '.join(dims)}] }}>"
        sig[k] = (name, new_t, host.model_copy(update={"rust_type": new_t, "partition": dims}))
        for d, w in enumerate(whole):
            if w:  # the IR check's slab: enough tiles for every literal index (cutile checks those at compile time)
                lits = [int(s[5][d][:-3]) for s in stores if re.fullmatch(r"[0-9]+i32", s[5][d])]
                tr.slab_extents[dims[d]] = (shape[d], max(lits, default=0) + 1, name, d)
        # every store keeps the reference's own index, on a view of the whole output (the IR the reference has)
        for lines in (tr.prologue.lines, tr.lines):
            if view_line in lines:
                at = lines.index(view_line)
                pad = view_line[: len(view_line) - len(view_line.lstrip())]
                lines[at: at + 1] = [
                    f"{pad}// SAFETY: a view of the whole `{name}`; its stores keep the reference's indices (a block "
                    "id on each axis the launch partitions): this block's own tile or slab.",
                    view_line.replace(f"= {name}.partition_mut(", f"= unsafe {{ {name}.partition_full_mut(")
                    .removesuffix(";") + " };"]
                tr.full_views = True
        if any(whole):
            wide = ", ".join(d for d, w in zip(dims, whole) if w)
            notes.append(f"output `{name}` is one slab per block, [{', '.join(dims)}], stored at the reference's indices: {wide} "
                         "is the output's extent on that axis, bound at launch (the spec's variants use the tiles "
                         "the stores need, for the IR check)")
    return notes


def _thread_loop_tokens(tr: BodyTranslator) -> None:
    """Thread the token of every output stored inside a loop through that loop, as cuTile Python does.

    cuTile Python orders an array's stores through one token chain, which a loop carries from one iteration to
    the next (`for ... iter_values(%tok) -> (token)`, each store reading the carried token), unless the store is a
    parallel one (`_parallel_store`: its index is the loop's counter, as softmax's chunked store at (row, j)). cutile 0.5 carries no
    token through a plain range loop (cutile-compiler compile_expression.rs: only `Dim` and mapped-partition loops
    set up token accumulators), so a store in one reads the token from before the loop and its iterations' stores
    are unordered. tileiras then schedules them differently: the persistent matmul's SASS had 968 instructions and
    4 TMA stores against the reference's 904 and 2, and the same 904 once the token was threaded.

    Every store of such an output goes through a view made at the store with the carried token
    (`make_partition_view_mut(out, tile, padding::None, tok)`: a view of the whole output, as `partition_mut` of a
    dynamic output and `partition_full_mut` are), then `tok = get_partition_token_mut(&view)`: a mutated `Token`
    variable, which cutile carries through loops and branches. The hoisted view stays for `num_tiles`, made from a
    shared borrow so the output can be borrowed again at each store. Such an entry is `unchecked_accesses`, as any
    entry storing through a whole-output view (`_entry`)."""
    for name, stores in tr.out_stores.items():
        if not any(s[6] and not _parallel_store(s, stores) for s in stores):
            continue
        tok = tr.fresh(f"{rust_ident(name)}_tok")
        for var in dict.fromkeys(s[3] for s in stores):
            shape = next(s[0] for s in stores if s[3] == var)
            macro = shape_macro(shape)
            ty, ref = None, name
            for lines in (tr.prologue.lines, tr.lines):
                for k, line in enumerate(lines):
                    m = re.match(rf"(\s*)let mut {re.escape(var)}: PartitionMut(<.*>) = (.*);$", line)
                    if not m:
                        continue
                    ty = m.group(2)
                    if f"make_partition_view_mut(&{name}," in line:  # a view of a Tensor value (a slice)
                        ref = f"&{name}"
                    if m.group(3) == f"{name}.partition_mut({macro})":  # a `&mut` borrow: make it a shared one
                        lines[k] = (f"{m.group(1)}let mut {var}: PartitionMut{ty} = unsafe {{ make_partition_view_mut("
                                    f"{name}, {macro}, padding::None, {name}.token()) }};")
            if ty is None:
                continue
            call = re.compile(rf"^(\s*)(unsafe {{ store_view_tko_mut\(&mut )?{re.escape(var)}(\.store\(|, )")
            out = []
            for line in tr.lines:
                m = call.match(line)
                if not m:
                    out.append(line)
                    continue
                pad, at = m.group(1), tr.fresh(f"{var}_at")
                out += [f"{pad}let mut {at}: PartitionMut{ty} = unsafe {{ make_partition_view_mut({ref}, {macro}, "
                        f"padding::None, {tok}) }};",
                        pad + line[len(pad):].replace(f"&mut {var},", f"&mut {at},", 1).replace(
                            f"{var}.store(", f"{at}.store(", 1),
                        f"{pad}{tok} = get_partition_token_mut(&{at});"]
            tr.lines[:] = out
            used = re.compile(rf"\b{re.escape(var)}\b")
            still_read = sum(1 for x in tr.prologue.lines + tr.lines if used.search(x)) > 1  # beyond its own line
            for lines in (tr.prologue.lines, tr.lines):  # the hoisted view only counts tiles now, if anything
                lines[:] = [line.replace(f"let mut {var}:", f"let {var}:", 1) for line in lines
                            if still_read or not line.lstrip().startswith(f"let mut {var}:")]
        tr.prologue.lines.insert(0, f"let mut {tok}: Token = {name}.token();")
        tr.full_views = True


def _parallel_store(store: tuple, stores: list[tuple]) -> bool:
    """cuTile Python's parallel loop store (cuda/tile/_passes/token_order.py `_get_parallel_stores`): the only
    memory op on its array in one loop (none in nested blocks), with an index that is the loop's own counter, so no
    two iterations store to one tile. It reads the token from before the loop; nothing orders its iterations.
    Looked at for a store directly in an outermost loop: in an inner loop it still reads the outer loop's token."""
    loops, counter = store[6], store[7]
    if len(loops) != 1 or not counter:
        return False
    return sum(1 for s in stores if s[6] and s[6][0] == loops[0]) == 1


def _static_plan(tr: BodyTranslator, name: str, int_consts: list[str]):
    """(tile shape, per axis whether the slab spans the whole output, the stores, the view line), or None and why."""
    stores = tr.out_stores.get(name, [])
    if not stores:
        return None, "it is written by pointer stores (ct.scatter), not tiles of a view"
    shape = stores[0][0]
    if any(not (re.fullmatch(r"[0-9]+", d) or d in int_consts) for d in shape):
        return None, f"its tile shape ({', '.join(shape)}) is not made of literals and const generics"
    whole = []
    for d in range(len(shape)):
        axes = [s[1][d] for s in stores]
        if all(a == d for a in axes) or all(a == "0" for a in axes):
            whole.append(False)
            continue
        stray = next((a for a in axes if isinstance(a, int) and a != d), None)
        if stray is not None:
            got = ", ".join("bid(%s)" % a if isinstance(a, int) else (a or "computed") for a in stores[0][1])
            return None, (f"its store index is ({got}): bid({stray}) indexes axis {d}, so the launch grid is not "
                          "the output's partition grid (a permuted store)")
        whole.append(True)
    if all(whole):
        return None, ("no store index is a block id: every block may write anywhere in it (a persistent or "
                      "scheduled kernel), so the launch grid is not a partition grid of it")
    if len(stores) > 1 or stores[0][2]:
        if not any(whole):
            return None, ("it is stored several times per block at the same block tile, which cutile's per-block "
                          "partition cannot express")
    var = stores[0][3]
    if any(f"(&{var}," in line for line in tr.prologue.lines + tr.lines):
        return None, "the kernel also loads it (through the same view): a per-block partition would move those loads"
    pat = re.compile(rf"\b{re.escape(name)}\b")
    macro = shape_macro(shape)
    views = [line for line in tr.prologue.lines + tr.lines if line.endswith(f"= {name}.partition_mut({macro});")]
    other = [line for line in tr.prologue.lines + tr.lines if pat.search(line) and line not in views]
    if other or len(views) != 1:
        return None, "the kernel also reads its shape, strides or another view of it"
    return (shape, whole, stores, views[0]), ""


def _uses_name(tr: BodyTranslator, name: str) -> bool:
    pat = re.compile(rf"\b{re.escape(name)}\b")
    return any(pat.search(line) for line in tr.lines + tr.prologue.lines)


def _entry_comment(info: KernelInfo, folded: dict[str, Any], generics: list[str]) -> list[str]:
    parts = []
    tests = {_test_text(k) for k in folded if k.startswith(("Compare(", "Name(", "BoolOp(", "UnaryOp("))}
    for key, value in folded.items():
        if key.startswith(("Compare(", "Name(", "BoolOp(", "UnaryOp(")):
            parts.append(f"`{_test_text(key)}` is {str(value).lower()}")
        elif key in tests:
            continue
        else:
            parts.append(f"{key.removeprefix(CLOSURE)} = {str(value).lower() if isinstance(value, bool) else value}")
    text = f"{INDENT}// {info.name}"
    if parts:
        text += ", folded where " + ", ".join(parts)
    return [text + "."]


def _decorator_options(fn: ast.FunctionDef, module_consts: dict[str, Any]) -> dict[str, Any]:
    """`@ct.kernel(occupancy=ct.ByTarget(sm_90=1, default=2), ...)` read from the source: per-target hints as
    {target or "default": value} (stage A's capture keeps only plain values), plain ints as they are."""
    out: dict[str, Any] = {}
    for dec in fn.decorator_list:
        if not isinstance(dec, ast.Call):
            continue
        for kw in dec.keywords:
            v = kw.value
            if kw.arg and isinstance(v, ast.Call) and isinstance(v.func, (ast.Attribute, ast.Name)) and \
                    (v.func.attr if isinstance(v.func, ast.Attribute) else v.func.id) == "ByTarget":
                per = {k.arg: fold_constant(k.value, module_consts) for k in v.keywords if k.arg}
                if all(isinstance(x, int) and not isinstance(x, bool) for x in per.values()):
                    out[kw.arg] = per
    return out


def _hints(info: KernelInfo, targets: list[str], fn: ast.FunctionDef | None = None,
           module_consts: dict[str, Any] | None = None, per_launch: dict[str, int] | None = None) -> str:
    per_target: dict[str, list[str]] = {}
    options = dict(info.compiler_options)
    if fn is not None:
        options.update(_decorator_options(fn, module_consts or {}))
    options.update(per_launch or {})
    for key, value in options.items():
        hint = _HINT_KEYS.get(key)
        if hint is None or value is None:
            continue
        if isinstance(value, dict):
            # per target, as cuTile Python resolves a ByTarget for the target it compiles: the target's own value,
            # else the default; every target it names keeps its own hint (sm_100's too)
            named = [t for t in value if t != "default"]
            for t in sorted(set(targets) | set(named)):
                v = value.get(t, value.get("default"))
                if isinstance(v, int):
                    per_target.setdefault(t, []).append(f"{hint} = {v}")
        elif isinstance(value, int) and not isinstance(value, bool):
            per_target.setdefault("default", []).append(f"{hint} = {value}")  # as the reference: every target
    if not per_target:
        return ""
    inner = ", ".join(f"{t} = ({', '.join(h)},)" for t, h in per_target.items())
    return f"optimization_hints = ({inner},)"


# ---- spec and host contract -----------------------------------------------------------------------

def _generic_value(rv: RefVariant, g: str, extents: dict[str, tuple]) -> str:
    """A const generic's value in a variant: its reference constant; a slab extent (bound at launch to the output's
    extent) gets a representative the IR check compiles: the tile's extent on its axis times the tiles its literal
    store indices need."""
    if g in extents:
        tile, tiles = extents[g][0], extents[g][1]
        return str(tiles * (int(tile) if re.fullmatch(r"[0-9]+", tile) else int(rv.constants[tile])))
    return str(rv.constants[g])


def _spec_variants(analysis: Analysis, info: KernelInfo, group: list[RefVariant], generics: list[str],
                   uses_e: bool, extents: dict[str, tuple] | None = None,
                   closure: dict[str, Any] | None = None, hints: dict[str, int] | None = None) -> list[Variant]:
    renamed = {rust_name(p.name): p.name for p in info.params if rust_name(p.name) != p.name}
    out = []
    seen: set[str] = set()
    for rv in group:
        for inst in rv.instances:
            name = _variant_name(inst.dtype, rv.constants)
            if name in seen:  # two launches giving the same specialisation: one job
                continue
            seen.add(name)
            tensors, strides = tensor_specs(analysis, rv.kernel, inst, renamed)
            gen = ([RUST_DTYPE.get(inst.dtype, inst.dtype)] if uses_e else []) + \
                [_generic_value(rv, g, extents or {}) for g in generics]
            out.append(Variant(name=name, generics=gen, strides=strides, tensors=tensors,
                               reference=ReferenceKey(kernel=rv.kernel, constants=dict(rv.constants), dtype=inst.dtype,
                                                      params=renamed, closure=dict(closure or {}),
                                                      hints=dict(hints or {}))))
    return out


def _grid_text(launch, functions: dict[str, ast.FunctionDef]) -> str:
    """The launch grid as source text; a grid variable is resolved to its last assignment before the launch."""
    fn = functions.get(launch.function)
    if fn is None or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", launch.grid):
        return launch.grid
    best = None
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and node.lineno < launch.line and any(
                isinstance(t, ast.Name) and t.id == launch.grid for t in node.targets):
            if best is None or node.lineno > best.lineno:
                best = node
    return ast.unparse(best.value) if best is not None else launch.grid


def _host_entry(analysis: Analysis, info: KernelInfo, entry: str, group: list[RefVariant], generics: list[str],
                params: list[HostParam], uses_e: bool, folded: dict[str, Any], functions=None,
                extents: dict[str, tuple] | None = None) -> HostEntry:
    launches = [la for la in analysis.launches if la.kernel == info.name]
    variants = []
    for rv in group:
        for inst in rv.instances:
            name = _variant_name(inst.dtype, rv.constants)
            if any(v.name == name for v in variants):
                continue
            gen = ([RUST_DTYPE.get(inst.dtype, inst.dtype)] if uses_e else []) + \
                [_generic_value(rv, g, extents or {}) for g in generics]
            variants.append(HostVariant(name=name, dtype=inst.dtype, generics=gen, constants=dict(rv.constants)))
    return HostEntry(
        name=entry, kernel=info.name, generics=(["E"] if uses_e else []) + generics, params=params,
        folded={(_test_text(k) if k.startswith(("Compare(", "Name(", "BoolOp(", "UnaryOp(")) else k):
                str(v).lower() for k, v in folded.items()},
        grid=sorted({_grid_text(la, functions or {}) for la in launches}),
        launches=[f"{la.function}:{la.line}" for la in launches],
        variants=variants)


def _strides_helper(rank: int) -> str:
    """cutile 0.5.0 has no strides accessor: read the `strides` field of a tensor's metadata the way cutile declares
    its own accessors (the compiler_op form tileport's policy allows)."""
    i = INDENT
    return (f"{i}// A tensor's strides (cutile 0.5.0 exposes base and shape, not strides).\n"
            f"{i}#[allow(unused_variables)]\n"
            f"{i}#[cuda_tile::compiler_op(name = \"return_type_meta_field\", type_meta_field = \"strides\")]\n"
            f"{i}fn tensor_strides_{rank}<'s, E: ElementType, const S: [i32; {rank}], const C: [i32; {rank}]>(\n"
            f"{i}{i}t: &Tensor<E, S>,\n{i}) -> Array<'s, C> {{\n{i}{i}unreachable!()\n{i}}}")
