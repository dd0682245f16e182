"""The type of a hole's output, so the statements after a hole are still translated (issue #35).

When `x = <expr>` becomes a hole, the translator binds `x` to a typed placeholder (`let x: T = tileport_hole_hN;`)
instead of leaving it undefined: every later statement reading `x` is translated as usual, and a draft with one
hole has one hole. The type is read from the expression's shape the way cuTile Python types it (tile shapes from
`shape=` / the operands' broadcast, dtypes from the arrays, `dtype=` and `astype`), without writing any code; when
it cannot be told, the name stays undefined (the old behaviour: later uses are holes too).
"""

from __future__ import annotations

import ast
from typing import Any

from tileport.draft.syntax import REDUCTIONS, UNARY_MATH, ct_name
from tileport.draft.values import RUST_DTYPE, Lost, Unsupported, Val

# ct functions whose result has the type of their first tile argument
_SAME = set(UNARY_MATH) | {"exp2", "rsqrt", "sqrt", "abs", "negative", "maximum", "minimum", "add", "sub", "mul",
                           "truediv", "pow", "atan2", "bitwise_and", "bitwise_or", "bitwise_xor",
                           "bitwise_rshift", "bitwise_lshift", "bitwise_not", "cumsum", "cumprod"}
_BOOL = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "isnan"}


def infer(tr: Any, node: ast.expr) -> tuple[str, str, tuple[str, ...]] | None:
    """(kind, dtype, shape) of `node` ("tile" or "scalar"), or None when it cannot be told without translating."""
    try:
        return _infer(tr, node)
    except (Unsupported, Lost, KeyError, IndexError, TypeError, ValueError, AttributeError):
        return None


def _infer(tr: Any, node: ast.expr):
    if isinstance(node, ast.Name):
        v = tr.lookup(node.id, node)
        return (v.kind, v.dtype, v.shape) if v.kind in ("tile", "scalar") else None
    if isinstance(node, ast.BinOp):
        a, b = _operand(tr, node.left), _operand(tr, node.right)
        tiles = [t for t in (a, b) if t and t[0] == "tile"]
        if tiles:
            return ("tile", tiles[0][1], _broadcast([t[2] for t in tiles]))
        scalars = [t for t in (a, b) if t and t[0] == "scalar"]
        return scalars[0] if scalars else None
    if isinstance(node, ast.UnaryOp):
        return _infer(tr, node.operand)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        a, b = _operand(tr, node.left), _operand(tr, node.comparators[0])
        tiles = [t for t in (a, b) if t and t[0] == "tile"]
        return ("tile", "bool", _broadcast([t[2] for t in tiles])) if tiles else None
    if isinstance(node, ast.Subscript):
        return None
    if not isinstance(node, ast.Call):
        return None
    name = ct_name(node.func)
    if name is None and isinstance(node.func, ast.Attribute):
        recv = _infer(tr, node.func.value)
        if recv is None:
            return None
        if node.func.attr == "astype" and node.args:
            return ("tile", _dtype(tr, node.args[0]), recv[2])
        if node.func.attr == "reshape" and node.args:
            return ("tile", recv[1], _dims(tr, node.args[0]))
        return None
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    arg = (lambda i, key: node.args[i] if len(node.args) > i else kw[key])
    if name == "load":
        arr = tr.lookup(arg(0, "array").id, node)
        return ("tile", arr.value.dtype, _dims(tr, arg(2, "shape"))) if arr.kind == "array" else None
    if name in ("full", "zeros", "ones"):
        shape = _dims(tr, arg(0, "shape"))
        return ("tile", _dtype(tr, arg(2 if name == "full" else 1, "dtype")), shape)
    if name == "astype":
        x = _infer(tr, arg(0, "x"))
        return ("tile", _dtype(tr, arg(1, "dtype")), x[2]) if x else None
    if name == "reshape":
        x = _infer(tr, arg(0, "x"))
        return ("tile", x[1], _dims(tr, arg(1, "shape"))) if x else None
    if name == "gather":
        arr = tr.lookup(arg(0, "array").id, node)
        idx = arg(1, "indices")
        items = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        shapes = [t[2] for t in (_operand(tr, i) for i in items) if t and t[0] == "tile"]
        return ("tile", arr.value.dtype, _broadcast(shapes or [()]))
    if name == "where":
        parts = [_operand(tr, a) for a in node.args[:3]]
        tiles = [t for t in parts if t and t[0] == "tile"]
        values = [t for t in parts[1:] if t and t[0] == "tile"]
        return ("tile", values[0][1], _broadcast([t[2] for t in tiles])) if values else None
    if name in REDUCTIONS:
        x = _infer(tr, arg(0, "x"))
        if x is None or x[0] != "tile":
            return None
        axis = tr.const_int(arg(1, "axis"))
        axis = axis + len(x[2]) if axis < 0 else axis
        keep = "keepdims" in kw and isinstance(kw["keepdims"], ast.Constant) and kw["keepdims"].value is True
        shape = x[2][:axis] + (("1",) if keep else ()) + x[2][axis + 1:]
        return ("tile", x[1], shape)
    if name in _SAME:
        x = _infer(tr, node.args[0]) if node.args else None
        return x if x and x[0] == "tile" else None
    if name in _BOOL:
        x = _infer(tr, node.args[0]) if node.args else None
        return ("tile", "bool", x[2]) if x and x[0] == "tile" else None
    return None


def _operand(tr: Any, node: ast.expr):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return None
    return _infer(tr, node)


def _broadcast(shapes: list[tuple[str, ...]]) -> tuple[str, ...]:
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0} - {"1"}
        if len(dims) > 1:
            raise ValueError("incompatible shapes")
        out.append(dims.pop() if dims else "1")
    return tuple(out)


def _dims(tr: Any, node: ast.expr) -> tuple[str, ...]:
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    out = []
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, int):
            out.append(str(item.value))
        elif isinstance(item, ast.Name):
            v = tr.lookup(item.id, item)
            if v.kind == "scalar" and v.const_name:
                out.append(v.const_name)
            elif v.kind == "py" and isinstance(v.value, int):
                out.append(str(v.value))
            else:
                raise ValueError("not a static extent")
        else:
            raise ValueError("not a static extent")
    return tuple(out)


def _dtype(tr: Any, node: ast.expr) -> str:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ct" \
            and node.attr in RUST_DTYPE:
        return RUST_DTYPE[node.attr]
    if isinstance(node, ast.Attribute) and node.attr == "dtype" and isinstance(node.value, ast.Name):
        v = tr.lookup(node.value.id, node)
        if v.kind == "array":
            return v.value.dtype
        if v.kind == "tile":
            return v.dtype
    if isinstance(node, ast.Name):
        v = tr.lookup(node.id, node)
        if isinstance(v, Val) and v.kind == "dtype":
            return v.value
    raise ValueError("not a static dtype")


__all__ = ["infer"]
