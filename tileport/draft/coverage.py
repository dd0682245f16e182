"""The draft translator's coverage of the cuTile Python language, against cutile-rs 0.5 (issue #21).

Every public name of `cuda.tile` (functions, tile/array/view methods, dtypes, enum members) and every keyword
argument of its functions is classified here, once:

* `translated`   the draft writes the cutile-rs counterpart (the build tests diff its Tile IR against cuda-tile's);
* `approximated` translated with a named approximation (the draft says so in kernel.rs, `// approximation: ...`);
* `gap`          cutile-rs 0.5 has no counterpart: the draft's hole says "cutile-rs 0.5 has no X; closest: Y";
* `untranslated` cutile-rs has a counterpart the draft does not write yet: the hole names it;
* `host`         host-side API (launch, compilation, errors, annotations): nothing to translate in a kernel body.

    python scripts/gen_coverage.py [--check]   # writes (or checks) docs/draft_coverage.md

`tests/draft/test_draft_coverage.py` fails when a public name is unclassified or the committed table is stale.
"""

from __future__ import annotations

import inspect
import sys
from collections import Counter
from pathlib import Path
from typing import NamedTuple

T, A, G, U, H = "translated", "approximated", "gap", "untranslated", "host"
DOC = Path(__file__).resolve().parents[2] / "docs" / "draft_coverage.md"


class Row(NamedTuple):
    status: str
    rust: str  # the cutile-rs 0.5 counterpart (or, for a gap, the closest construct)
    note: str = ""


