"""Generate a port's C-ABI launchers (`ffi.rs`) and the bindings the ctypes wrapper reads, from kernel.rs + spec.

Template-decided, no model: each `#[cutile::entry]` of kernel.rs (see `signature.py`) gets one `extern "C"`
function per element type (the op's dtypes for an entry generic over its element type; one for an entry with
concrete types). How a cuTile Python launch maps onto a port entry is read from the spec's variants
(`reference`: kernel, constants, dtype, params):

* the entry serves the reference kernel its variants name;
* each const generic of the entry is bound to the reference `ct.Constant` with the same name, else to the one
  constant whose value equals the generic's value in every variant (vector_add: `B` <- `TILE`), else to the
  value all variants fix (a tile size only the port has);
* a const generic the spec entry's `extents` names (an output slab `&mut Tensor<E, {[1, N]}>` spanning that axis)
  is bound at launch to that tensor's extent on its axis;
* a reference constant no generic takes (softmax `FUSE_SCALE`, rms_norm `CHUNKS` for the single-pass entry) is
  structural: a launch selects this entry only with one of the values its variants declare;
* port parameter names map to the reference's through `params` (vector_add `z` -> `out`), else by name; a raw
  pointer `x_ptr` (`*mut T`, an `unsafe` entry) serves the reference's tensor `x`, and scalars `x_dim_<i>` /
  `x_stride_<i>` the reference does not pass are read from that tensor;
* an output whose tile dims are all dynamic (`&mut Tensor<E, {[-1, -1]}>`) is the whole tensor inside the kernel
  (written by `ct.scatter`, permuted `(bid(1), bid(0))` stores, persistent loops over tiles): it is launched with
  the reference's grid, whatever that grid is (`Out` in the prelude says why cutile allows it);
* an output of rank > 3 is a `&Tensor` the kernel writes through an unsafe PartitionMut (`tileport draft`'s
  `shared_output`): cutile-compiler 0.5.0 refuses a `&mut Tensor` parameter above rank 3
  (kernel_entry_generator.rs:132-139) and cutile's partition launch grid is 3-D (tensor.rs:916-953). It is bound as an
  input (`In`): cutile pushes a `&Tensor` of any rank as pointer, shape and strides (tensor.rs:2415-2431) and launches
  on the reference's grid as given (tile_kernel.rs:1337-1341), so the reference's output tensor is passed whole and
  written in place;
* an output slab dim only the port fixes (rms_norm / softmax chunked `&mut Tensor<E, {[1, N]}>`, N the row length
  of the variant) must tile the output's extent exactly with the launch grid: the launcher refuses any other
  extent before it launches, with one message naming the dim and what the entry was built for.

Where none of these decides (an ambiguous constant) the binding carries `undecided` with
the reason, and the launch of that entry fails as a host fault naming it: the place to ask a model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources

from tileport.validators.gpu.signature import EntrySig, parse_entries
from tileport.validators.rust.spec import DumpSpec

ABI_VERSION = 1
MAX_RANK = 8

# torch dtype name -> Rust element type (cutile re-exports `half`).
RUST_DTYPES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
               "int32": "i32", "int64": "i64", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool",
               "float8_e4m3fn": "f8e4m3fn", "float8_e5m2": "f8e5m2"}
TORCH_DTYPES = {v: k for k, v in RUST_DTYPES.items()}
CLOSURE = "closure:"  # a structural selector naming a factory kernel's closure value (hostrun reads the kernel's)
HINT = "hint:"  # ... and one naming a compiler hint the kernel object was launched with (hostrun.kernel_hints)
_SCALAR_CAST = {"f32": "s.f as f32", "f64": "s.f", "bool": "s.i != 0"}


def _tmpl(name: str) -> str:
    return resources.files("tileport.validators.gpu.templates").joinpath(name).read_text(encoding="utf-8")


def symbol(entry: str, rust_dtype: str) -> str:
    return f"tp_{entry}__{rust_dtype}"


def _bind_generics(sig: EntrySig, variants: list, extents: dict | None = None) -> tuple[list[dict], list[str]]:
    """Per generic: how its value is found at launch; plus reasons the template cannot decide."""
    extents = extents or {}
    binds, undecided = [], []
    for j, g in enumerate(sig.generics):
        if g.kind == "type":
            binds.append({"name": g.name, "kind": "type", "from": "dtype"})
            continue
        if g.name in extents:  # the spec says: a tensor's extent, read at launch (an output slab spanning it)
            binds.append({"name": g.name, "kind": "const", "from": "extent", "param": extents[g.name].param,
                          "axis": extents[g.name].axis})
            continue
        consts = [dict(v.reference.constants) if v.reference else {} for v in variants]
        values = [str(v.generics[j]) if j < len(v.generics) else None for v in variants]
        if variants and all(g.name in c for c in consts):
            binds.append({"name": g.name, "kind": "const", "from": "constant", "constant": g.name})
            continue
        names = set.intersection(*(set(c) for c in consts)) if consts else set()
        matching = sorted(n for n in names
                          if all(val is not None and str(_const(c[n])) == val for c, val in zip(consts, values)))
        if len(matching) == 1:
            binds.append({"name": g.name, "kind": "const", "from": "constant", "constant": matching[0]})
        elif values and None not in values and len(set(values)) == 1 and not matching:
            binds.append({"name": g.name, "kind": "const", "from": "fixed", "value": values[0]})
        else:
            why = (f"const generic {g.name}: reference constants {matching} all match its values"
                   if matching else f"const generic {g.name}: no reference constant and no single fixed value")
            binds.append({"name": g.name, "kind": "const", "from": "undecided", "reason": why})
            undecided.append(why)
    return binds, undecided


def _const(v):
    return int(v) if isinstance(v, bool) else v


@dataclass
class FfiSource:
    rust: str  # src/ffi.rs
    bindings: dict  # what the ctypes wrapper needs (also embedded in the library: tp_bindings())


def entry_bindings(sig: EntrySig, spec: DumpSpec, dtypes: list[str]) -> dict:
    entry_spec = next((e for e in spec.entries if e.name == sig.name), None)
    variants = list(entry_spec.variants) if entry_spec else []
    refs = [v.reference for v in variants if v.reference]
    binds, undecided = _bind_generics(sig, variants, entry_spec.extents if entry_spec else {})
    bound = {b["constant"] for b in binds if b.get("from") == "constant"}
    structural: dict[str, list] = {}
    for r in refs:
        for k, v in [*r.constants.items(), *((f"{CLOSURE}{c}", x) for c, x in r.closure.items()),
                     *((f"{HINT}{h}", x) for h, x in r.hints.items())]:
            if k not in bound:  # a factory's closure value selects like a constant (hostrun: `closure:NAME`)
                vals = structural.setdefault(k, [])
                if _const(v) not in vals:
                    vals.append(_const(v))
    kernels = sorted({r.kernel for r in refs})
    params_map: dict[str, str] = {}
    for r in refs:
        params_map.update(r.params)
    type_params = {g.name for g in sig.generics if g.kind == "type"}
    params = [dict(p.__dict__) for p in sig.params]
    _pointer_facts(params, params_map)
    if not kernels:
        undecided.append(f"entry {sig.name}: no spec variant names its reference kernel")
    elem_types = {p.elem for p in sig.params if p.kind != "scalar"}
    if type_params:
        rust_dtypes = [RUST_DTYPES[d] for d in dtypes if d in RUST_DTYPES]
        for r in refs:  # dtypes the spec names, even if the op declares fewer
            if RUST_DTYPES.get(r.dtype) and RUST_DTYPES[r.dtype] not in rust_dtypes:
                rust_dtypes.append(RUST_DTYPES[r.dtype])
    else:
        # One instance, keyed as a launch will ask for it: by the dtype of the reference launch's first tensor (the
        # spec's reference dtype), not by one of the entry's element types picked by name; a mixed-precision entry
        # (fp8 inputs, a bf16 output) is launched by its inputs' dtype.
        launched = [RUST_DTYPES[r.dtype] for r in refs if r.dtype in RUST_DTYPES]
        first = [p.elem for p in sig.params if p.kind != "scalar" and p.elem in TORCH_DTYPES][:1]
        rust_dtypes = list(dict.fromkeys(launched)) or first or sorted(elem_types)[:1] or ["f32"]
    slab_checks = _slab_checks(sig, binds, refs)
    kernel_faults = [f"output {p.name}: &mut Tensor with tile dims {p.dims}, static and dynamic mixed; cutile 0.5 "
                     "launches an output either as a partition of its declared static tile shape or, when every "
                     "dim is dynamic (-1), as the whole tensor: declare all dims static or all dynamic"
                     for p in sig.params if p.kind == "out" and _dynamic_dims(p) and not whole_output(p)]
    for p in sig.params:
        if p.kind != "scalar" and p.elem not in type_params and p.elem not in TORCH_DTYPES:
            undecided.append(f"parameter {p.name}: element type {p.elem} is not a known dtype")
    return {
        "module": sig.module, "entry": sig.name, "unsafe": sig.unsafe,
        "generics": binds, "params": params,
        "type_params": sorted(type_params),
        "reference_kernels": kernels, "structural": structural, "param_map": params_map,
        "symbols": {TORCH_DTYPES[d]: symbol(sig.name, d) for d in rust_dtypes},
        "undecided": undecided, "kernel_faults": kernel_faults, "slab_checks": slab_checks,
    }


_FACT = re.compile(r"^(\w+?)_(dim|stride)_(\d+)$")


def _pointer_facts(params: list[dict], params_map: dict[str, str]) -> None:
    """A raw pointer parameter `x_ptr` (or `x`) serves the reference's tensor `x`; scalars named as cutile's entry
    wrapper names a tensor's extents (`x_dim_0`, `x_stride_1`) and absent from the reference launch are read from
    that tensor at launch (`of` on the scalar's binding)."""
    ptrs = {}
    for p in params:
        if p["kind"] == "ptr":
            base = p["name"].removesuffix("_ptr")
            if p["name"] not in params_map and base != p["name"]:
                params_map[p["name"]] = base
            ptrs[base] = p["name"]
            ptrs[p["name"]] = p["name"]
    for p in params:
        m = _FACT.match(p["name"]) if p["kind"] == "scalar" else None
        if m and m.group(1) in ptrs and p["name"] not in params_map:
            p["of"] = {"param": ptrs[m.group(1)], "what": "shape" if m.group(2) == "dim" else "stride",
                       "axis": int(m.group(3))}


def _dynamic_dims(p) -> bool:
    return any(d.strip() == "-1" for d in p.dims)


def whole_output(p) -> bool:
    """An output the kernel sees whole: `&mut Tensor<E, {[-1, ...]}>`, every tile dim dynamic. cutile-compiler gives
    a nested `partition_mut` of it no block offset (the outer tile has a dynamic dim), so its stores index the
    whole tensor (scatter, permuted or persistent stores); the launcher binds it with the reference's grid."""
    return p.kind == "out" and bool(p.dims) and all(d.strip() == "-1" for d in p.dims)


def _slab_checks(sig: EntrySig, binds: list[dict], refs: list) -> list[dict]:
    """Output slab dims the launcher must see tile their extent exactly.

    cutile launches a `&mut Tensor<E, {[d0, d1, ...]}>` as a partition of the output into slabs of the declared
    shape, one per block along the grid. A slab dim the reference launch chooses (a const generic bound to one of
    its constants, or a literal equal to one) partitions the output as the reference's own tiles do, ragged last
    tile included. A slab dim only the port fixes (a const generic with one value in every variant, or a literal no
    reference constant has) was built for one extent: the launch is refused unless slabs x grid blocks equal the
    tensor's extent in that dim, so a block never sees a slab that is cut short or a part of the row it never
    writes."""
    ref_values = {str(_const(v)) for r in refs for v in r.constants.values()}
    by_name = {b["name"]: (j, b) for j, b in enumerate(binds)}
    checks = []
    ti = 0
    for p in sig.params:
        if p.kind == "scalar":
            continue
        if p.kind == "out":
            for d, dim in enumerate(p.dims[:3]):
                dim = dim.strip()
                if dim in by_name and by_name[dim][1].get("from") == "fixed":
                    checks.append({"param": p.name, "tensor": ti, "dim": d, "name": dim,
                                   "generic": by_name[dim][0]})
                elif dim.isdigit() and int(dim) > 1 and dim not in ref_values:
                    checks.append({"param": p.name, "tensor": ti, "dim": d, "name": dim, "value": int(dim)})
        ti += 1
    return checks


def _slab_check_rust(entry: str, c: dict) -> list[str]:
    """Rust statements refusing a launch whose output extent the port's fixed slab dim does not tile exactly."""
    if "generic" in c:
        value = (f"gens.get({c['generic']}).and_then(|s| s.parse::<i64>().ok()).ok_or_else(|| Refused(1, "
                 f"format!(\"{entry}: generic {c['name']} (slab dim {c['dim']} of output {c['param']}) missing or "
                 f"not an integer in {{gens:?}}\")))?")
        what = f"{c['name']} = {{v}}"
    else:
        value = f"{c['value']}i64"
        what = f"{c['value']}"
    d, t = c["dim"], c["tensor"]
    return [
        "        {",
        f"            let v: i64 = {value};",
        f"            let t = &ts[{t}];",
        f"            let blocks = g[{d}] as i64;",
        f"            if t.ndim > {d} && t.shape[{d}] != v * blocks {{",
        f"                return Err(Refused(1, format!(\"{entry}: output {c['param']} has extent {{}} in dim {d}, but "
        f"this entry was built for slabs of {what} there ({{blocks}} block(s) of the launch grid cover {{}}); "
        f"refused before launch: add a spec variant whose {c['name']} fits this extent\", t.shape[{d}], "
        f"v * blocks)));",
        "            }",
        "        }",
    ]


def direct_layout(sig: EntrySig) -> tuple[list[tuple[int, int]], int]:
    """The kernel parameters cutile's launcher pushes for an entry, as the direct path checks them: per tensor
    (its index among the entry's tensors, the index of its pointer parameter), and the parameter count. A
    `&Tensor` pushes its pointer, shape and strides (1 + 2 x rank), a `&mut Tensor` partition also its partition
    shape and strides (1 + 4 x rank), a pointer or a scalar one value (cutile tensor.rs `push_kernel_args`,
    cutile-macro kernel_launcher_generator.rs)."""
    ptrs, n, ti = [], 0, 0
    for p in sig.params:
        if p.kind == "scalar":
            n += 1
            continue
        ptrs.append((ti, n))
        rank = len(p.dims)
        n += 1 if p.kind == "ptr" else 1 + 2 * rank if p.kind == "in" else 1 + 4 * rank
        ti += 1
    return ptrs, n


INTEGER_SCALARS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")  # cutile_compiler::specialization


def _int_scalars(sig: EntrySig) -> list[str]:
    """The entry's integer scalar parameters: cutile's generated launcher gives each a divisibility hint computed
    from its value at launch (`DivHint::from_value`), which cuTile Python never assumes of a scalar."""
    return [p.name for p in sig.params if p.kind == "scalar" and p.elem in INTEGER_SCALARS]


def _hint_free_rust(sig: EntrySig, rust_dtype: str, type_params: set[str], params: list[dict]) -> list[str]:
    """The HINT_FREE mode of an entry with integer scalars: the key cutile's launcher resolves for this launch
    (`specialize_on`: generics, strides, the tensors' specialisation as the reference's, the grid), compiled by
    `compile_from_context` with the integer scalars' hints replaced by what the reference assumes (pointer hints
    kept): the function the direct path launches (issue 34: silu_and_mul's `n` divisible by 16 made tileiras 13.5
    build 101 registers and no shared memory where the reference's IR gives 57 and 9 KB). A plain scalar gets no
    hint (cuTile Python assumes nothing of a scalar); a scalar that is an extent of a tensor the port takes by
    pointer (`x_dim_0`, `x_stride_1`) gets what the reference assumes of that tensor's extent (`reference_spec`):
    16 when a dim is divisible by 16, a stride's 16 bytes' worth of elements when it is divisible by that."""
    names = _int_scalars(sig)
    if not names:
        return []
    of = {p["name"]: p["of"] for p in params if p.get("of")}
    elems = {p.name: (rust_dtype if p.elem in type_params else p.elem) for p in sig.params}
    listed = ", ".join(f'"{n}"' for n in names)
    mod = f"crate::kernel::{sig.module}"
    lines = [
        "        if mode == HINT_FREE {",
        "            let key = launch.specialize_on(&stream)",
        f"                .map_err(|e| Refused(1, format!(\"{sig.name}: specialisation: {{e:?}}\")))?.into_l1_cache_key();",
        "            let mut hints: Vec<(String, DivHint)> = key.scalar_hints.into_iter()",
        f"                .filter(|(n, _)| ![{listed}].contains(&n.as_str())).collect();",
    ]
    for n in names:
        if n not in of:
            continue
        if of[n]["what"] == "shape":
            div = f"if a_{n} % 16 == 0 {{ 16 }} else {{ 1 }}"
        else:
            unit = f"(16 / std::mem::size_of::<{elems[of[n]['param']]}>().clamp(1, 16)) as i64"
            div = f"{{ let u = {unit}; if u > 1 && (a_{n} as i64) % u == 0 {{ u as i32 }} else {{ 1 }} }}"
        lines.append(f"            hints.push((\"{n}\".to_string(), DivHint {{ divisor: {div}, max: 16 }}));")
    lines += [
        "            let ectx = ExecutionContext::new(stream.clone());",
        f"            let got = compile_from_context(&ectx, {mod}::__module_ast_self, \"{sig.module}\", \"{sig.name}\",",
        f"                &KernelNaming::new(\"{sig.name}\").entry_name(), key.function_generics, key.stride_args,",
        f"                key.spec_args, hints, key.grid, key.compile_options, {mod}::_SOURCE_HASH);",
        "            std::mem::forget(ectx);",
        f"            let (function, _) = got.map_err(|e| Refused(1, format!(\"{sig.name}: compile: {{e:?}}\")))?;",
        "            return Ok(keep_function(function));",
        "        }",
    ]
    return lines


def _entry_fn(sig: EntrySig, rust_dtype: str, type_params: set[str], slab_checks: list[dict] = (),
              params: list[dict] | None = None) -> str:
    tensors = [p for p in sig.params if p.kind != "scalar"]
    scalars = [p for p in sig.params if p.kind == "scalar"]
    sym = symbol(sig.name, rust_dtype)
    ptrs, nparams = direct_layout(sig)
    body = [
        f"    let n_t = {len(tensors)}i32;",
        f"    let n_s = {len(scalars)}i32;",
        "    static FAST: FastSlot = FastSlot::new();",
        "    let t0 = if profiling() { Some(std::time::Instant::now()) } else { None };",
        "    let direct = fast_launch(&FAST, stream, device, grid, generics, tensors, ntensors, scalars, nscalars);",
        "    if let Direct::Launched = direct {",
        "        if let Some(t) = t0 { prof_add(6, 1); prof_add(7, t.elapsed().as_nanos() as u64); }",
        "        return 0;",
        "    }",
        "    let t0 = if profiling() { Some(std::time::Instant::now()) } else { None };",
        f"    let key = launch_key(\"{sym}\", generics, tensors, ntensors.clamp(0, n_t) as usize, scalars, "
        "nscalars.clamp(0, n_s) as usize);",
        "    if let Some(t) = t0 { prof_add(2, t.elapsed().as_nanos() as u64); }",
        "    let (stream0, grid0, generics0, tensors0, scalars0) = (stream as usize, grid, generics, tensors, scalars);",
        "    let (grid, generics, tensors, scalars) = (grid as usize, generics as usize, tensors as usize, "
        "scalars as usize);",
        "    // mode: LAUNCH (cutile's launcher, async), CAPTURE (recorded into a graph, never run), HINT_FREE (the",
        "    // function compiled without the divisibility cutile's launcher infers from integer scalars' values)",
        "    let body = move |stream: usize, mode: u8| -> Result<usize, Refused> {",
        "        if ntensors != n_t || nscalars != n_s {",
        f"            return Err(Refused(1, format!(\"{sig.name}: {{ntensors}} tensors and {{nscalars}} scalars given, "
        f"the entry takes {{n_t}} and {{n_s}}\")));",
        "        }",
        f"        let ts = std::slice::from_raw_parts(tensors as *const TpTensor, {max(len(tensors), 1)});",
        "        for (i, t) in ts.iter().take(n_t as usize).enumerate() {",
        "            for d in 0..(t.ndim.clamp(0, TP_MAX_RANK as i64) as usize) {",
        "                fits_i32_as(t.shape[d], || format!(\"tensor {i} shape[{d}]\"))?;",
        "                fits_i32_as(t.strides[d], || format!(\"tensor {i} stride[{d}]\"))?;",
        "            }",
        "        }",
        "        let g = std::slice::from_raw_parts(grid as *const u32, 3);",
        "        let gens = generics_of(generics as *const c_char)?;",
    ]
    for c in slab_checks:
        body += _slab_check_rust(sig.name, c)
    body += [
        "        let ctx = context(device)?;",
        "        let stream = Stream::borrow_raw(stream as *mut c_void, &ctx);",
        f"        let ss = std::slice::from_raw_parts(scalars as *const TpScalar, {max(len(scalars), 1)});",
    ]
    args, ti, si = [], 0, 0
    for p in sig.params:
        var = f"a_{p.name}"
        if p.kind == "scalar":
            cast = _SCALAR_CAST.get(p.elem)
            if cast:
                body.append(f"        let {var}: {p.elem} = {{ let s = &ss[{si}]; {cast} }};")
            elif p.elem == "i32":
                body.append(f"        let {var}: i32 = fits_i32(ss[{si}].i, \"{p.name}\")?;")
            else:
                body.append(f"        let {var}: {p.elem} = {p.elem}::try_from(ss[{si}].i).map_err(|_| "
                            f"Refused(2, format!(\"{p.name} = {{}} does not fit in {p.elem}\", ss[{si}].i)))?;")
            si += 1
        else:
            elem = rust_dtype if p.elem in type_params else p.elem
            rank = len(p.dims)
            if p.kind == "in":
                body.append(f"        let {var} = value(In::<{elem}>::new(&ts[{ti}], &ctx, \"{p.name}\", {rank})?);")
            elif p.kind == "ptr":
                body.append(f"        let {var} = device_pointer::<{elem}>(&ts[{ti}], \"{p.name}\")?;")
            elif whole_output(p):
                body.append(f"        let {var} = value(Out::<{elem}>::whole::<{rank}>(&ts[{ti}], &ctx, \"{p.name}\")?);")
            else:
                body.append(f"        let {var} = value(Out::<{elem}>::tiles::<{rank}>(&ts[{ti}], &ctx, \"{p.name}\", "
                            f"part::<{rank}>(&ts[{ti}], \"{p.name}\")?)?);")
            ti += 1
        args.append(var)
    call = f"crate::kernel::{sig.module}::{sig.name}({', '.join(args)})"
    body += [
        f"        let launch = unsafe {{ {call} }}.generics(gens).grid((g[0], g[1], g[2]))",
        "            .compile_options(CompileOptions::default().debug_info(DebugInfoLevel::None));",
        "        let t1 = t0.map(|t| { prof_add(3, t.elapsed().as_nanos() as u64); std::time::Instant::now() });",
        "        if mode == CAPTURE {  // no completion probe on a capturing stream",
        "            let ectx = ExecutionContext::new(stream.clone());",
        f"            let r = unsafe {{ launch.execute(&ectx) }}.map(|_| 0).map_err(|e| Refused(1, format!(\"{sig.name}: {{e:?}}\")));",
        "            std::mem::forget(ectx);",
        "            return r;",
        "        }",
        *_hint_free_rust(sig, rust_dtype, type_params, params or []),
        f"        unsafe {{ launch.async_on(&stream) }}.map_err(|e| Refused(1, format!(\"{sig.name}: {{e:?}}\")))?;",
        "        if let Some(t) = t1 { prof_add(4, t.elapsed().as_nanos() as u64); }",
        "        Ok(0)",
        "    };",
        "    let (rc, warm) = guarded_warm(err, errlen, key, || body(stream0, LAUNCH).map(|_| ()));",
        "    if let Some(t) = t0 { prof_add(5, t.elapsed().as_nanos() as u64); }",
        "    if rc == 0 && warm && matches!(direct, Direct::NoRecord) {",
        f"        fast_capture(&FAST, device, grid0, generics0, tensors0, ntensors, scalars0, nscalars, "
        f"&[{', '.join(f'({t}, {q})' for t, q in ptrs)}], {nparams}, {'true' if _int_scalars(sig) else 'false'}, "
        "&body);",
        "    }",
        "    rc",
    ]
    head = (f"#[no_mangle]\npub unsafe extern \"C\" fn {sym}(\n"
            "    stream: *mut c_void, device: i32, grid: *const u32, generics: *const c_char,\n"
            "    tensors: *const TpTensor, ntensors: i32, scalars: *const TpScalar, nscalars: i32,\n"
            "    err: *mut c_char, errlen: usize,\n) -> i32 {\n")
    return head + "\n".join(body) + "\n}\n"


def render_ffi(kernel_source: str, spec: DumpSpec, dtypes: list[str]) -> FfiSource:
    """ffi.rs and its bindings for the port's kernel.rs; dtypes: the op's (torch names, e.g. "float16")."""
    sigs = parse_entries(kernel_source)
    entries = [entry_bindings(s, spec, dtypes) for s in sigs]
    bindings = {"abi": ABI_VERSION, "max_rank": MAX_RANK, "module": spec.module, "entries": entries}
    text = json.dumps(bindings, sort_keys=True)
    prelude = (_tmpl("ffi_prelude.rs").replace("@ABI_VERSION@", str(ABI_VERSION))
               .replace("@BINDINGS_JSON@", json.dumps(text))) + _tmpl("ffi_direct.rs")
    fns = []
    for sig, b in zip(sigs, entries):
        for torch_dtype, sym in b["symbols"].items():
            fns.append(_entry_fn(sig, RUST_DTYPES[torch_dtype], set(b["type_params"]), b["slab_checks"], b["params"]))
    return FfiSource(rust=prelude + "\n" + "\n".join(fns), bindings=bindings)
