"""Symbolic values the translator tracks for each Python name: what it is on the Rust side and its type.

A `Val` is one of
- `tile`:   a Rust `Tile<dtype, {[dims]}>` expression (dims are const-generic names or integer literals);
- `scalar`: a Rust scalar (`i32`, `f32`, ...) expression; `const_name` set when it is a const generic;
- `py`:     a Python value known while translating (literals, module constants, folded arithmetic);
- `array`:  a kernel array parameter (`&Tensor` / `&mut Tensor`);
- `view`:   a tiled view of an array (a Rust `Partition` / `PartitionMut` hoisted to the entry's prologue);
- `dtype`:  a dtype expression (`ct.float32`, `x.dtype`);
- `enum`:   a cuTile enum member (`ct.PaddingMode.ZERO`, `ct.RoundingMode.APPROX`);
- `lost`:   the result of a statement that became a hole (using it makes no second hole).
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any

# cuTile Python dtype names -> Rust element types.
RUST_DTYPE = {
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16",
    "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bool_": "bool", "float8_e4m3fn": "f8e4m3fn", "float8_e5m2": "f8e5m2", "tfloat32": "tf32",
}
FLOATS = {"f16", "bf16", "f32", "f64", "tf32", "f8e4m3fn", "f8e5m2"}
INTS = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}
OP_DTYPE = "E"  # the element-type generic of an entry


class Unsupported(Exception):
    """A construct outside the translatable subset: becomes a `Hole` at `node`."""

    def __init__(self, what: str, node: ast.AST | None, detail: str = "", gap: bool = False):
        super().__init__(what)
        self.what, self.node, self.detail, self.gap = what, node, detail, gap


def gap(what: str, node: ast.AST | None, missing: str, closest: str) -> Unsupported:
    """A named cutile-rs gap: cuTile Python has `what`, cutile-rs 0.5 has no `missing`; `closest` is where a writer
    starts (the coverage table, docs/draft_coverage.md, lists every one)."""
    return Unsupported(what, node, f"cutile-rs 0.5 has no {missing}; closest: {closest}", gap=True)


class NeedsDtype(Unsupported):
    """A literal of the op dtype: the entry is written once per concrete dtype instead of generic over E."""


class Lost(Exception):
    """A use of a value that an earlier hole left undefined (the earlier hole already says why)."""

    def __init__(self, name: str, gap: bool = False):
        super().__init__(name)
        self.name, self.gap = name, gap


@dataclass
class Array:
    name: str
    ndim: int
    dtype: str  # Rust element type or OP_DTYPE
    mutable: bool = False
    in_body: bool = False  # a view made inside the kernel (Array.slice): its partitions follow it in the body


@dataclass
class View:
    var: str  # the Rust partition variable
    array: Array
    shape: tuple[str, ...]
    mutable: bool = False


@dataclass
class Val:
    kind: str
    expr: str = ""
    dtype: str | None = None
    shape: tuple[str, ...] = ()
    value: Any = None  # py: the Python value; array: Array; view: View; enum: member name
    const_name: str | None = None  # scalar: a const generic
    extra: dict = field(default_factory=dict)  # view: pending padding/order before it is materialised

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOATS or (self.dtype == OP_DTYPE)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Val({self.kind}, {self.expr!r}, {self.dtype}, {self.shape})"


def tile_type(dtype: str, shape: tuple[str, ...]) -> str:
    return f"Tile<{dtype}, {{ [{', '.join(shape)}] }}>"


def shape_macro(shape: tuple[str, ...]) -> str:
    return f"shape![{', '.join(shape)}]"


def paren(expr: str) -> str:
    """`expr` safe as a method receiver or operand."""
    simple = expr.replace("_", "a").replace(".", "a").replace("(", "a").replace(")", "a")
    if simple.isalnum() or (expr.endswith(")") and _balanced_call(expr)):
        return expr
    return f"({expr})"


def _balanced_call(expr: str) -> bool:
    """True when `expr` is one call/method chain like `f(a, b)` or `x.reshape(..)`, not `a + f(b)`."""
    depth = 0
    for i, ch in enumerate(expr):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and ch in " +-*/%&|<>=!":
            return False
    return depth == 0


def _half_bits(v: float, dtype: str) -> int:
    import struct
    if dtype == "f16":
        return struct.unpack("<H", struct.pack("<e", v))[0]
    return struct.unpack("<I", struct.pack("<f", v))[0] >> 16  # bf16: the top half of the f32 (truncated)


def constant_tile(value: Any, dtype: str, shape: tuple, node: ast.AST | None = None) -> str:
    """A tile of `shape` filled with a Python value, as the `constant` op.

    A false bool is `scalar_to_tile(false)` broadcast: cutile-compiler 0.5.0 builds a `constant`'s value from the
    literal's text (compile_cuda_tile_op.rs, the "dense" attribute: `Lit::Bool(b) => b.value.to_string()`) and
    encodes an i1 as true unless that text is "0" (compile_expression.rs `encode_literal_bytes`: `lit_string !=
    "0"`), so `constant(false, ..)` compiles to a tile of true (measured: a floor modulo's sign fix-up always
    taken, a persistent GEMM storing only its first tile column); a plain `false` literal is encoded as 0."""
    if dtype == "bool" and not value:
        zero_d = "scalar_to_tile(false)"
        if not shape:
            return zero_d
        ones = ", ".join(["1"] * len(shape))
        return f"{zero_d}.reshape(shape![{ones}]).broadcast({shape_macro(shape)})"
    return f"constant({literal(value, dtype, node)}, {shape_macro(shape)})"


def literal(value: Any, dtype: str, node: ast.AST | None = None) -> str:
    """A Python number as a Rust literal of `dtype`."""
    if dtype == "bool":
        return "true" if value else "false"
    if dtype == OP_DTYPE:
        raise NeedsDtype("a Python number as a value of the op dtype", node,
                         "cutile has no generic literal; the entry is specialised per dtype")
    if dtype in FLOATS:
        v = float(value)
        if math.isinf(v):
            return f"{dtype}::{'NEG_INFINITY' if v < 0 else 'INFINITY'}"
        if math.isnan(v):
            return f"{dtype}::NAN"
        if dtype not in ("f32", "f64"):
            if v == 0:
                return f"{dtype}::ZERO"
            if v == 1:
                return f"{dtype}::ONE"
            # rustc has no f16/bf16 literal and the cutile 0.5 JIT names only ZERO / ONE / INFINITY / E of them
            # (cutile-compiler 0.5.0 compiler/shared_utils.rs get_float_const)
            bits = hex(_half_bits(v, dtype))
            raise gap(f"the Python number {v!r} as a {dtype} literal", node, f"{dtype} literal other than ZERO / ONE",
                      f"bitcast(constant({bits}i16, shape![])) (its bit pattern), or convert_tile of an f32 constant")
        text = repr(v)
        return f"{text}{dtype}"
    if dtype in INTS:
        if isinstance(value, float) and not value.is_integer():
            raise Unsupported("a fractional Python number combined with an integer tile", node)
        return f"{int(value)}{dtype}"
    raise Unsupported(f"a literal of dtype {dtype}", node)