_ELEM = "elementwise on tiles"
FUNCTIONS: dict[str, Row] = {
    # blocks and grid
    "bid": Row(T, "program_id(axis)"), "num_blocks": Row(T, "num_programs(axis)"),
    "num_tiles": Row(T, "num_tiles(&partition, axis)"), "cdiv": Row(T, "ceil_div / folded"),
    # memory
    "load": Row(T, "Partition::load / load_pipelined / load_view_tko", "view load, padding and order kept"),
    "store": Row(T, "PartitionMut::store / Tensor::store"),
    "gather": Row(T, "load_ptr_tko (pointer tiles)"), "scatter": Row(T, "store_ptr_tko (pointer tiles)"),
    "load_advanced_indexing": Row(U, "load_ptr_tko"), "store_advanced_indexing": Row(U, "store_ptr_tko"),
    "atomic_add": Row(U, "atomic_rmw_tko"), "atomic_and": Row(U, "atomic_rmw_tko"),
    "atomic_or": Row(U, "atomic_rmw_tko"), "atomic_xor": Row(U, "atomic_rmw_tko"),
    "atomic_max": Row(U, "atomic_rmw_tko"), "atomic_min": Row(U, "atomic_rmw_tko"),
    "atomic_xchg": Row(U, "atomic_rmw_tko"), "atomic_cas": Row(U, "atomic_cas_tko"),
    "assume_divisible_by": Row(U, "assume_div_by"),
    # creation
    "full": Row(T, "constant(v, shape) / scalar broadcast"), "zeros": Row(T, "constant(0, shape)"),
    "ones": Row(T, "constant(1, shape)"), "arange": Row(T, "iota(shape)"),
    "astile": Row(U, "scalar_to_tile / constant"),
    # arithmetic
    "add": Row(T, "+ / addf(.., rounding, ftz)"), "sub": Row(T, "- / subf"), "mul": Row(T, "* / mulf"),
    "truediv": Row(T, "/ / divf"), "floordiv": Row(T, "divi(.., rounding::NegativeInf)"),
    "mod": Row(T, "remi + sign fix-up"), "negative": Row(T, "negf / negi"), "abs": Row(T, "absf / absi"),
    "pow": Row(T, "pow / fpowf / fpowi"), "divmod": Row(U, "divi + remi"),
    "minimum": Row(T, "minf / mini / min"), "maximum": Row(T, "maxf / maxi / max"),
    "where": Row(T, "select"), "atan2": Row(T, "atan2"),
    "bitwise_and": Row(T, "andi / &"), "bitwise_or": Row(T, "ori / |"), "bitwise_xor": Row(T, "xori / ^"),
    "bitwise_not": Row(T, "x ^ all-ones", "cutile 0.5 declares noti but its JIT has no cuda_tile.noti op"), "bitwise_lshift": Row(G, "x * 2**n, or shli(.., overflow::NoWrap)", "cutile-rs 0.5 has no shli with overflow none (measured: its bytecode writer fails, missing attribute overflow on ShLI)"), "bitwise_rshift": Row(T, "shri (arithmetic for signed, logical for unsigned)"),
    "equal": Row(T, "eq_tile"), "not_equal": Row(T, "ne_tile"), "less": Row(T, "lt_tile"),
    "less_equal": Row(T, "le_tile"), "greater": Row(T, "gt_tile"), "greater_equal": Row(T, "ge_tile"),
    "isnan": Row(U, "cmpf(.., predicate) (unordered compare)"),
    # math
    "exp": Row(T, "exp"), "exp2": Row(T, "exp2(x, ftz)"), "log": Row(T, "log"), "log2": Row(T, "log2"),
    "sqrt": Row(T, "sqrt"), "rsqrt": Row(T, "rsqrt(x, ftz)"), "tanh": Row(T, "tanh"), "sin": Row(T, "sin"),
    "cos": Row(T, "cos"), "tan": Row(T, "tan"), "sinh": Row(T, "sinh"), "cosh": Row(T, "cosh"),
    "floor": Row(T, "floor"), "ceil": Row(T, "ceil"),
    # reductions and scans
    "sum": Row(T, "reduce_sum"), "max": Row(T, "reduce_max"), "min": Row(T, "reduce_min"),
    "prod": Row(T, "reduce_prod"), "reduce": Row(U, "reduce(x, axis, identity, closure)"),
    "argmax": Row(G, "reduce over (value, index) pairs", "cutile-rs 0.5 has no argmax reduction"),
    "argmin": Row(G, "reduce over (value, index) pairs", "cutile-rs 0.5 has no argmin reduction"),
    "cumsum": Row(T, "scan_sum(x, axis, reverse, 0)"), "cumprod": Row(U, "scan(x, axis, reverse, 1, mul)"),
    "scan": Row(U, "scan(x, axis, reverse, identity, closure)"),
    # matmul
    "mma": Row(T, "mma / mmaf"), "matmul": Row(T, "mma into a zero accumulator (2-D; `@` too), then astype"),
    "mma_scaled": Row(U, "mmaf_scaled"),
    # shapes and conversions
    "reshape": Row(T, "Tile::reshape(shape!)"), "expand_dims": Row(T, "reshape with a 1"),
    "transpose": Row(T, "Tile::transpose / permute(const_array!)"), "permute": Row(T, "permute(x, const_array!)"),
    "broadcast_to": Row(T, "Tile::broadcast(shape!)"), "astype": Row(T, "convert_tile"),
    "bitcast": Row(T, "bitcast"), "cat": Row(T, "cat(a, b, axis)"), "extract": Row(T, "extract(x, [0-d i32 tiles])"), "insert": Row(U, "insert"),
    "pack_to_bytes": Row(U, "pack"), "unpack_from_bytes": Row(U, "unpack"),
    # debugging and compile-time Python
    "print": Row(U, "print_tko"), "printf": Row(U, "print_tko"),
    "assert_": Row(G, "a run-time check", "cutile-rs 0.5 has no device assert op; closest: print_tko + a guard"),
    "static_assert": Row(G, "a const generic bound", "cutile-rs 0.5 has no compile-time assert in kernels"),
    "static_eval": Row(G, "the value folded by the draft", "cutile-rs has no host evaluation inside a kernel"),
    "static_iter": Row(T, "the body unrolled per item (tileport/draft/unroll.py)",
                       "cutile-rs 0.5 has no static iteration; the draft unrolls it as cuTile does"),
    "static_exception": Row(H, "-"), "ensure_constant": Row(G, "a const generic",
                                                           "cutile-rs has no run-time constant check"),
    "grid_dependency_control_launch_dependents": Row(U, "gdc_launch_dependents_tko"),
    "grid_dependency_control_wait": Row(U, "gdc_wait_tko"),
    "compiler_timeout": Row(H, "-"),
    # host side
    "kernel": Row(T, "#[cutile::entry] (occupancy / num_cta_in_cga hints)"),
    "function": Row(T, "inlined at the call site (cutile fn items take fixed generics)"),
    "launch": Row(H, "the host contract (launch grid)"), "foreign_pointer_dtype": Row(H, "-"),
}
# names that are not functions: types, annotations, errors, submodules
OTHER: dict[str, Row] = {
    "Array": Row(T, "&Tensor / &mut Tensor"), "Tile": Row(T, "Tile<E, {[..]}>"),
    "TiledView": Row(T, "Partition / PartitionMut"), "Constant": Row(T, "const generic / folded value"),
    "ConstantAnnotation": Row(T, "const generic"), "ArrayAnnotation": Row(T, "&Tensor<E, {[-1, ..]}>"),
    "Scalar": Row(T, "scalar parameter"), "ScalarInt64": Row(T, "i64 scalar parameter"),
    "IndexedWithInt64": Row(G, "i32 shapes and strides", "cutile-rs 0.5 has no int64-indexed tensors"),
    "ListAnnotation": Row(G, "separate tensor parameters", "cutile-rs 0.5 has no list-of-arrays parameter"),
    "ByTarget": Row(T, "optimization_hints = (sm_90 = (..),)"), "DType": Row(T, "ElementType"),
    "Slice": Row(T, "make_tensor_view over an offset base"),
    "PaddingMode": Row(T, "padding::*"), "RoundingMode": Row(T, "rounding::*"),
    "MemoryOrder": Row(U, "ordering::*"), "MemoryScope": Row(U, "scope::*"),
    "compilation": Row(H, "-"), "tune": Row(H, "-"),
}
DTYPES = {"bfloat16": T, "float16": T, "float32": T, "float64": T, "int8": T, "int16": T, "int32": T, "int64": T,
          "uint8": T, "uint16": T, "uint32": T, "uint64": T, "bool_": T, "tfloat32": T, "float8_e4m3fn": T,
          "float8_e5m2": T, "float8_e5m3fnu": G, "float8_e8m0fnu": G, "float4_e2m1fn": G}
