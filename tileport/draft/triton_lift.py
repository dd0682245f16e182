"""Lift a Triton kernel to cuTile Python, so the cuTile draft translator (`draft_port`) writes the Rust.

One emitter: this module never writes Rust. It rewrites a `@triton.jit` kernel's AST into a `@ct.kernel` whose
tile operations say what the Triton pointer arithmetic did, writes it as a cuTile Python module (with a TILEPORT
declaration carrying the Triton analysis' variants and dtypes), and that module goes through stage A and the
draft translator like any cuTile Python op. What it cannot map is a hole at the Triton source's line:col.

The rules (general, from what Triton and cuTile mean, never per op):
* `tl.program_id(a)` -> `ct.bid(a)`, `tl.num_programs(a)` -> `ct.num_blocks(a)`.
* A pointer `P + sum(offset_d * stride_d) + offset_last` on a parameter P is a tile of an array P with one
  dimension per term, in broadcast order (`[:, None]` first): an offset `B * C + tl.arange(0, C)` (or
  `tl.arange(0, C)`: B = 0) is a tile of extent C at tile index B; a scalar offset `r` (no arange) is extent 1 at
  index r; the stride is a scalar parameter (dropped: the array knows its strides) or 1 for the last dimension.
  `P += C * stride_d` in a `for v in range(N)` loop (C the tile extent along d) adds v to that dimension's index.
* `tl.load(ptr, mask=m, other=v)` -> `ct.load(P, index=..., shape=..., padding_mode=...)` (v: 0 -> ZERO, -inf ->
  NEG_INF, inf -> POS_INF, nan -> NAN), reshaped to Triton's shape when extents of 1 were added;
  `tl.store(ptr, val, mask=m)` -> `ct.store(P, index=..., tile=...)`. A mask must be a conjunction of
  `offset < bound` (or `bound > offset`) over those offsets: it is taken as the array's bounds, which cuTile's
  tile view pads (the host must pass bound == the array's extent; the draft notes each one).
* `tl.sum/max/min(x, axis)` -> `ct.sum/max/min` (a full reduction of a rank-1 tile keeps its dim, so it broadcasts
  as Triton's scalar does); `tl.dot(a, b, acc)` / `acc += tl.dot(a, b)` -> `ct.mma(a, b, acc)`; `tl.where`,
  `tl.exp/exp2/log/sqrt/rsqrt/abs/maximum/minimum/cdiv`, `tl.zeros/full` -> the `ct.` function of that name;
  `x.to(T)` -> `x.astype(T)`; `P.dtype.element_ty` -> `P.dtype`; `tl.float32` -> `ct.float32`.
* Offset, mask and pointer names are consumed by the loads and stores that use them; a parameter only pointer
  arithmetic or masks read (a stride, a bound) is dropped from the kernel; `if` on constexprs stays.
Anything else (a gather through loaded indices, atomics, `tl.dot` without an accumulator, a pointer the rules
cannot read as a tile, a mask that is not a bounds check) is a hole.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from pathlib import Path

from tileport.draft.schema import Hole
from tileport.errors import UserError
from tileport.analysis.schema import Analysis

SAME_NAME = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "maximum", "minimum", "where", "cdiv", "zeros",
             "full", "sin", "cos", "tanh", "floor", "ceil"}
REDUCE = {"sum", "max", "min"}
DTYPES = {"float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint32"}
PADDING = {0: "ZERO", 0.0: "ZERO"}


class LiftIncomplete(Exception):
    """The lift left holes that keep the lifted kernel from compiling: no draft, the holes and the lifted source."""

    def __init__(self, holes: list[Hole], lifted: Path, why: str):
        super().__init__(why)
        self.holes, self.lifted, self.why = holes, lifted, why


class LiftHole(Exception):
    def __init__(self, node: ast.AST, what: str, detail: str = ""):
        super().__init__(what)
        self.node, self.what, self.detail = node, what, detail


@dataclass
class Dim:
    extent: ast.expr  # tile extent along it (a constexpr name or 1)
    index: ast.expr  # tile index
    offset: ast.expr | None  # the offset expression (for masks)
    stride: str | None  # stride parameter (None: unit)
    order: int  # broadcast position (0 = `[:, None]`, 1 = `[None, :]`), or -1 for none


@dataclass
class Tile:
    array: str
    dims: list[Dim]
    triton_rank: int  # dims with an arange


@dataclass
class Lifted:
    source: str  # the cuTile Python module text
    holes: list[Hole] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _tl(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        base = node.func.value
        if isinstance(base, ast.Name) and base.id == "tl":
            return node.func.attr
        if isinstance(base, ast.Attribute) and base.attr == "math" and isinstance(base.value, ast.Name) \
                and base.value.id == "tl":
            return node.func.attr
    return None


def _ct(attr: str) -> ast.expr:
    return ast.Attribute(value=ast.Name("ct", ast.Load()), attr=attr, ctx=ast.Load())


def _call(fn: str, args: list[ast.expr], kw: dict[str, ast.expr] | None = None) -> ast.Call:
    return ast.Call(func=_ct(fn), args=args, keywords=[ast.keyword(arg=k, value=v) for k, v in (kw or {}).items()])


def _is_int(node: ast.expr, v: int) -> bool:
    return isinstance(node, ast.Constant) and node.value == v and not isinstance(node.value, bool)


class KernelLift:
    def __init__(self, fn: ast.FunctionDef, params: dict[str, str], file: str):
        self.fn, self.file = fn, file
        self.params = params  # name -> "array" | "scalar" | "constant"
        self.env: dict[str, ast.expr] = {}  # consumed names -> their (resolved) expression
        self.ptr_shift: dict[str, dict[int, ast.expr]] = {}  # pointer name -> dim position -> added index
        self.rank: dict[str, int] = {}
        self.used: set[str] = set()  # parameters the lifted body still reads
        self.notes: list[str] = []
        self.holes: list[Hole] = []

    # -- pointer/offset reading -------------------------------------------------------------------
    def resolve(self, node: ast.expr) -> ast.expr:
        if isinstance(node, ast.Name) and node.id in self.env:
            return self.resolve(self.env[node.id])
        return node

    def _terms(self, node: ast.expr) -> list[ast.expr]:
        node = self.resolve(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._terms(node.left) + self._terms(node.right)
        return [node]

    def _has_arange(self, node: ast.expr) -> bool:
        node = self.resolve(node)
        return any(_tl(n) == "arange" or (isinstance(n, ast.Name) and n.id in self.env and
                                          self._has_arange(self.env[n.id])) for n in ast.walk(node))

    def _is_index_value(self, node: ast.expr) -> bool:
        """Something only pointer arithmetic and masks use: aranges, pointers, comparisons of them."""
        return self._has_arange(node) or self._pointer_param(node) is not None

    def _pointer_param(self, node: ast.expr) -> str | None:
        for t in self._terms(node):
            if isinstance(t, ast.Name) and self.params.get(t.id) == "array":
                return t.id
        return None

    def _broadcast(self, node: ast.expr) -> tuple[ast.expr, int]:
        """`offs[:, None]` -> (offs, 0), `offs[None, :]` -> (offs, 1), else (node, -1)."""
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2:
            a, b = node.slice.elts
            if isinstance(a, ast.Slice) and isinstance(b, ast.Constant) and b.value is None:
                return node.value, 0
            if isinstance(a, ast.Constant) and a.value is None and isinstance(b, ast.Slice):
                return node.value, 1
        return node, -1

    def _offset_dim(self, off: ast.expr, stride: str | None, order: int, where: ast.AST) -> Dim:
        """An offset: B * C + tl.arange(0, C) | tl.arange(0, C) | a scalar r."""
        terms = self._terms(off)
        aranges = [t for t in terms if _tl(t) == "arange"]
        rest = [t for t in terms if _tl(t) != "arange"]
        if not aranges:
            if any(self._has_arange(t) for t in rest):
                raise LiftHole(where, "an offset the tile rules cannot read")
            if any(isinstance(n, ast.Name) and self.rank.get(n.id, 0) > 0 for n in ast.walk(off)):
                raise LiftHole(where, "a gather through loaded indices",
                               "pointer arithmetic on a tile of values has no partition view; a writer maps it")
            return Dim(extent=ast.Constant(1), index=off, offset=None, stride=stride, order=order)
        if len(aranges) != 1 or len(aranges[0].args) != 2 or not _is_int(aranges[0].args[0], 0):
            raise LiftHole(where, "tl.arange not of the form tl.arange(0, C)")
        extent = aranges[0].args[1]
        if not rest:
            return Dim(extent=extent, index=ast.Constant(0), offset=off, stride=stride, order=order)
        if len(rest) == 1 and isinstance(rest[0], ast.BinOp) and isinstance(rest[0].op, ast.Mult):
            a, b = rest[0].left, rest[0].right
            for blk, c in ((a, b), (b, a)):
                if ast.dump(c) == ast.dump(extent):
                    return Dim(extent=extent, index=blk, offset=off, stride=stride, order=order)
        raise LiftHole(where, "an offset that is not block * C + tl.arange(0, C)",
                       "the tile index must be a multiple of the tile extent")

    def tile(self, ptr: ast.expr, where: ast.AST) -> Tile:
        base = self._pointer_param(ptr)
        if base is None:
            raise LiftHole(where, "a pointer not based on an array parameter")
        dims: list[Dim] = []
        terms, unit = [], []
        for t in self._terms(ptr):
            if isinstance(t, ast.Name) and t.id == base:
                continue
            strided = isinstance(t, ast.BinOp) and isinstance(t.op, ast.Mult) and any(
                isinstance(self.resolve(x), ast.Name) and self.params.get(self.resolve(x).id) == "scalar"
                for x in (t.left, t.right))
            (terms if strided or self._broadcast(t)[1] != -1 else unit).append(t)
        if unit:  # the unit-stride terms together are one offset: `pid * BLOCK + tl.arange(0, BLOCK)`
            merged = unit[0]
            for t in unit[1:]:
                merged = ast.BinOp(left=merged, op=ast.Add(), right=t)
            terms.append(merged)
        for t in terms:
            stride, off = None, t
            if isinstance(t, ast.BinOp) and isinstance(t.op, ast.Mult):
                for o, s in ((t.left, t.right), (t.right, t.left)):
                    s = self.resolve(s)
                    if isinstance(s, ast.Name) and self.params.get(s.id) == "scalar":
                        stride, off = s.id, o
                        break
            off, order = self._broadcast(off)
            if order == -1:
                off2 = self.resolve(off)
                off, order = self._broadcast(off2) if off2 is not off else (off, -1)
            dims.append(self._offset_dim(off, stride, order, where))
        if not dims:
            raise LiftHole(where, "a pointer with no offset (a scalar load)")
        unit = [d for d in dims if d.stride is None]
        if len(unit) > 1:
            raise LiftHole(where, "two offsets with unit stride", "cannot tell the array's dimensions apart")
        strided = sorted((d for d in dims if d.stride is not None), key=lambda d: d.order)
        ordered = strided + unit if all(d.order == -1 for d in dims) or not unit or unit[0].order in (-1, 1) \
            else sorted(dims, key=lambda d: d.order)
        if len(ordered) == len(dims) and len({d.order for d in ordered if d.order >= 0}) < \
                len([d for d in ordered if d.order >= 0]):
            raise LiftHole(where, "two offsets broadcast along the same axis")
        return Tile(array=base, dims=ordered, triton_rank=sum(1 for d in dims if _is_int(d.extent, 1) is False))

    def _shifted(self, ptr: ast.expr, tile: Tile) -> Tile:
        name = ptr.id if isinstance(ptr, ast.Name) else None
        for pos, add in (self.ptr_shift.get(name) or {}).items():
            d = tile.dims[pos]
            d.index = ast.BinOp(left=d.index, op=ast.Add(), right=add) if not _is_int(d.index, 0) else add
        return tile

    def _check_mask(self, mask: ast.expr | None, tile: Tile, where: ast.AST) -> None:
        if mask is None:
            return
        offsets = [ast.dump(self.resolve(d.offset)) for d in tile.dims if d.offset is not None]
        stack = [self.resolve(mask)]
        while stack:
            m = self.resolve(stack.pop())
            if isinstance(m, ast.BinOp) and isinstance(m.op, ast.BitAnd):
                stack += [m.left, m.right]
                continue
            if isinstance(m, ast.Compare) and len(m.ops) == 1:
                left, right, op = m.left, m.comparators[0], m.ops[0]
                if isinstance(op, ast.Gt):
                    left, right, op = right, left, ast.Lt()
                lhs, _ = self._broadcast(left)
                lhs = self.resolve(lhs)
                if isinstance(op, ast.Lt) and ast.dump(lhs) in offsets and not self._has_arange(right):
                    note = (f"{self.file}:{m.lineno}: mask `{ast.unparse(m)}` taken as the bounds of "
                                      f"{tile.array} (the host must pass {ast.unparse(right)} equal to its extent)")
                    if note not in self.notes:
                        self.notes.append(note)
                    continue
            raise LiftHole(m, "a mask that is not a bounds check of the tile",
                           f"`{ast.unparse(m)}`; cuTile pads only at the array's bounds")

    def _index_args(self, tile: Tile) -> tuple[ast.expr, ast.expr]:
        idx = ast.Tuple(elts=[self.expr(d.index) for d in tile.dims], ctx=ast.Load())
        shape = ast.Tuple(elts=[copy.deepcopy(d.extent) for d in tile.dims], ctx=ast.Load())
        self.used.add(tile.array)
        return idx, shape

    def _triton_shape(self, tile: Tile) -> list[ast.expr]:
        return [copy.deepcopy(d.extent) for d in tile.dims if not _is_int(d.extent, 1)]

    def load(self, node: ast.Call) -> ast.expr:
        kw = {k.arg: k.value for k in node.keywords}
        ptr = node.args[0]
        tile = self._shifted(ptr, self.tile(ptr, node))
        mask = kw.get("mask", node.args[1] if len(node.args) > 1 else None)
        other = kw.get("other", node.args[2] if len(node.args) > 2 else None)
        self._check_mask(mask, tile, node)
        idx, shape = self._index_args(tile)
        args: dict[str, ast.expr] = {"index": idx, "shape": shape}
        if mask is not None:
            args["padding_mode"] = _ct_attr_path("PaddingMode", self._padding(other, node))
        out: ast.expr = ast.Call(func=_ct("load"), args=[ast.Name(tile.array, ast.Load())],
                                 keywords=[ast.keyword(arg=k, value=v) for k, v in args.items()])
        tshape = self._triton_shape(tile)
        if len(tshape) != len(tile.dims):
            out = _call("reshape", [out, ast.Tuple(elts=tshape or [ast.Constant(1)], ctx=ast.Load())])
        return out

    def _padding(self, other: ast.expr | None, where: ast.AST) -> str:
        if other is None:
            self.notes.append(f"{self.file}:{where.lineno}: masked load without other=: lanes past the bounds are "
                              "zero in the port (undefined in Triton)")
            return "ZERO"
        text = ast.unparse(other).replace(" ", "")
        try:
            v = float(ast.literal_eval(other)) if not text.lstrip("-").startswith("float") else float(eval(text, {}))
        except Exception:
            raise LiftHole(other, "a load padding value that is not a constant") from None
        if v == 0:
            return "ZERO"
        if v == float("-inf"):
            return "NEG_INF"
        if v == float("inf"):
            return "POS_INF"
        if v != v:
            return "NAN"
        raise LiftHole(other, f"padding value {text}", "cuTile pads with zero, +-inf or nan only")

    def store(self, node: ast.Call) -> ast.stmt:
        kw = {k.arg: k.value for k in node.keywords}
        ptr = node.args[0]
        value = node.args[1] if len(node.args) > 1 else kw.get("value")
        tile = self._shifted(ptr, self.tile(ptr, node))
        self._check_mask(kw.get("mask", node.args[2] if len(node.args) > 2 else None), tile, node)
        idx, shape = self._index_args(tile)
        val = self.expr(value)
        if len(self._triton_shape(tile)) != len(tile.dims):
            val = _call("reshape", [val, shape])
        return ast.Expr(_call("store", [ast.Name(tile.array, ast.Load())], {"index": idx, "tile": val}))

    # -- values --------------------------------------------------------------------------------------
    def expr(self, node: ast.expr) -> ast.expr:
        op = _tl(node)
        if op is not None:
            return self._tl_call(op, node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            return ast.Call(func=ast.Attribute(value=self.expr(node.func.value), attr="astype", ctx=ast.Load()),
                            args=[self.expr(a) for a in node.args], keywords=[])
        if isinstance(node, ast.Attribute):
            if node.attr == "element_ty" and isinstance(node.value, ast.Attribute) and node.value.attr == "dtype":
                base = node.value.value
                if isinstance(base, ast.Name) and self.params.get(base.id) == "array":
                    self.used.add(base.id)
                    return ast.Attribute(value=ast.Name(base.id, ast.Load()), attr="dtype", ctx=ast.Load())
            if isinstance(node.value, ast.Name) and node.value.id == "tl":
                if node.attr in DTYPES:
                    return _ct(node.attr)
                raise LiftHole(node, f"tl.{node.attr}")
        if isinstance(node, ast.Name):
            if node.id in self.env:
                raise LiftHole(node, f"`{node.id}` (an offset, mask or pointer) used as a value")
            if node.id in self.params:
                self.used.add(node.id)
            return ast.Name(node.id, ast.Load())
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float":
            return copy.deepcopy(node)
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Constant, ast.IfExp)):
            new = copy.deepcopy(node)
            for fname, value in ast.iter_fields(node):
                if isinstance(value, ast.expr):
                    setattr(new, fname, self.expr(value))
                elif isinstance(value, list) and value and isinstance(value[0], ast.expr):
                    setattr(new, fname, [self.expr(v) for v in value])
            return new
        raise LiftHole(node, f"`{ast.unparse(node)[:40]}`")

    def _rank(self, node: ast.expr) -> int:
        if isinstance(node, ast.Name):
            return self.rank.get(node.id, 0)
        op = _tl(node)
        if op in REDUCE:
            return max(0, self._rank(node.args[0]) - 1)
        if op in ("zeros", "full") and node.args and isinstance(node.args[0], (ast.Tuple, ast.List)):
            return len(node.args[0].elts)
        if op == "load":
            try:
                return self.tile(node.args[0], node).triton_rank
            except LiftHole:
                return 0
        if op == "dot":
            return 2
        return max((self._rank(c) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)), default=0)

    def _tl_call(self, op: str, node: ast.Call) -> ast.expr:
        kw = {k.arg: k.value for k in node.keywords}
        if op == "program_id":
            return _call("bid", [self.expr(node.args[0] if node.args else kw["axis"])])
        if op == "num_programs":
            return _call("num_blocks", [self.expr(node.args[0] if node.args else kw["axis"])])
        if op == "load":
            return self.load(node)
        if op in REDUCE:
            x = node.args[0]
            axis = node.args[1] if len(node.args) > 1 else kw.get("axis")
            if axis is None:
                raise LiftHole(node, f"tl.{op} without an axis")
            keep = kw.get("keep_dims")
            keepdims = ast.Constant(True) if (keep is None and self._rank(x) == 1) else (keep or ast.Constant(False))
            return _call(op, [self.expr(x)], {"axis": self.expr(axis), "keepdims": keepdims})
        if op == "dot":
            acc = node.args[2] if len(node.args) > 2 else kw.get("acc")
            if acc is None:
                raise LiftHole(node, "tl.dot without an accumulator", "write acc = tl.dot(a, b, acc) or acc += tl.dot(a, b)")
            return _call("mma", [self.expr(node.args[0]), self.expr(node.args[1]), self.expr(acc)])
        if op in SAME_NAME:
            args = [ast.Tuple(elts=[self.expr(e) for e in a.elts], ctx=ast.Load())
                    if isinstance(a, (ast.Tuple, ast.List)) else self.expr(a) for a in node.args]
            kws = {k: self.expr(v) for k, v in kw.items()}
            return _call(op, args, kws)
        raise LiftHole(node, f"tl.{op}")

    # -- statements ----------------------------------------------------------------------------------
    def body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            try:
                out.extend(self.stmt(s))
            except LiftHole as h:
                self.holes.append(Hole(what=h.what, file=self.file, line=getattr(h.node, "lineno", s.lineno),
                                       col=getattr(h.node, "col_offset", s.col_offset) + 1, kernel=self.fn.name,
                                       entry=self.fn.name, detail=h.detail))
            except (KeyError, IndexError, AttributeError, TypeError, ValueError, RecursionError) as e:
                # a construct the rules above never expected: a hole for the writer, never a crash or a guess
                self.holes.append(Hole(what=f"statement `{ast.unparse(s).splitlines()[0][:40]}`", file=self.file,
                                       line=s.lineno, col=s.col_offset + 1, kernel=self.fn.name, entry=self.fn.name,
                                       detail=f"the lift could not read it ({type(e).__name__})"))
        return out

    def stmt(self, s: ast.stmt) -> list[ast.stmt]:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            name = s.targets[0].id
            data = any(_tl(n) in ("load", "dot") or (isinstance(n, ast.Name) and n.id == name)
                       for n in ast.walk(s.value))
            if not data and self._is_index_value(s.value):
                self.env[name] = s.value
                return []
            if not data and isinstance(s.value, ast.Compare) and any(isinstance(n, ast.Name) and n.id in self.env
                                                        for n in ast.walk(s.value)):
                self.env[name] = s.value  # a mask
                return []
            value = self.expr(s.value)
            self.rank[name] = self._rank(s.value)
            return [ast.Assign(targets=[ast.Name(name, ast.Store())], value=value, lineno=s.lineno)]
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            name = s.target.id
            if name in self.env and self._pointer_param(self.env[name]) is not None:
                raise LiftHole(s, "a pointer increment outside a counted loop")
            if isinstance(s.op, ast.Add) and _tl(s.value) == "dot" and len(s.value.args) == 2:
                return [ast.Assign(targets=[ast.Name(name, ast.Store())], lineno=s.lineno,
                                   value=_call("mma", [self.expr(s.value.args[0]), self.expr(s.value.args[1]),
                                                       ast.Name(name, ast.Load())]))]
            return [ast.AugAssign(target=ast.Name(name, ast.Store()), op=s.op, value=self.expr(s.value))]
        if isinstance(s, ast.Expr) and _tl(s.value) == "store":
            return [self.store(s.value)]
        if isinstance(s, ast.If):
            return [ast.If(test=self.expr(s.test), body=self.body(s.body) or [ast.Pass()],
                           orelse=self.body(s.orelse))]
        if isinstance(s, ast.For):
            return [self._for(s)]
        if isinstance(s, ast.Pass):
            return [s]
        raise LiftHole(s, f"statement `{ast.unparse(s).splitlines()[0][:40]}`")

    def _for(self, s: ast.For) -> ast.stmt:
        it = s.iter
        if not (isinstance(s.target, ast.Name) and isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id in ("range", "static_range") or (_tl(it) == "range")):
            raise LiftHole(s, "a loop that is not over range(...)")
        args = list(it.args)
        if len(args) == 3 and not _is_int(args[2], 1):
            raise LiftHole(s, "a range with a step")
        if len(args) >= 2 and _is_int(args[0], 0):
            args = [args[1]]
        elif len(args) >= 2:
            raise LiftHole(s, "a range that does not start at 0")
        var = ast.Name(s.target.id, ast.Load())
        body = []
        for b in s.body:  # pointer increments: `p += C * stride` moves p's tile by one along that dim per step
            if isinstance(b, ast.AugAssign) and isinstance(b.target, ast.Name) and b.target.id in self.env \
                    and isinstance(b.op, ast.Add) and self._pointer_param(self.env[b.target.id]) is not None:
                tile = self.tile(self.env[b.target.id], b)
                pos = self._increment_dim(b.value, tile, b)
                self.ptr_shift.setdefault(b.target.id, {})[pos] = var
                continue
            body.append(b)
        new_body = self.body(body) or [ast.Pass()]
        for name in [n for n, d in self.ptr_shift.items() if any(v is var for v in d.values())]:
            self.ptr_shift[name] = {p: v for p, v in self.ptr_shift[name].items() if v is not var}
        return ast.For(target=ast.Name(s.target.id, ast.Store()),
                       iter=ast.Call(func=ast.Name("range", ast.Load()), args=[self.expr(a) for a in args],
                                     keywords=[]), body=new_body, orelse=[], lineno=s.lineno)

    def _increment_dim(self, inc: ast.expr, tile: Tile, where: ast.AST) -> int:
        if isinstance(inc, ast.BinOp) and isinstance(inc.op, ast.Mult):
            for c, st in ((inc.left, inc.right), (inc.right, inc.left)):
                if isinstance(st, ast.Name):
                    for pos, d in enumerate(tile.dims):
                        if d.stride == st.id and ast.dump(d.extent) == ast.dump(c):
                            return pos
        for pos, d in enumerate(tile.dims):
            if d.stride is None and ast.dump(d.extent) == ast.dump(inc):
                return pos
        raise LiftHole(where, "a pointer increment that is not one tile extent along one dimension")


def _ct_attr_path(*parts: str) -> ast.expr:
    node: ast.expr = ast.Name("ct", ast.Load())
    for p in parts:
        node = ast.Attribute(value=node, attr=p, ctx=ast.Load())
    return node


def lift(triton: Analysis) -> Lifted:
    """The cuTile Python module for a Triton op's analysis (its source is re-read), with the holes."""
    from tileport.analysis.triton.detect import triton_kernels

    path = Path(triton.source.path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    kinfo = {k.name: k for k in triton.kernels}
    out_fns, holes, notes, params_decl = [], [], [], {}
    for fn in triton_kernels(tree):
        if fn.name not in kinfo:
            continue
        params = {p.name: p.kind for p in kinfo[fn.name].params}
        kl = KernelLift(fn, params, path.name)
        body = kl.body(fn.body)
        holes += kl.holes
        notes += kl.notes
        args = []
        for p in kinfo[fn.name].params:
            if p.kind == "constant":
                t = _constexpr_type(triton, fn.name, p.name)
                args.append(ast.arg(arg=p.name, annotation=ast.Subscript(value=_ct("Constant"),
                                                                         slice=ast.Name(t, ast.Load()), ctx=ast.Load())))
            elif p.name in kl.used:
                args.append(ast.arg(arg=p.name))
                if p.kind == "scalar":
                    params_decl[p.name] = p.dtype or "int32"
        new = ast.FunctionDef(name=fn.name, args=ast.arguments(posonlyargs=[], args=args, kwonlyargs=[],
                                                               kw_defaults=[], defaults=[]),
                              body=body or [ast.Pass()], decorator_list=[_ct("kernel")], returns=None,
                              type_params=[], lineno=fn.lineno)
        out_fns.append(new)
    variants = [{"kernel": v.kernel, "constants": dict(v.constants)} for v in triton.variants]
    seen, uniq = set(), []
    for v in variants:
        key = repr((v["kernel"], sorted(v["constants"].items())))
        if key not in seen:
            seen.add(key)
            uniq.append(v)
    decl = {"dtypes": list(triton.dtypes), "variants": uniq, "params": params_decl}
    if triton.shapes:
        decl["shapes"] = triton.shapes
    if triton.tolerances:
        decl["tolerances"] = {d: t.model_dump() for d, t in triton.tolerances.items()}
    module = ast.Module(body=[ast.Import(names=[ast.alias(name="cuda.tile", asname="ct")]),
                              ast.Assign(targets=[ast.Name("TILEPORT", ast.Store())],
                                         value=ast.parse(repr(decl), mode="eval").body, lineno=1)] + out_fns,
                        type_ignores=[])
    ast.fix_missing_locations(module)
    header = (f'"""cuTile Python lifted by tileport from the Triton op {path.name} (tileport.draft.'
              f'triton_lift): the draft translator\'s input, not a reference."""\n\n')
    return Lifted(source=header + ast.unparse(module) + "\n", holes=holes, notes=notes)


def _constexpr_type(triton: Analysis, kernel: str, name: str) -> str:
    vals = [v.constants.get(name) for v in triton.variants if v.kernel == kernel and name in v.constants]
    if vals and all(isinstance(v, bool) for v in vals):
        return "bool"
    if vals and all(isinstance(v, float) for v in vals):
        return "float"
    return "int"


def draft_triton(triton: Analysis, out_dir: str | Path, *, config=None, kernel: str | None = None):
    """Lift the Triton op, analyse the lifted cuTile Python (stage A's own pipeline: real export_kernel Tile IR of
    the lifted kernels) and translate it with `draft_port`; returns (draft, lifted path, lift notes). The lift's
    holes come first, at the Triton source's line:col."""
    from tileport.draft.port import draft_port
    from tileport.analysis.pipeline import analyze_op

    out = Path(out_dir)
    lifted = lift(triton)
    src_dir = out / "lifted"
    src_dir.mkdir(parents=True, exist_ok=True)
    path = src_dir / f"{triton.op}.py"
    path.write_text(lifted.source, encoding="utf-8")
    try:
        a = analyze_op(path, out_dir=out / "lifted-analysis", kernel=kernel, config=config, run_tileiras=False)
    except UserError as e:
        if not lifted.holes:
            raise
        raise LiftIncomplete(lifted.holes, path, str(e)) from None
    draft = draft_port(a, kernel=kernel)
    holes = list(lifted.holes) + [h for h in draft.holes if h not in lifted.holes]
    notes = list(draft.host_contract.notes) + lifted.notes + [
        f"lifted from the Triton op {triton.source.path} through {path} (tileport.draft.triton_lift)"]
    contract = draft.host_contract.model_copy(update={"notes": notes})
    return draft.model_copy(update={"holes": holes, "host_contract": contract}), path, lifted.notes