METHODS: dict[str, Row] = {
    "Tile.astype": Row(T, "convert_tile"), "Tile.reshape": Row(T, "Tile::reshape"),
    "Tile.transpose": Row(T, "Tile::transpose"), "Tile.permute": Row(U, "permute"),
    "Tile.extract": Row(U, "extract"), "Tile.insert": Row(U, "insert"), "Tile.item": Row(T, "reshape(shape![])"),
    "Tile.dtype": Row(T, "the tile's E"), "Tile.shape": Row(U, "the tile's const shape"),
    "Tile.ndim": Row(T, "the tile's rank, folded"),
    "Array.dtype": Row(T, "the tensor's E"), "Array.shape": Row(T, "Tensor::shape()[i]"),
    "Array.ndim": Row(T, "the tensor's rank, folded"), "Array.strides": Row(T, "tensor_strides_N compiler op"),
    "Array.slice": Row(T, "make_tensor_view"), "Array.tiled_view": Row(T, "partition / partition_mut"),
    "Array.foreign_pointer": Row(H, "-"), "Array.from_foreign": Row(H, "-"), "Array.get_raw_memory": Row(U, "get_tensor_base"),
    "TiledView.load": Row(T, "Partition::load"), "TiledView.store": Row(T, "PartitionMut::store"),
    "TiledView.num_tiles": Row(T, "num_tiles"), "TiledView.dtype": Row(T, "E"),
    "TiledView.tile_shape": Row(U, "the partition's const shape"),
    "TiledView.traversal_steps": Row(U, "num_tiles per axis"),
    **{f"TiledView.atomic_store_{k}": Row(U, "atomic_red_view_raw") for k in ("add", "and", "max", "min", "or",
                                                                              "xor")},
}
ENUMS: dict[str, Row] = {
    **{f"PaddingMode.{m}": Row(T, f"padding::{r}") for m, r in (
        ("UNDETERMINED", "None"), ("ZERO", "Zero"), ("NEG_ZERO", "NegZero"), ("NAN", "Nan"), ("POS_INF", "PosInf"),
        ("NEG_INF", "NegInf"))},
    **{f"RoundingMode.{m}": Row(T, f"rounding::{r}") for m, r in (
        ("RN", "NearestEven"), ("RZ", "Zero"), ("RM", "NegativeInf"), ("RP", "PositiveInf"), ("FULL", "Full"),
        ("APPROX", "Approx"))},
    "RoundingMode.RA": Row(G, "rounding::NearestEven", "cutile-rs 0.5 has no round-half-away rounding mode"),
    "RoundingMode.RZI": Row(G, "rounding::Zero", "cutile-rs 0.5 has no RZI (round toward zero, integer) mode"),
    **{f"MemoryOrder.{m}": Row(U, f"ordering::{r}") for m, r in (
        ("WEAK", "Weak"), ("RELAXED", "Relaxed"), ("ACQUIRE", "Acquire"), ("RELEASE", "Release"),
        ("ACQ_REL", "AcqRel"))},
    **{f"MemoryScope.{m}": Row(U, f"scope::{r}") for m, r in (
        ("NONE", "TileBlock"), ("BLOCK", "TileBlock"), ("CLUSTER", "Cluster"), ("DEVICE", "Device"),
        ("SYS", "System"))},
}
_FTZ = Row(T, "ftz::Enabled / ftz::Disabled")
_RND = Row(T, "rounding::* (addf/subf/mulf/divf)")
KWARGS: dict[str, Row] = {
    "add.rounding_mode": _RND, "add.flush_to_zero": _FTZ, "sub.rounding_mode": _RND, "sub.flush_to_zero": _FTZ,
    "mul.rounding_mode": _RND, "mul.flush_to_zero": _FTZ, "truediv.rounding_mode": _RND,
    "truediv.flush_to_zero": _FTZ, "exp2.flush_to_zero": _FTZ, "rsqrt.flush_to_zero": _FTZ,
    "maximum.flush_to_zero": _FTZ, "maximum.propagate_nan": Row(T, "nan::Enabled / nan::Disabled"),
    "minimum.flush_to_zero": _FTZ, "minimum.propagate_nan": Row(T, "nan::Enabled / nan::Disabled"),
    "exp.rounding_mode": Row(T, "exp_with_rounding(x, rounding::Full / Approx)"), "tanh.rounding_mode": Row(T, "tanh_with_rounding(x, rounding::Full / Approx)"),
    "arange.dtype": Row(T, "iota's element type"), "arange.start": Row(U, "iota + start"),
    "arange.step": Row(U, "iota * step"), "astype.rounding_mode": Row(U, "ftof / ftoi rounding"),
    "load.order": Row(T, "partition_permuted(shape, const_array!)"),
    "load.padding_mode": Row(T, "padding::* of the partition view"),
    "load.check_bounds": Row(U, "unchecked_accesses = true / store_unchecked"),
    "load.latency": Row(A, "load_pipelined::<N>", "cuTile Python writes allow_tma = true beside the latency; "
                                                  "cutile-rs writes the latency alone"),
    "load.allow_tma": Row(A, "tma::Enabled / tma::Disabled", "True: cutile-rs writes no hint (TMA allowed by "
                                                            "default), cuTile Python writes allow_tma = true"),
    "load.memory_order": Row(U, "load_view_tko(.., ordering::*)"),
    "load.memory_scope": Row(U, "load_view_tko(.., scope::*)"),
    "store.order": Row(G, "permute the tile, store into the plain view", "cutile-rs 0.5 has no mutable partition view with a dim_map (_core.rs: make_partition_view_mut takes none)"), "store.check_bounds": Row(U, "store_unchecked"),
    "store.latency": Row(T, "store_view_tko_mut(.., Some(N), ..)"),
    "store.allow_tma": Row(A, "tma::Enabled / store_view_tko_mut(.., tma::Disabled)", "True: no hint on the cutile-rs side, cuTile Python writes allow_tma = true"),
    "store.memory_order": Row(U, "store_view_tko_mut(.., ordering::*)"),
    "store.memory_scope": Row(U, "store_view_tko_mut(.., scope::*)"),
    "gather.mask": Row(T, "load_ptr_tko mask"),
    "gather.padding_value": Row(T, "load_ptr_tko padding", "rank-1 tiles; rank >= 2 with a mask is a gap: cutile-rs "
                                                           "0.5 (compile_load_ptr_tko) broadcasts the padding from rank 1, which tileiras rejects"),
    "gather.check_bounds": Row(T, "bounds mask"), "gather.latency": Row(T, "load_ptr_tko Latency::<N>"),
    "scatter.mask": Row(T, "store_ptr_tko mask"), "scatter.check_bounds": Row(T, "bounds mask"),
    "scatter.latency": Row(T, "store_ptr_tko Latency::<N>"),
    "num_tiles.order": Row(U, "num_tiles of a permuted partition"),
    "sum.axis": Row(T, "reduce_sum(x, axis)"), "sum.keepdims": Row(T, "reshape after the reduction"),
    "sum.rounding_mode": Row(U, "reduce(.., addf rounding)"), "sum.flush_to_zero": Row(U, "reduce(.., addf ftz)"),
    "prod.axis": Row(T, "reduce_prod(x, axis)"), "prod.keepdims": Row(T, "reshape after the reduction"),
    "prod.rounding_mode": Row(U, "reduce(.., mulf rounding)"), "prod.flush_to_zero": Row(U, "reduce(.., mulf ftz)"),
    "max.axis": Row(T, "reduce_max(x, axis)"), "max.keepdims": Row(T, "reshape after the reduction"),
    "max.flush_to_zero": Row(U, "reduce(.., maxf ftz)"), "max.propagate_nan": Row(U, "reduce(.., maxf nan)"),
    "min.axis": Row(T, "reduce_min(x, axis)"), "min.keepdims": Row(T, "reshape after the reduction"),
    "min.flush_to_zero": Row(U, "reduce(.., minf ftz)"), "min.propagate_nan": Row(U, "reduce(.., minf nan)"),
    "cumsum.axis": Row(G, "permute to axis 0, scan_sum, permute back",
                       "axis 0 is translated; cutile-rs 0.5 has no scan over another axis (cutile-compiler compile_cuda_tile_op.rs writes dim = 0)"), "cumsum.reverse": Row(T, "reverse::Forward / reverse::Reverse"),
    "cumsum.rounding_mode": Row(G, "scan with an addf closure", "cutile-rs 0.5 has no rounding on scan_sum"),
    "cumsum.flush_to_zero": Row(G, "scan with an addf closure", "cutile-rs 0.5 has no ftz on scan_sum"),
    "sqrt.rounding_mode": Row(T, "sqrt(x, rounding::*, ftz)"), "sqrt.flush_to_zero": _FTZ,
    "mma.use_fast_acc": Row(U, "mmaf_with_fast_acc"),
    "function.func": Row(T, "the helper inlined"), "function.host": Row(H, "-"), "function.tile": Row(H, "-"),
    "kernel.function": Row(H, "-"),
    "transpose.axis0": Row(T, "permute(x, const_array!)"), "transpose.axis1": Row(T, "permute(x, const_array!)"),
}


def _public_names(module) -> list[str]:
    return sorted(n for n in dir(module) if not n.startswith("_"))


def classify() -> tuple[list[tuple[str, str, Row]], list[str]]:
    """([(kind, name, row)], unclassified names) over the installed cuda.tile."""
    import cuda.tile as ct
    rows: list[tuple[str, str, Row]] = []
    missing: list[str] = []
    for name in _public_names(ct):
        obj = getattr(ct, name)
        if name in DTYPES:
            st = DTYPES[name]
            rows.append(("dtype", name, Row(st, "E = " + name if st == T else "-",
                                            "" if st == T else f"cutile-rs 0.5 has no {name} element type")))
        elif name in FUNCTIONS:
            rows.append(("function", name, FUNCTIONS[name]))
        elif name in OTHER:
            rows.append(("type", name, OTHER[name]))
        elif isinstance(obj, type) and issubclass(obj, BaseException):
            rows.append(("error", name, Row(H, "a one-line UserError / compile error")))
        else:
            missing.append(name)
    for name in _public_names(ct):
        fn = getattr(ct, name)
        if name not in FUNCTIONS or not callable(fn) or isinstance(fn, type):
            continue
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            continue
        for p in params:
            if p.default is inspect.Parameter.empty and p.kind != p.KEYWORD_ONLY:
                continue
            key = f"{name}.{p.name}"
            if key in KWARGS:
                rows.append(("keyword", f"{name}(..., {p.name}=)", KWARGS[key]))
            elif FUNCTIONS[name].status in (U, G, H):  # a keyword of a function not translated: as its function
                rows.append(("keyword", f"{name}(..., {p.name}=)", Row(FUNCTIONS[name].status, "-",
                                                                      f"as ct.{name}")))
            else:
                missing.append(key)
    for cls in ("Tile", "Array", "TiledView"):
        for m in _public_names(getattr(ct, cls)):
            key = f"{cls}.{m}"
            (rows.append(("method", key, METHODS[key])) if key in METHODS else missing.append(key))
    for enum in ("PaddingMode", "RoundingMode", "MemoryOrder", "MemoryScope"):
        for member in getattr(ct, enum):
            key = f"{enum}.{member.name}"
            (rows.append(("enum", key, ENUMS[key])) if key in ENUMS else missing.append(key))
    return rows, missing


def gap_row(function: str) -> Row | None:
    """The table's row for ct.<function> when it is a named cutile-rs gap (the draft's hole quotes it)."""
    row = FUNCTIONS.get(function)
    return row if row is not None and row.status == G else None


def render() -> str:
    import cuda.tile as ct
    rows, missing = classify()
    if missing:
        raise SystemExit(f"unclassified cuda.tile names: {', '.join(missing)} (add them to {__file__})")
    counts = Counter(r.status for _, _, r in rows)
    version = getattr(ct, "__version__", "?")
    out = ["# Draft translator coverage: cuTile Python (`cuda.tile`) against cutile-rs 0.5", "",
           f"Generated by `python scripts/gen_coverage.py` from cuda-tile {version}'s public names and "
           "the classification in `tileport/draft/coverage.py` (do not edit by hand; "
           "`tests/draft/test_draft_coverage.py` fails when a name is unclassified or this file is stale).", "",
           "Statuses: **translated** (the draft writes the counterpart), **approximated** (translated with the named "
           "approximation in the note; kernel.rs says `// approximation:` where it happens), **gap** (cutile-rs 0.5 "
           "has no counterpart; the draft's hole says so and names the closest construct), **untranslated** "
           "(cutile-rs has it, the draft leaves a hole naming it), **host** (host-side API, nothing to translate).",
           "", "| status | count |", "| --- | --- |"]
    out += [f"| {s} | {counts.get(s, 0)} |" for s in (T, A, G, U, H)]
    out += [f"| total | {len(rows)} |", ""]
    for kind in ("function", "keyword", "method", "enum", "dtype", "type", "error"):
        sel = [(n, r) for k, n, r in rows if k == kind]
        out += [f"## {kind}s ({len(sel)})", "", "| cuda.tile | status | cutile-rs 0.5 | note |", "| --- | --- | --- | --- |"]
        out += [f"| `{n}` | {r.status} | {r.rust.replace('|', '/')} | {r.note.replace('|', '/')} |" for n, r in sel]
        out.append("")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not DOC.is_file() or DOC.read_text(encoding="utf-8") != text:
            print(f"{DOC} is stale: run python scripts/gen_coverage.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    counts = Counter(r.status for _, _, r in classify()[0])
    print(f"wrote {DOC}: " + ", ".join(f"{k} {counts.get(k, 0)}" for k in (T, A, G, U, H)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
