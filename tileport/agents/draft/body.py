"""Translate one `@ct.kernel` body (a Python AST) into the statements of one cutile-rs entry.

The constant branches the entry fixes are folded while translating (their conditions evaluate over the
entry's known constants); every other `ct.Constant` stays a name (a const generic). Statements outside the
subset become holes: a `// TODO(tileport)` comment in the text and a `Hole` record, never guessed code.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from tileport.agents.draft.values import (FLOATS, INTS, OP_DTYPE, RUST_DTYPE, Array, Lost, NeedsDtype, Unsupported,
                                          Val, View, literal, paren, shape_macro, tile_type)

INDENT = "    "

_CMP = {ast.Lt: "lt_tile", ast.LtE: "le_tile", ast.Gt: "gt_tile", ast.GtE: "ge_tile", ast.Eq: "eq_tile",
        ast.NotEq: "ne_tile"}
_ARITH = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_BITS = {ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}
_ROUNDING = {"RN": "NearestEven", "RZ": "Zero", "RM": "NegativeInf", "RP": "PositiveInf", "FULL": "Full",
             "APPROX": "Approx"}
_PADDING = {"ZERO": "Zero", "NEG_ZERO": "NegZero", "NAN": "Nan", "POS_INF": "PosInf", "NEG_INF": "NegInf",
            "UNDETERMINED": "None"}
# ct.<name>(x) elementwise math with no modes -> cutile function.
_UNARY = {"exp": "exp", "log": "log", "log2": "log2", "tanh": "tanh", "sin": "sin", "cos": "cos", "tan": "tan",
          "sinh": "sinh", "cosh": "cosh", "floor": "floor", "ceil": "ceil"}
_ELEM_BYTES = {"i8": 1, "u8": 1, "bool": 1, "i16": 2, "u16": 2, "f16": 2, "bf16": 2, "i32": 4, "u32": 4, "f32": 4,
               "i64": 8, "u64": 8, "f64": 8}
_FMA_FLOATS = {"f16", "bf16", "f32", "f64", OP_DTYPE}
_REDUCE = {"sum": "reduce_sum", "max": "reduce_max", "min": "reduce_min", "prod": "reduce_prod"}


@dataclass
class Scope:
    names: dict[str, Val] = field(default_factory=dict)


@dataclass
class Prologue:
    """Partitions every load/store/num_tiles needs, hoisted to the top of the entry (they are loop-invariant)."""

    lines: list[str] = field(default_factory=list)
    views: dict[tuple, View] = field(default_factory=dict)
    used_names: set[str] = field(default_factory=set)
    view_names: set[str] = field(default_factory=set)


class BodyTranslator:
    """One entry's body. `env` holds the kernel parameters; `constants` the values this entry folds on."""

    def __init__(self, *, source_lines: list[str], file: str, params: dict[str, Val],
                 folded: dict[str, Any], generics: set[str], module_consts: dict[str, Any],
                 on_hole: Callable[[Unsupported], None]):
        self.source_lines = source_lines
        self.file = file
        self.scopes = [Scope(dict(params))]
        self.folded = folded  # constants whose value this entry fixes (used to fold branches)
        self.generics = generics  # const generic names
        self.module_consts = module_consts
        self.on_hole = on_hole
        self.prologue = Prologue(used_names=set(params) | set(generics))
        self.lines: list[str] = []
        self.depth = 1
        self._tmp = 0
        self.last_hoist: tuple[str, str, int] | None = None
        self.folded_tests: dict[str, bool] = {}  # ast.dump(test) -> the branch this entry takes
        self.uses: dict[int, int] = {}  # binding (assignment statement) -> how often its name is read
        self.fusable: set[int] = set()  # bindings of named products read by an add/sub (first pass)
        self.known_fusable: set[int] = set()
        self.known_uses: dict[int, int] | None = None  # the first pass' counts: deferring products needs them
        self.pending: list[Val] = []  # products bound to a name but not written yet (their one use fuses them)
        self.mut_names: set[str] = set()
        self.stride_constants: dict[str, list[int | None]] = {}  # array -> static strides (1) or None
        self.helpers: set[int] = set()  # ranks whose tensor_strides_N compiler op the module needs
        self.computed_index = False
        self.needs_dtype = False  # an op-dtype literal was needed: write the entry per concrete dtype
        self.loops: list[list] = []  # open loops: [index of the `for` line, names varying with it, depth]  # a load/store index the compiler may not prove in bounds (cuTile never traps)
        self.loop_assigned: dict[int, set[str]] = {}

    # ---- names -------------------------------------------------------------------------------

    def lookup(self, name: str, node: ast.AST) -> Val:
        for scope in reversed(self.scopes):
            if name in scope.names:
                v = scope.names[name]
                if v.kind == "lost":
                    raise Lost(name)
                if "binding" in v.extra:
                    self.uses[v.extra["binding"]] = self.uses.get(v.extra["binding"], 0) + 1
                return v
        if name in self.generics:
            return Val("scalar", name, "i32", const_name=name)
        if name in self.folded:
            return Val("py", value=self.folded[name])
        if name in self.module_consts:
            return Val("py", value=self.module_consts[name])
        raise Unsupported(f"name `{name}`", node, "not a kernel parameter, local or module constant")

    def fresh(self, hint: str) -> str:
        if hint and hint not in self.prologue.used_names:
            self.prologue.used_names.add(hint)
            return hint
        base = hint or "tmp"
        while True:
            self._tmp += 1
            name = f"{base}_{self._tmp}" if hint else f"tmp_{self._tmp}"
            if name not in self.prologue.used_names:
                self.prologue.used_names.add(name)
                return name

    def emit(self, line: str) -> None:
        self.lines.append(INDENT * self.depth + line)

    def hoist(self, hint: str, rust_type: str, expr: str) -> str:
        name = self.fresh(hint)
        line = f"let {name}: {rust_type} = {expr};"
        target = self.invariant_loop(expr)
        if target is not None:
            # loop-invariant and pure: computed before the outermost loop it does not depend on, as cuTile does
            at, depth = self.loops[target][0], self.loops[target][2]
            self.lines.insert(at, INDENT * depth + line)
            for loop in self.loops[target:]:
                loop[0] += 1
            self.last_hoist = None
            return name
        self.emit(line)
        self.define_in_loops(name)
        self.last_hoist = (name, expr, len(self.lines))
        return name

    def invariant_loop(self, expr: str) -> int | None:
        """Index (in self.loops) of the outermost open loop `expr` does not depend on, or None."""
        if not self.loops or any(k in expr for k in _EFFECTFUL):
            return None
        idents = _idents(expr)
        for i, loop in enumerate(self.loops):
            if not (idents & loop[1]):
                return i
        return None

    def define_in_loops(self, name: str) -> None:
        """`name` is computed inside every open loop: it varies with them."""
        for loop in self.loops:
            loop[1].add(name)

    def tile(self, dtype: str, shape: tuple[str, ...], expr: str, hint: str = "") -> Val:
        """A tile whose type Rust cannot infer from `expr` alone: bind it to a typed `let`."""
        return Val("tile", self.hoist(hint, tile_type(dtype, shape), expr), dtype, shape)

    # ---- statements --------------------------------------------------------------------------

    def run(self, body: list[ast.stmt]) -> None:
        self.block(body)

    def block(self, body: list[ast.stmt]) -> None:
        for i, stmt in enumerate(body):
            later_loops = _names_assigned_in_loops(body[i + 1:])
            try:
                self.statement(stmt, later_loops)
            except Unsupported as e:
                self.hole(e, stmt)
            except Lost:
                self.emit(f"// TODO(tileport): depends on a hole above: {self.src(stmt)}")
                self.mark_lost(stmt)

    def hole(self, e: Unsupported, stmt: ast.stmt) -> None:
        if isinstance(e, NeedsDtype):
            self.needs_dtype = True
        node = e.node or stmt
        if not hasattr(node, "lineno"):
            node = stmt
        e.node = node
        self.on_hole(e)
        col = getattr(node, "col_offset", 0) + 1
        self.emit(f"// TODO(tileport): unsupported: {e.what} at {self.file}:{node.lineno}:{col}")
        self.emit(f"//     {self.src(stmt)}")
        self.mark_lost(stmt)

    def mark_lost(self, stmt: ast.stmt) -> None:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.scopes[-1].names[node.id] = Val("lost")

    def src(self, node: ast.AST) -> str:
        line = self.source_lines[node.lineno - 1].strip() if 0 < node.lineno <= len(self.source_lines) else ""
        return line

    def statement(self, stmt: ast.stmt, later_loops: set[str]) -> None:
        if isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                return  # docstring
            if isinstance(stmt.value, ast.Call):
                self.call_statement(stmt.value)
                return
            raise Unsupported("an expression statement", stmt)
        if isinstance(stmt, ast.Pass):
            return
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple):
            self.unpack(stmt.targets[0], stmt.value, later_loops, stmt)
            return
        if isinstance(stmt, ast.Assign):
            if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
                raise Unsupported("an assignment to several targets or a non-name target", stmt)
            self.assign(stmt.targets[0].id, stmt.value, later_loops, stmt)
            return
        if isinstance(stmt, ast.AugAssign):
            if not isinstance(stmt.target, ast.Name):
                raise Unsupported("an augmented assignment to a non-name target", stmt)
            value = ast.BinOp(left=ast.Name(stmt.target.id, ast.Load()), op=stmt.op, right=stmt.value)
            ast.copy_location(value, stmt)
            self.assign(stmt.target.id, value, later_loops, stmt)
            return
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            self.assign(stmt.target.id, stmt.value, later_loops, stmt)
            return
        if isinstance(stmt, ast.If):
            cond = self.fold_condition(stmt.test)
            if cond is None:
                raise Unsupported("`if` on a run-time value", stmt,
                                  "only branches on ct.Constant parameters fold into variants")
            self.block(stmt.body if cond else stmt.orelse)
            return
        if isinstance(stmt, ast.For):
            self.for_loop(stmt)
            return
        if isinstance(stmt, ast.Return) and stmt.value is None:
            self.emit("return;")
            return
        raise Unsupported(f"`{type(stmt).__name__.lower()}` statement", stmt)

    def unpack(self, target: ast.Tuple, value: ast.expr, later_loops: set[str], stmt: ast.stmt) -> None:
        """`a, b = x, y` and `m, n = arr.shape`: one assignment per name (when no right side reads a target)."""
        names = [t.id for t in target.elts if isinstance(t, ast.Name)]
        if len(names) != len(target.elts):
            raise Unsupported("unpacking into something other than names", stmt)
        if isinstance(value, ast.Tuple) and len(value.elts) == len(names):
            parts = list(value.elts)
        elif isinstance(value, ast.Attribute) and value.attr == "shape":
            parts = [ast.copy_location(ast.Subscript(value=value, slice=ast.Constant(i), ctx=ast.Load()), value)
                     for i in range(len(names))]
        else:
            raise Unsupported("unpacking a value that is not a tuple or an array's shape", stmt)
        read = {n.id for part in parts for n in ast.walk(part) if isinstance(n, ast.Name)}
        if read & set(names):
            raise Unsupported("a swap-style unpacking (a right side reads a target)", stmt)
        for name, part in zip(names, parts):
            self.assign(name, part, later_loops, part)

    def fold_condition(self, test: ast.expr) -> bool | None:
        key = ast.dump(test)
        if key in self.folded_tests:
            return self.folded_tests[key]
        try:
            v = self.expr(test, "")
        except (Unsupported, Lost):
            return None
        if v.kind == "py":
            return bool(v.value)
        return None

    def assign(self, name: str, node: ast.expr, later_loops: set[str], stmt: ast.stmt) -> None:
        v = self.expr(node, rust_name(name))
        if self.last_hoist and v.expr == self.last_hoist[0] and len(self.lines) == self.last_hoist[2]:
            # the value's own typed temporary is the last line: bind the Python name directly instead
            self.lines.pop()
            v = Val(v.kind, self.last_hoist[1], v.dtype, v.shape, v.value, v.const_name)
        self.last_hoist = None
        current = self.find_outer(name)
        if v.kind in ("py", "array", "view", "dtype", "enum"):
            if current is not None and current[1] < len(self.scopes) - 1 and current[0].kind != v.kind:
                raise Unsupported(f"reassigning `{name}` with a different kind of value inside a loop", stmt)
            if v.kind == "py" and current is not None and current[0].kind in ("tile", "scalar"):
                v = self.materialize(v, current[0], node)
            else:
                self.scopes[-1].names[name] = v
                return
        rust_t = tile_type(v.dtype, v.shape) if v.kind == "tile" else v.dtype
        if current is not None and current[1] < len(self.scopes) - 1:
            # an outer variable reassigned inside a loop: a loop-carried value, same type required
            old = current[0]
            if old.kind != v.kind or old.dtype != v.dtype or old.shape != v.shape:
                raise Unsupported(f"loop-carried `{name}` changes type ({_describe(old)} -> {_describe(v)})", stmt)
            if not old.extra.get("mut"):
                raise Unsupported(f"loop-carried `{name}` not declared mutable", stmt)
            self.emit(f"{old.expr} = {v.expr};")
            return
        mut = "mut " if name in later_loops else ""
        rname = rust_name(name)
        self.flush_pending(rname)
        key = id(stmt)
        if (not mut and v.kind == "tile" and v.extra.get("mul") and self.known_uses is not None
                and self.known_uses.get(key) == 1 and key in self.known_fusable and not (_idents(" ".join(v.extra["mul"])) & self.mut_names)):
            # a product read exactly once: keep it unwritten so that read can contract it into an fma
            deferred = Val("tile", f"{_operand(v.extra['mul'][0])} * {_operand(v.extra['mul'][1])}", v.dtype,
                           v.shape, extra={"mul": v.extra["mul"], "binding": key, "name": rname})
            self.scopes[-1].names[name] = deferred
            self.pending.append(deferred)
            return
        self.emit(f"let {mut}{rname}: {rust_t} = {v.expr};")
        self.define_in_loops(rname)
        self.prologue.used_names.add(rname)
        if mut:
            self.mut_names.add(rname)
        extra = {"mut": bool(mut), "binding": key, "index_ok": bool(v.extra.get("index_ok")) and not mut,
                 "tile_count": bool(v.extra.get("tile_count")) and not mut}
        if not mut and v.kind == "tile" and v.extra.get("mul"):
            extra["mul_named"] = True
        self.scopes[-1].names[name] = Val(v.kind, rname, v.dtype, v.shape, extra=extra, const_name=None)

    def flush_pending(self, rname: str) -> None:
        """A deferred product whose operands `let {rname}` is about to shadow is written out first."""
        for d in list(self.pending):
            if d.extra.get("fused"):
                self.pending.remove(d)
            elif rname in _idents(" ".join(d.extra["mul"])):
                name = self.fresh(d.extra["name"])
                self.emit(f"let {name}: {tile_type(d.dtype, d.shape)} = {d.expr};")
                d.expr = name
                d.extra.pop("mul", None)
                self.pending.remove(d)

    def materialize(self, v: Val, like: Val, node: ast.AST) -> Val:
        if like.kind == "scalar":
            return Val("scalar", literal(v.value, like.dtype, node), like.dtype)
        return self.tile(like.dtype, like.shape, f"constant({literal(v.value, like.dtype, node)}, "
                                                 f"{shape_macro(like.shape)})")

    def find_outer(self, name: str) -> tuple[Val, int] | None:
        for i in range(len(self.scopes) - 1, -1, -1):
            if name in self.scopes[i].names:
                return self.scopes[i].names[name], i
        return None

    def for_loop(self, stmt: ast.For) -> None:
        if stmt.orelse:
            raise Unsupported("`for ... else`", stmt)
        if not isinstance(stmt.target, ast.Name):
            raise Unsupported("a `for` target that is not a name", stmt)
        it = stmt.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and not it.keywords and 1 <= len(it.args) <= 3):
            raise Unsupported("a `for` loop over something other than range(...)", stmt.iter)
        bound_vals = [self.expr(a, "") for a in it.args]
        args = [self.index_scalar(v, a, bound=True) for v, a in zip(bound_vals, it.args)]
        if len(args) == 1:
            head = f"0i32..{_range_end(args[0])}"
        else:
            head = f"{args[0]}..{_range_end(args[1])}"
        if len(args) == 3:
            head = f"({head}).step_by({paren(args[2])} as usize)"
        var = rust_name(stmt.target.id)
        # loop-carried (mutable) variables and the loop variable vary with the loop
        carried = {rust_name(n) for n in _assigned_names(stmt.body)}
        self.loops.append([len(self.lines), carried | {var}, self.depth])
        self.define_in_loops(var)
        self.emit(f"for {var} in {head} {{")
        self.loops[-1][0] = len(self.lines) - 1
        self.depth += 1
        # the compiler proves an index in range when it walks 0..num_tiles(view, axis); other trip counts it checks
        counted = len(it.args) == 1 and bool(bound_vals[0].extra.get("tile_count"))
        self.scopes.append(Scope({stmt.target.id: Val("scalar", var, "i32", extra={"index_ok": counted})}))
        self.block(stmt.body)
        self.scopes.pop()
        self.depth -= 1
        self.loops.pop()
        self.emit("}")

    # ---- memory statements -------------------------------------------------------------------

    def call_statement(self, call: ast.Call) -> None:
        name = _ct_name(call.func)
        if name == "store":
            args = _bind(call, ["array", "index", "tile"], {"order", "latency", "allow_tma"})
            self.store(args, call)
            return
        if name == "scatter":
            args = _bind(call, ["array", "indices", "value"], {"mask", "check_bounds", "latency"})
            self.pointer_access(args, call, "", store=True)
            return
        if isinstance(call.func, ast.Attribute) and call.func.attr == "store" and name is None:
            target = self.expr(call.func.value, "")
            if target.kind == "view" and not target.value.var:
                self.method(call, "")
                return
            if target.kind == "view":
                args = _bind(call, ["index", "tile"], set())
                self.view_store(target.value, args["index"], args["tile"], call)
                return
        raise Unsupported(_call_label(call), call)

    def store(self, args: dict[str, ast.expr], call: ast.Call) -> None:
        for k in ("order", "latency", "allow_tma"):
            if k in args:
                raise Unsupported(f"ct.store(..., {k}=)", call)
        arr = self.expr(args["array"], "")
        if arr.kind != "array":
            raise Unsupported("ct.store into something that is not a kernel array parameter", args["array"])
        tile = self.expr(args["tile"], f"{arr.value.name}_tile")
        if tile.kind != "tile":
            raise Unsupported("ct.store of a scalar", args["tile"])
        view = self.view_for(arr.value, tile.shape, "None", None, mutable=True, node=call)
        self.view_store(view, args["index"], args["tile"], call, tile)

    def view_store(self, view: View, index_node: ast.expr, tile_node: ast.expr, call: ast.Call,
                   tile: Val | None = None) -> None:
        if not view.mutable:
            view = self.view_for(view.array, view.shape, "None", None, mutable=True, node=call)
        tile = tile or self.expr(tile_node, f"{view.array.name}_tile")
        if tile.kind != "tile":
            raise Unsupported("storing a scalar through a view", tile_node)
        if tile.shape != view.shape:
            raise Unsupported("a stored tile whose shape differs from the view's tile", tile_node,
                              f"{tile.shape} vs {view.shape}")
        if tile.dtype != view.array.dtype:
            raise Unsupported("a store that converts dtype implicitly", tile_node)
        index = self.index_list(index_node, len(view.shape))
        self.emit(f"{view.var}.store({tile.expr}, [{', '.join(index)}]);")

    def index_list(self, node: ast.expr, rank: int) -> list[str]:
        items = node.elts if isinstance(node, ast.Tuple) else [node]
        if len(items) != rank:
            raise Unsupported("an index whose length differs from the array's rank", node)
        return [self.index_scalar(self.expr(i, ""), i) for i in items]

    def index_scalar(self, v: Val, node: ast.AST, bound: bool = False) -> str:
        if v.kind == "py" and isinstance(v.value, int) and not isinstance(v.value, bool):
            return f"{v.value}i32"
        if v.kind == "scalar" and v.dtype == "i32":
            if not bound and not v.extra.get("index_ok"):
                self.computed_index = True
            return v.expr
        raise Unsupported("an index or bound that is not an int32 scalar", node)

    def view_for(self, arr: Array, shape: tuple[str, ...], padding: str, order: tuple[int, ...] | None,
                 mutable: bool, node: ast.AST, var: str | None = None) -> View:
        """The hoisted partition of `arr` with this tile shape, padding and dim order (created once)."""
        if len(shape) != arr.ndim:
            raise Unsupported("a tile shape whose rank differs from the array's", node)
        if mutable and not arr.mutable:
            raise Unsupported("a store into an array that is also loaded", node)
        if arr.mutable and not mutable:
            if padding != "any":
                raise Unsupported("a load from an array the kernel also stores to", node)
            mutable = True  # num_tiles of an output: count on its PartitionMut (no second, shared borrow)
        key = (arr.name, shape, padding if not mutable else "mut", order)
        if key in self.prologue.views:
            return self.prologue.views[key]
        if var and var not in self.prologue.view_names:
            name = var  # a Python view variable keeps its name
        else:
            name = self.fresh(f"{arr.name}_tiles")
        self.prologue.view_names.add(name)
        ty = f"<{arr.dtype}, {{ [{', '.join(shape)}] }}>"
        if mutable:
            line = f"let mut {name}: PartitionMut{ty} = {arr.name}.partition_mut({shape_macro(shape)});"
        elif order is not None and order != tuple(range(len(shape))):
            if padding not in ("Zero", "any"):
                raise Unsupported("a permuted load with a padding other than zero", node)
            dims = ", ".join(str(o) for o in order)
            line = (f"let {name}: Partition{ty} = "
                    f"{arr.name}.partition_permuted({shape_macro(shape)}, const_array![{dims}]);")
        elif padding == "Zero":
            line = f"let {name}: Partition{ty} = {arr.name}.partition({shape_macro(shape)});"
        elif padding == "any" and not mutable:  # counting tiles (num_tiles): a view without padding, as cuTile
            line = (f"let {name}: Partition{ty} = unsafe {{ make_partition_view({arr.name}, {shape_macro(shape)}, "
                    f"padding::None, dim_map::Identity, {arr.name}.token()) }};")
        else:
            line = (f"let {name}: Partition{ty} = unsafe {{ make_partition_view({arr.name}, {shape_macro(shape)}, "
                    f"padding::{padding}, dim_map::Identity, {arr.name}.token()) }};")
        if arr.in_body:
            self.emit(line)
        else:
            self.prologue.lines.append(line)
        view = View(name, arr, shape, mutable)
        self.prologue.views[key] = view
        return view

    # ---- expressions -------------------------------------------------------------------------

    def expr(self, node: ast.expr, hint: str) -> Val:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float)):
                return Val("py", value=node.value)
            raise Unsupported(f"the constant {node.value!r}", node)
        if isinstance(node, ast.Name):
            return self.lookup(node.id, node)
        if isinstance(node, ast.Tuple):
            vals = [self.expr(e, "") for e in node.elts]
            if all(v.kind == "py" for v in vals):
                return Val("py", value=tuple(v.value for v in vals))
            return Val("tuple", value=vals, extra={"nodes": node.elts})
        if isinstance(node, ast.BinOp):
            return self.binop(node, hint)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node, hint)
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise Unsupported("a chained comparison", node)
            return self.compare(node.ops[0], self.expr(node.left, ""), self.expr(node.comparators[0], ""), node,
                                hint)
        if isinstance(node, ast.BoolOp):
            vals = [self.expr(v, "") for v in node.values]
            if all(v.kind == "py" for v in vals):
                res = all(v.value for v in vals) if isinstance(node.op, ast.And) else any(v.value for v in vals)
                return Val("py", value=res)
            raise Unsupported("`and`/`or` on run-time values", node, "use & and | on boolean tiles")
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Call):
            return self.call(node, hint)
        if isinstance(node, ast.IfExp):
            c = self.fold_condition(node.test)
            if c is None:
                raise Unsupported("a conditional expression on a run-time value", node)
            return self.expr(node.body if c else node.orelse, hint)
        raise Unsupported(f"a {type(node).__name__} expression", node)

    def attribute(self, node: ast.Attribute) -> Val:
        chain = _dotted(node)
        if chain and chain[0] == "ct" and len(chain) == 2 and chain[1] in RUST_DTYPE:
            return Val("dtype", value=RUST_DTYPE[chain[1]])
        if chain and chain[0] == "ct" and len(chain) == 3 and chain[1] in ("PaddingMode", "RoundingMode"):
            return Val("enum", value=(chain[1], chain[2]))
        base = self.expr(node.value, "")
        if base.kind == "array" and node.attr == "dtype":
            return Val("dtype", value=base.value.dtype)
        if base.kind == "tile" and node.attr == "dtype":
            return Val("dtype", value=base.dtype)
        if base.kind == "array" and node.attr == "shape":
            return Val("shape_of", value=base.value)
        raise Unsupported(f"the attribute `.{node.attr}`", node)

    def subscript(self, node: ast.Subscript) -> Val:
        base = self.expr(node.value, "")
        idx = self.expr(node.slice, "")
        if base.kind == "shape_of" and idx.kind == "py" and isinstance(idx.value, int):
            arr: Array = base.value
            axis = idx.value + arr.ndim if idx.value < 0 else idx.value
            return Val("scalar", f"{arr.name}.shape()[{axis}]", "i32")
        if base.kind == "py" and idx.kind == "py":
            return Val("py", value=base.value[idx.value])
        raise Unsupported("indexing (`x[...]`) other than array.shape[i]", node)

    # binary arithmetic, with NumPy-style broadcasting made explicit
    def binop(self, node: ast.BinOp, hint: str) -> Val:
        a, b = self.expr(node.left, ""), self.expr(node.right, "")
        op = type(node.op)
        if a.kind == "py" and b.kind == "py":
            return Val("py", value=_fold(op, a.value, b.value, node))
        if op in _BITS:
            return self.elementwise(a, b, node, lambda x, y, d: f"{paren(x)} {_BITS[op]} {paren(y)}",
                                    bool_ok=True)
        if op in (ast.FloorDiv, ast.Mod):
            return self.int_divmod(op, a, b, node, hint)
        if op not in _ARITH:
            raise Unsupported(f"the operator {_opname(op)}", node)
        sym = _ARITH[op]
        if a.kind in ("scalar", "py") and b.kind in ("scalar", "py"):
            dtype = self.scalar_dtype(a, b, op)
            x, y = self.as_scalar(a, dtype, node, hint), self.as_scalar(b, dtype, node, hint)
            return Val("scalar", f"{_operand(x)} {sym} {_operand(y)}", dtype)
        if op is ast.Div:
            for v in (a, b):
                if v.kind == "tile" and v.dtype in INTS:
                    raise Unsupported("true division of integer tiles", node)
        if op in (ast.Add, ast.Sub):
            fused = self.fuse_fma(op, a, b, node)
            if fused is not None:
                return fused
        res = self.elementwise(a, b, node, lambda x, y, d: f"{_operand(x)} {sym} {_operand(y)}")
        if op is ast.Mult and (res.dtype in _FMA_FLOATS):
            res.extra["mul"] = tuple(res.extra["operands"])
        return res

    def fuse_fma(self, op: type, a: Val, b: Val, node: ast.AST) -> Val | None:
        """cuTile Python contracts a float multiply whose only use is an add/sub into one fma (its
        rewrite_patterns pass, same rounding and ftz); write the same op so the IR, and the rounding, match."""
        tiles = [v for v in (a, b) if v.kind == "tile"]
        if not tiles:
            return None
        dtype = tiles[0].dtype
        if dtype not in _FMA_FLOATS or any(t.dtype != dtype for t in tiles):
            return None
        shape = _broadcast_shapes([t.shape for t in tiles], node)
        for mul, acc, mul_is_rhs in ((a, b, False), (b, a, True)):
            if mul.kind == "tile" and mul.extra.get("mul_named") and mul.shape == shape:
                self.fusable.add(mul.extra["binding"])  # first pass: this named product's read is an add/sub
                return None
            if mul.kind == "tile" and mul.extra.get("mul") and mul.shape == shape and mul.extra.get("uses_ok", True):
                x, y = mul.extra["mul"]
                acc_expr = self.to_tile(acc, dtype, shape, node)
                if op is ast.Sub and mul_is_rhs:
                    x = f"negf({x})"
                elif op is ast.Sub:
                    acc_expr = f"negf({acc_expr})"
                mul.extra["fused"] = True
                return Val("tile", f"fma({x}, {y}, {acc_expr}, rounding::NearestEven, ftz::Disabled)", dtype, shape)
        return None

    def int_divmod(self, op: type, a: Val, b: Val, node: ast.AST, hint: str) -> Val:
        if not (a.kind in ("scalar", "py") and b.kind in ("scalar", "py")):
            raise Unsupported(f"the operator {_opname(op)} on tiles", node)
        x, y = self.as_scalar(a, "i32", node, hint), self.as_scalar(b, "i32", node, hint)
        if (a.kind == "scalar" and a.dtype != "i32") or (b.kind == "scalar" and b.dtype != "i32"):
            raise Unsupported(f"the operator {_opname(op)} on floats", node)
        # Python's // and % round toward negative infinity (not Rust's truncation): spell that out on 0-d tiles,
        # as cuTile Python lowers them (divi rounding<negative_inf>; remi plus the sign fix-up).
        t0 = "Tile<i32, { [] }>"
        tx = self.hoist("", t0, f"scalar_to_tile({x})")
        ty = self.hoist("", t0, f"scalar_to_tile({y})")
        if op is ast.FloorDiv:
            t = self.hoist("", t0, f"divi({tx}, {ty}, rounding::NegativeInf)")
        else:
            r = self.hoist("", t0, f"remi({tx}, {ty})")
            zero = self.hoist("", t0, "scalar_to_tile(0i32)")
            fix = self.hoist("", "Tile<bool, { [] }>",
                             f"(lt_tile({r}, {zero}) ^ lt_tile({ty}, {zero})) & ne_tile({r}, {zero})")
            t = self.hoist("", t0, f"select({fix}, {r} + {ty}, {r})")
        return Val("scalar", self.hoist(hint, "i32", f"tile_to_scalar({t})"), "i32")

    def scalar_dtype(self, a: Val, b: Val, op: type | None = None) -> str:
        ds = [v.dtype for v in (a, b) if v.kind == "scalar"]
        if any(d in FLOATS for d in ds):
            return next(d for d in ds if d in FLOATS)
        if any(v.kind == "py" and isinstance(v.value, float) for v in (a, b)) or op is ast.Div:
            return "f32"
        return ds[0] if ds else "i32"

    def as_scalar(self, v: Val, dtype: str, node: ast.AST, hint: str) -> str:
        if v.kind == "py":
            return literal(v.value, dtype, node)
        if v.kind != "scalar":
            raise Unsupported("a tile where a scalar is needed", node)
        if v.dtype == dtype:
            return v.expr
        return self.hoist(f"{hint}_{dtype}" if hint else "", dtype, f"convert_scalar({v.expr})")

    def elementwise(self, a: Val, b: Val, node: ast.AST, render, bool_ok: bool = False,
                    dtype: str | None = None, extra: list[Val] | None = None) -> Val:
        """Broadcast a and b to one tile type (tiles decide the dtype; scalars/literals follow) and render."""
        vals = [a, b] + (extra or [])
        tiles = [v for v in vals if v.kind == "tile"]
        if not tiles:
            raise Unsupported("an elementwise op on scalars only", node)
        dtype = dtype or tiles[0].dtype
        for t in tiles:
            if t.dtype != dtype:
                raise Unsupported("mixing tile dtypes without astype", node, f"{t.dtype} vs {dtype}")
        if dtype == "bool" and not bool_ok:
            raise Unsupported("arithmetic on boolean tiles", node)
        shape = _broadcast_shapes([t.shape for t in tiles], node)
        exprs = [self.to_tile(v, dtype, shape, node) for v in (a, b)]
        return Val("tile", render(exprs[0], exprs[1], dtype), dtype, shape, extra={"operands": exprs})

    def to_tile(self, v: Val, dtype: str, shape: tuple[str, ...], node: ast.AST) -> str:
        if v.kind == "tile":
            if v.dtype != dtype:
                raise Unsupported("mixing tile dtypes without astype", node)
            if v.shape == shape:
                return v.expr
            padded = ("1",) * (len(shape) - len(v.shape)) + v.shape
            expr = v.expr
            if padded != v.shape:
                expr = f"{paren(expr)}.reshape({shape_macro(padded)})"
            if padded != shape:
                expr = f"{paren(expr)}.broadcast({shape_macro(shape)})"
            if self.invariant_loop(expr) is not None:
                return self.hoist("", tile_type(dtype, shape), expr)
            return expr
        if v.kind == "py":
            # a Python number meeting a tile: a 0-d constant broadcast to the tile, as cuTile writes it (the JIT
            # needs a constant's type spelled out, so it is bound to a typed let)
            c = self.hoist("", tile_type(dtype, ()), f"constant({literal(v.value, dtype, node)}, shape![])")
            if not shape:
                return c
            return self.to_tile(Val("tile", c, dtype, ()), dtype, shape, node)
        if v.kind == "scalar":
            s = v.expr
            if v.dtype != dtype:
                if dtype == OP_DTYPE or dtype == "bool":
                    raise Unsupported(f"a {v.dtype} scalar combined with a {dtype} tile", node)
                s = self.hoist("", dtype, f"convert_scalar({v.expr})")
            if not shape:
                return self.hoist("", tile_type(dtype, ()), f"scalar_to_tile({s})")
            expr = f"{paren(s)}.broadcast({shape_macro(shape)})"
            if self.invariant_loop(expr) is not None:
                return self.hoist("", tile_type(dtype, shape), expr)
            return expr
        raise Unsupported(f"a {v.kind} where a tile is needed", node)

    def unary(self, node: ast.UnaryOp, hint: str) -> Val:
        v = self.expr(node.operand, "")
        if isinstance(node.op, ast.Not):
            if v.kind == "py":
                return Val("py", value=not v.value)
            raise Unsupported("`not` on a run-time value", node)
        if isinstance(node.op, ast.USub):
            if v.kind == "py":
                return Val("py", value=-v.value)
            if v.kind == "scalar":  # the JIT negates tiles, not scalar expressions: a 0-d tile, as cuTile has
                t = self.hoist("", tile_type(v.dtype, ()), f"scalar_to_tile({v.expr})")
                if v.dtype in FLOATS:
                    return Val("tile", f"negf({t})", v.dtype, ())
                return Val("tile", f"negi({t}, overflow::None)", v.dtype, ())
            if v.kind == "tile" and v.is_float:
                return Val("tile", f"negf({v.expr})", v.dtype, v.shape)
            raise Unsupported("negation of an integer tile", node)
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Invert) and v.kind == "tile" and v.dtype == "bool":
            return Val("tile", f"noti({v.expr})", v.dtype, v.shape)
        raise Unsupported(f"the unary operator {type(node.op).__name__}", node)

    def compare(self, op: ast.cmpop, a: Val, b: Val, node: ast.AST, hint: str) -> Val:
        if a.kind == "py" and b.kind == "py":
            return Val("py", value=_fold_cmp(op, a.value, b.value))
        if type(op) not in _CMP:
            raise Unsupported(f"the comparison {type(op).__name__}", node)
        if a.kind != "tile" and b.kind != "tile":
            raise Unsupported("a comparison of run-time scalars", node)
        dtype = a.dtype if a.kind == "tile" else b.dtype
        fn = _CMP[type(op)]
        res = self.elementwise(a, b, node, lambda x, y, d: f"{fn}({x}, {y})", bool_ok=True, dtype=dtype)
        return Val("tile", res.expr, "bool", res.shape)

    # ---- calls -------------------------------------------------------------------------------

    def call(self, node: ast.Call, hint: str) -> Val:
        name = _ct_name(node.func)
        if name is None:
            if isinstance(node.func, ast.Name) and node.func.id == "float" and len(node.args) == 1:
                a0 = node.args[0]
                if isinstance(a0, ast.Constant) and isinstance(a0.value, str):
                    try:
                        return Val("py", value=float(a0.value))
                    except ValueError:
                        raise Unsupported(f"float({a0.value!r})", node) from None
                arg = self.expr(a0, "")
                if arg.kind == "py":
                    return Val("py", value=float(arg.value))
            if isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and not node.keywords:
                vals = [self.expr(a, "") for a in node.args]
                if all(v.kind == "py" for v in vals):
                    return Val("py", value=(min if node.func.id == "min" else max)(v.value for v in vals))
            if isinstance(node.func, ast.Attribute):
                return self.method(node, hint)
            raise Unsupported(_call_label(node), node)
        handler = getattr(self, f"ct_{name}", None)
        if handler is not None:
            return handler(node, hint)
        if name in _UNARY:
            args = _bind(node, ["x"], set())
            x = self.expr(args["x"], "")
            if x.kind != "tile" or not x.is_float:
                raise Unsupported(f"ct.{name} on a {x.kind}", node)
            return Val("tile", f"{_UNARY[name]}({x.expr})", x.dtype, x.shape)
        if name in _REDUCE:
            return self.reduce(name, node, hint)
        raise Unsupported(f"ct.{name}", node)

    def method(self, node: ast.Call, hint: str) -> Val:
        func = node.func
        assert isinstance(func, ast.Attribute)
        m = func.attr
        # the value an astype converts gets its own name: `t_raw` for `t = ....astype(...)`
        recv = self.expr(func.value, f"{hint}_raw" if hint and m == "astype" else "")
        if recv.kind == "tile" and m == "astype":
            args = _bind(node, ["dtype"], {"rounding_mode"})
            return self.astype(recv, args, node, hint)
        if recv.kind == "tile" and m == "reshape":
            args = _bind(node, ["shape"], set())
            return self.reshape(recv, args["shape"], node)
        if recv.kind == "tile" and m == "transpose" and not node.args and not node.keywords:
            return self.transpose(recv, node)
        if recv.kind == "array" and m == "slice":
            return self.slice(recv.value, node, hint)
        if recv.kind == "array" and m == "tiled_view":
            args = _bind(node, ["tile_shape"], {"padding_mode"})
            shape = self.dims(args["tile_shape"])
            padding = self.padding(args.get("padding_mode"), node)
            if len(shape) != recv.value.ndim:
                raise Unsupported("a tile shape whose rank differs from the array's", node)
            # made on first use: a read view (Partition) for loads, a PartitionMut for stores
            return Val("view", value=View("", recv.value, shape), extra={"padding": padding, "name": hint})
        if recv.kind == "view" and not recv.value.var:
            lazy: View = recv.value
            mutable = m == "store"
            recv = Val("view", value=self.view_for(lazy.array, lazy.shape, recv.extra["padding"], None,
                                                   mutable=mutable, node=node, var=recv.extra.get("name") or None))
            if mutable:
                args = _bind(node, ["index", "tile"], set())
                self.view_store(recv.value, args["index"], args["tile"], node)
                return Val("none")
        if recv.kind == "view" and m == "load":
            args = _bind(node, ["index"], set())
            view: View = recv.value
            index = self.index_list(args["index"], len(view.shape))
            return self.tile(view.array.dtype, view.shape, f"{view.var}.load([{', '.join(index)}])", hint)
        if recv.kind == "view" and m == "num_tiles":
            args = _bind(node, ["axis"], set())
            axis = self.const_int(args["axis"])
            return Val("scalar", f"num_tiles(&{recv.value.var}, {axis}i32)", "i32", extra={"tile_count": True})
        raise Unsupported(f"the method `.{m}()` on {'an' if recv.kind[0] in 'aeiou' else 'a'} {recv.kind}", node)

    def astype(self, x: Val, args: dict, node: ast.AST, hint: str) -> Val:
        if "rounding_mode" in args:
            raise Unsupported("astype(..., rounding_mode=)", node)
        d = self.expr(args["dtype"], "")
        if d.kind != "dtype":
            raise Unsupported("astype to something that is not a dtype", node)
        if x.kind != "tile":
            raise Unsupported("astype of a scalar", node)
        if d.value == x.dtype:
            return x
        return self.tile(d.value, x.shape, f"convert_tile({x.expr})", hint)

    def reshape(self, x: Val, shape_node: ast.expr, node: ast.AST) -> Val:
        shape = self.dims(shape_node)
        if x.shape == shape:
            return x
        return Val("tile", f"{paren(x.expr)}.reshape({shape_macro(shape)})", x.dtype, shape)

    def transpose(self, x: Val, node: ast.AST) -> Val:
        if len(x.shape) != 2:
            raise Unsupported("transpose of a tile that is not 2-D", node)
        return Val("tile", f"{paren(x.expr)}.transpose()", x.dtype, (x.shape[1], x.shape[0]))

    def dims(self, node: ast.expr) -> tuple[str, ...]:
        items = node.elts if isinstance(node, ast.Tuple) else [node]
        out = []
        for item in items:
            v = self.expr(item, "")
            if v.kind == "py" and isinstance(v.value, int) and not isinstance(v.value, bool) and v.value > 0:
                out.append(str(v.value))
            elif v.kind == "scalar" and v.const_name:
                out.append(v.const_name)
            else:
                raise Unsupported("a tile shape that is not made of constants", item)
        return tuple(out)

    def const_int(self, node: ast.expr) -> int:
        v = self.expr(node, "")
        if v.kind == "py" and isinstance(v.value, int) and not isinstance(v.value, bool):
            return v.value
        raise Unsupported("an axis that is not a constant integer", node)

    def padding(self, node: ast.expr | None, call: ast.AST) -> str:
        if node is None:
            return "any"
        v = self.expr(node, "")
        if v.kind == "enum" and v.value[0] == "PaddingMode" and v.value[1] in _PADDING:
            return _PADDING[v.value[1]]
        raise Unsupported("a padding_mode that is not a ct.PaddingMode member", node)

    def rounding(self, node: ast.expr | None) -> str | None:
        if node is None:
            return None
        v = self.expr(node, "")
        if v.kind == "py" and v.value is None:
            return None
        if v.kind == "enum" and v.value[0] == "RoundingMode" and v.value[1] in _ROUNDING:
            return _ROUNDING[v.value[1]]
        raise Unsupported("a rounding_mode that is not a ct.RoundingMode member", node)

    def flag(self, node: ast.expr | None) -> bool:
        if node is None:
            return False
        v = self.expr(node, "")
        if v.kind == "py" and isinstance(v.value, bool):
            return v.value
        raise Unsupported("a mode flag that is not a constant bool", node)

    # ct.* functions ------------------------------------------------------------------------------

    def ct_bid(self, node: ast.Call, hint: str) -> Val:
        axis = self.const_int(_bind(node, ["axis"], set())["axis"])
        return Val("scalar", f"program_id({axis})", "i32", extra={"index_ok": True})

    def ct_num_blocks(self, node: ast.Call, hint: str) -> Val:
        axis = self.const_int(_bind(node, ["axis"], set())["axis"])
        return Val("scalar", f"num_programs({axis})", "i32")

    def ct_num_tiles(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["array", "axis", "shape"], {"order"})
        if "order" in args:
            raise Unsupported("ct.num_tiles(..., order=)", node)
        arr = self.expr(args["array"], "")
        if arr.kind != "array":
            raise Unsupported("ct.num_tiles of something that is not an array parameter", node)
        shape = self.dims(args["shape"])
        axis = self.const_int(args["axis"])
        view = self.view_for(arr.value, shape, "any", None, mutable=False, node=node)
        return Val("scalar", f"num_tiles(&{view.var}, {axis}i32)", "i32", extra={"tile_count": True})

    def ct_cdiv(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["x", "y"], set())
        a, b = self.expr(args["x"], ""), self.expr(args["y"], "")
        if a.kind == "py" and b.kind == "py":
            return Val("py", value=-(-a.value // b.value))
        x, y = self.as_scalar(a, "i32", node, hint), self.as_scalar(b, "i32", node, hint)
        if a.kind == "tile" or b.kind == "tile":
            raise Unsupported("ct.cdiv on tiles", node)
        return Val("scalar", f"ceil_div({x}, {y})", "i32")

    def _minmax(self, name: str, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["x", "y"], {"flush_to_zero", "propagate_nan"})
        a, b = self.expr(args["x"], ""), self.expr(args["y"], "")
        if a.kind == "py" and b.kind == "py":
            return Val("py", value=(min if name == "minimum" else max)(a.value, b.value))
        if a.kind in ("scalar", "py") and b.kind in ("scalar", "py"):
            dtype = self.scalar_dtype(a, b)
            if dtype != "i32":
                raise Unsupported(f"ct.{name} on float scalars", node)
            x, y = self.as_scalar(a, dtype, node, hint), self.as_scalar(b, dtype, node, hint)
            return Val("scalar", f"{'min' if name == 'minimum' else 'max'}({x}, {y})", dtype)
        ftz = self.flag(args.get("flush_to_zero"))
        nan = self.flag(args.get("propagate_nan"))
        short = "min" if name == "minimum" else "max"

        def render(x: str, y: str, d: str) -> str:
            if d in FLOATS or d == OP_DTYPE:
                return (f"{short}f({x}, {y}, nan::{'Enabled' if nan else 'Disabled'}, "
                        f"ftz::{'Enabled' if ftz else 'Disabled'})")
            if ftz or nan:
                raise Unsupported(f"ct.{name} flags on integer tiles", node)
            return f"{short}i({x}, {y})"
        return self.elementwise(a, b, node, render)

    def ct_minimum(self, node: ast.Call, hint: str) -> Val:
        return self._minmax("minimum", node, hint)

    def ct_maximum(self, node: ast.Call, hint: str) -> Val:
        return self._minmax("maximum", node, hint)

    def _arith(self, op: str, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["x", "y"], {"rounding_mode", "flush_to_zero"})
        rounding = self.rounding(args.get("rounding_mode"))
        ftz = self.flag(args.get("flush_to_zero"))
        fake = ast.BinOp(left=args["x"], op={"add": ast.Add, "sub": ast.Sub, "mul": ast.Mult,
                                             "truediv": ast.Div}[op](), right=args["y"])
        ast.copy_location(fake, node)
        if rounding is None and not ftz:
            return self.binop(fake, hint)
        a, b = self.expr(args["x"], ""), self.expr(args["y"], "")
        fn = {"add": "addf", "sub": "subf", "mul": "mulf", "truediv": "divf"}[op]
        r = rounding or "NearestEven"

        def render(x: str, y: str, d: str) -> str:
            if d not in FLOATS and d != OP_DTYPE:
                raise Unsupported(f"ct.{op} with a rounding mode on integer tiles", node)
            return f"{fn}({x}, {y}, rounding::{r}, ftz::{'Enabled' if ftz else 'Disabled'})"
        return self.elementwise(a, b, node, render)

    def ct_add(self, node, hint):
        return self._arith("add", node, hint)

    def ct_sub(self, node, hint):
        return self._arith("sub", node, hint)

    def ct_mul(self, node, hint):
        return self._arith("mul", node, hint)

    def ct_truediv(self, node, hint):
        return self._arith("truediv", node, hint)

    def ct_exp2(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["x"], {"flush_to_zero"})
        x = self.expr(args["x"], "")
        if x.kind != "tile" or not x.is_float:
            raise Unsupported("ct.exp2 of a non-float tile", node)
        ftz = "Enabled" if self.flag(args.get("flush_to_zero")) else "Disabled"
        return Val("tile", f"exp2({x.expr}, ftz::{ftz})", x.dtype, x.shape)

    def ct_rsqrt(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["x"], {"flush_to_zero"})
        x = self.expr(args["x"], "")
        if x.kind != "tile" or not x.is_float:
            raise Unsupported("ct.rsqrt of a non-float tile", node)
        ftz = "Enabled" if self.flag(args.get("flush_to_zero")) else "Disabled"
        return Val("tile", f"rsqrt({x.expr}, ftz::{ftz})", x.dtype, x.shape)

    def ct_where(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["cond", "x", "y"], set())
        c, a, b = (self.expr(args[k], "") for k in ("cond", "x", "y"))
        if c.kind != "tile" or c.dtype != "bool":
            raise Unsupported("ct.where with a condition that is not a boolean tile", node)
        tiles = [v for v in (a, b) if v.kind == "tile"]
        if not tiles:
            raise Unsupported("ct.where choosing between two scalars", node)
        dtype = tiles[0].dtype
        shape = _broadcast_shapes([c.shape] + [t.shape for t in tiles], node)
        cx = self.to_tile(c, "bool", shape, node)
        ax, bx = self.to_tile(a, dtype, shape, node), self.to_tile(b, dtype, shape, node)
        return Val("tile", f"select({cx}, {ax}, {bx})", dtype, shape)

    def ct_astype(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["x", "dtype"], {"rounding_mode"})
        return self.astype(self.expr(args["x"], ""), {k: v for k, v in args.items() if k != "x"}, node, hint)

    def ct_reshape(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["x", "shape"], set())
        x = self.expr(args["x"], "")
        if x.kind != "tile":
            raise Unsupported("ct.reshape of a scalar", node)
        return self.reshape(x, args["shape"], node)

    def ct_transpose(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["x", "axis0", "axis1"], set())
        if "axis0" in args or "axis1" in args:
            raise Unsupported("ct.transpose with explicit axes", node)
        x = self.expr(args["x"], "")
        if x.kind != "tile":
            raise Unsupported("ct.transpose of a scalar", node)
        return self.transpose(x, node)

    def ct_expand_dims(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["x", "axis"], set())
        x = self.expr(args["x"], "")
        if x.kind != "tile":
            raise Unsupported("ct.expand_dims of a scalar", node)
        axis = self.const_int(args["axis"])
        rank = len(x.shape) + 1
        axis = axis + rank if axis < 0 else axis
        shape = x.shape[:axis] + ("1",) + x.shape[axis:]
        return Val("tile", f"{paren(x.expr)}.reshape({shape_macro(shape)})", x.dtype, shape)

    def _fill(self, node: ast.Call, shape_node: ast.expr, value: Any, dtype_node: ast.expr) -> Val:
        shape = self.dims(shape_node)
        d = self.expr(dtype_node, "")
        if d.kind != "dtype":
            raise Unsupported("a dtype argument that is not a dtype", dtype_node)
        return self.tile(d.value, shape, f"constant({literal(value, d.value, node)}, {shape_macro(shape)})")

    def ct_full(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["shape", "fill_value", "dtype"], set())
        v = self.expr(args["fill_value"], "")
        if v.kind != "py":
            raise Unsupported("ct.full with a run-time fill value", node)
        return self._fill(node, args["shape"], v.value, args["dtype"])

    def ct_zeros(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["shape", "dtype"], set())
        return self._fill(node, args["shape"], 0, args["dtype"])

    def ct_ones(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["shape", "dtype"], set())
        return self._fill(node, args["shape"], 1, args["dtype"])

    def ct_arange(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["size"], {"dtype", "start", "step"})
        if "start" in args or "step" in args:
            raise Unsupported("ct.arange with start/step", node)
        size = self.dims(args["size"])
        d = self.expr(args["dtype"], "") if "dtype" in args else Val("dtype", value="i32")
        if d.kind != "dtype" or d.value not in INTS:
            raise Unsupported("ct.arange of a non-integer dtype", node)
        return self.tile(d.value, size, f"iota({shape_macro(size)})", hint)

    def ct_mma(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["x", "y", "acc"], {"use_fast_acc"})
        if self.flag(args.get("use_fast_acc")):
            raise Unsupported("ct.mma(..., use_fast_acc=True)", node)
        x, y, acc = (self.expr(args[k], "") for k in ("x", "y", "acc"))
        for v, k in ((x, "x"), (y, "y"), (acc, "acc")):
            if v.kind != "tile" or len(v.shape) != 2:
                raise Unsupported("ct.mma of operands that are not 2-D tiles", args[k])
        if x.dtype != y.dtype:
            raise Unsupported("ct.mma of operands of two dtypes", node)
        if x.shape[1] != y.shape[0] or acc.shape != (x.shape[0], y.shape[1]):
            raise Unsupported("ct.mma with operand shapes that do not chain", node)
        return Val("tile", f"mma({x.expr}, {y.expr}, {acc.expr})", acc.dtype, acc.shape)

    def reduce(self, name: str, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["x", "axis"], {"keepdims", "rounding_mode", "flush_to_zero", "propagate_nan"})
        for k in ("rounding_mode", "flush_to_zero", "propagate_nan"):
            if k in args:
                v = self.expr(args[k], "")
                if not (v.kind == "py" and not v.value):
                    raise Unsupported(f"ct.{name}(..., {k}=)", node)
        x = self.expr(args["x"], "")
        if x.kind != "tile":
            raise Unsupported(f"ct.{name} of a scalar", node)
        if "axis" not in args:
            raise Unsupported(f"ct.{name} over all axes", node)
        axis = self.const_int(args["axis"])
        axis = axis + len(x.shape) if axis < 0 else axis
        keep = self.flag(args.get("keepdims"))
        reduced = x.shape[:axis] + x.shape[axis + 1:]
        r = self.tile(x.dtype, reduced, f"{_REDUCE[name]}({x.expr}, {axis}i32)", hint)
        if not keep:
            return r
        shape = x.shape[:axis] + ("1",) + x.shape[axis + 1:]
        return Val("tile", f"{r.expr}.reshape({shape_macro(shape)})", x.dtype, shape)

    def ct_gather(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["array", "indices"], {"mask", "padding_value", "check_bounds", "latency"})
        return self.pointer_access(args, node, hint, store=False)

    def pointer_access(self, args: dict[str, ast.expr], node: ast.Call, hint: str, store: bool) -> Val:
        """ct.gather / ct.scatter as cuTile Python lowers them: i64 offsets (index x stride, summed), unsigned
        bounds checks per index (unless check_bounds=False) and-ed with the mask, a tile of pointers, then one
        load_ptr_tko (always with a padding value) or store_ptr_tko."""
        what = "ct.scatter" if store else "ct.gather"
        if "latency" in args:
            raise Unsupported(f"{what}(..., latency=)", node)
        arr_v = self.expr(args["array"], "")
        if arr_v.kind != "array":
            raise Unsupported(f"{what} on something that is not a kernel array parameter", args["array"])
        arr: Array = arr_v.value
        items = args["indices"].elts if isinstance(args["indices"], ast.Tuple) else [args["indices"]]
        if len(items) != arr.ndim:
            raise Unsupported(f"{what} with {len(items)} index tile(s) for a {arr.ndim}-D array", node)
        idx = [self.expr(i, "") for i in items]
        for v, n in zip(idx, items):
            ok = (v.kind == "py" and isinstance(v.value, int) and not isinstance(v.value, bool)) or \
                 (v.kind in ("scalar", "tile") and v.dtype == "i32")
            if not ok:
                raise Unsupported(f"a {what} index that is not int32", n)
        mask = self.expr(args["mask"], "") if "mask" in args else None
        if mask is not None and (mask.kind != "tile" or mask.dtype != "bool"):
            raise Unsupported(f"a {what} mask that is not a boolean tile", args["mask"])
        value = self.expr(args["value"], "") if store else None
        check = self.flag(args.get("check_bounds")) if "check_bounds" in args else True
        shapes = [v.shape for v in idx if v.kind == "tile"] + ([mask.shape] if mask is not None else [])
        if value is not None and value.kind == "tile":
            shapes.append(value.shape)
        shape = _broadcast_shapes(shapes or [()], node)
        p = self.fresh(f"{arr.name}_{'sc' if store else 'g'}")
        u0 = "Tile<u64, { [] }>"
        terms: list[str] = []
        bounds: list[str] = []
        strides = self.stride_constants.get(arr.name, [None] * arr.ndim)
        for k, v in enumerate(idx):
            if v.kind == "tile":
                src, src_shape = v.expr, v.shape
            else:
                lit = f"{v.value}i32" if v.kind == "py" else v.expr
                src, src_shape = self.hoist("", "Tile<i32, { [] }>", f"scalar_to_tile({lit})"), ()
            e = self.hoist(f"{p}_i{k}", f"Tile<u64, {{ [{', '.join(src_shape)}] }}>", f"exti({src})")
            eb = self.to_tile(Val("tile", e, "u64", src_shape), "u64", shape, node)
            if check:
                n32 = self.hoist("", "Tile<i32, { [] }>", f"scalar_to_tile({arr.name}.shape()[{k}])")
                n64 = self.hoist(f"{p}_n{k}", u0, f"exti({n32})")
                bounds.append(self.hoist("", tile_type("bool", shape),
                                         f"lt_tile({eb}, {self.to_tile(Val('tile', n64, 'u64', ()), 'u64', shape, node)})"))
            if strides[k] == 1:
                st = self.hoist("", tile_type("u64", shape), f"constant(1u64, {shape_macro(shape)})")
            else:
                acc = self.strides_of(arr)
                s32 = self.hoist("", "Tile<i32, { [] }>", f"scalar_to_tile({acc}.dims[{k}])")
                s64 = self.hoist(f"{p}_s{k}", u0, f"exti({s32})")
                st = self.to_tile(Val("tile", s64, "u64", ()), "u64", shape, node)
            terms.append(self.hoist("", tile_type("u64", shape), f"{paren(eb)} * {paren(st)}"))
        offset = terms[0]
        for t in terms[1:]:
            offset = self.hoist("", tile_type("u64", shape), f"{offset} + {t}")
        masks = bounds[:1]
        for b in bounds[1:]:
            masks = [self.hoist("", tile_type("bool", shape), f"{masks[0]} & {b}")]
        if mask is not None:
            m = self.to_tile(mask, "bool", shape, node)
            masks = [self.hoist("", tile_type("bool", shape), f"{masks[0]} & {paren(m)}") if masks else m]
        mask_arg = f"Some({masks[0]})" if masks else "None"
        ptr_t = f"PointerTile<*mut {arr.dtype}, {{ [{', '.join(shape)}] }}>"
        base = self.hoist(f"{p}_base", f"PointerTile<*mut {arr.dtype}, {{ [] }}>", f"get_tensor_base({arr.name})")
        if shape:
            ones = ("1",) * len(shape)
            base = self.hoist("", f"PointerTile<*mut {arr.dtype}, {{ [{', '.join(ones)}] }}>",
                              f"{base}.reshape({shape_macro(ones)})")
            base = self.hoist("", ptr_t, f"{base}.broadcast({shape_macro(shape)})")
        ptr = self.hoist(f"{p}_ptr", ptr_t, f"addptr_tile({base}, {offset})")
        if not shape and arr.dtype in _ELEM_BYTES:  # a single element: cuTile assumes it is naturally aligned
            ptr = self.hoist(f"{p}_ptr", ptr_t, f"unsafe {{ assume_div_by::<_, {_ELEM_BYTES[arr.dtype]}>({ptr}) }}")
        tok = self.hoist(f"{arr.name}_token", "Token", f"get_tensor_token({arr.name})")
        if store:
            val = self.to_tile(value, arr.dtype, shape, node)
            self.emit(f"unsafe {{ store_ptr_tko({ptr}, {val}, ordering::Weak, None::<scope::Device>, {mask_arg}, "
                      f"Some({tok}), Latency::<0>) }};")
            return Val("none")
        pad_v = self.expr(args["padding_value"], "") if "padding_value" in args else Val("py", value=0)
        if pad_v.kind != "py":
            raise Unsupported("a gather padding_value that is not a constant", args.get("padding_value", node))
        if arr.dtype == OP_DTYPE:  # a padding scalar of the generic E cannot be spelled: specialise per dtype
            raise NeedsDtype("a gather padding value of the op dtype", node)
        pad = literal(pad_v.value, arr.dtype, node)
        if "::" in pad:  # a named constant (E::ZERO, f16::NEG_INFINITY) is only accepted by constant(): a 0-d tile
            t = self.hoist(f"{p}_pad", tile_type(arr.dtype, ()), f"constant({pad}, shape![])")
            pad = self.hoist(f"{p}_pad", arr.dtype, f"tile_to_scalar({t})")
        out = self.fresh(hint or f"{p}_v")
        self.define_in_loops(out)
        self.emit(f"let ({out}, _): ({tile_type(arr.dtype, shape)}, Token) = unsafe {{ load_ptr_tko({ptr}, "
                  f"ordering::Weak, None::<scope::Device>, {mask_arg}, Some({pad}), Some({tok}), "
                  f"Latency::<0>) }};")
        return Val("tile", out, arr.dtype, shape)

    def slice(self, arr: Array, node: ast.Call, hint: str) -> Val:
        """Array.slice(axis, start, stop) as cuTile lowers it: the base offset by start * stride[axis], the shape
        with stop - start on that axis, the same strides, one new tensor view."""
        args = _bind(node, ["axis", "start", "stop"], set())
        if arr.mutable:
            raise Unsupported("a slice of an array the kernel stores to", node)
        axis = self.const_int(args["axis"])
        axis = axis + arr.ndim if axis < 0 else axis
        start_v, stop_v = self.expr(args["start"], ""), self.expr(args["stop"], "")
        start = self.index_scalar(start_v, args["start"], bound=True)
        stop = self.index_scalar(stop_v, args["stop"], bound=True)
        if hint and hint not in self.prologue.view_names:
            name = hint  # the Python variable keeps its name
        else:
            name = self.fresh(f"{arr.name}_slice")
        self.prologue.view_names.add(name)
        strides = self.strides_of(arr)
        consts = self.stride_constants.get(arr.name, [None] * arr.ndim)
        self.stride_constants[name] = consts
        dyn = ", ".join(["-1"] * arr.ndim)
        dims = [f"{arr.name}.shape()[{d}]" if d != axis else f"{_operand(stop)} - {_operand(start)}"
                for d in range(arr.ndim)]
        shape = self.hoist(f"{name}_shape", f"Shape<{{ [{dyn}] }}>",
                           f"Shape::<{{ [{dyn}] }}> {{ dims: &[{', '.join(dims)}] }}")
        step = "1i32" if consts[axis] == 1 else f"{strides}.dims[{axis}]"
        off = self.hoist("", "Tile<i32, { [] }>", f"scalar_to_tile({_operand(start)} * {step})")
        off64 = self.hoist(f"{name}_offset", "Tile<i64, { [] }>", f"exti({off})")
        base = self.hoist(f"{arr.name}_base", f"PointerTile<*mut {arr.dtype}, {{ [] }}>", f"get_tensor_base({arr.name})")
        moved = f"addptr_tile({base}, {off64})"
        if start_v.kind == "py" and start_v.value == 0:  # an unmoved base keeps the array's alignment
            moved = f"unsafe {{ assume_div_by::<_, 16>({moved}) }}"
        new_base = self.hoist(f"{name}_base", f"PointerTile<*mut {arr.dtype}, {{ [] }}>", moved)
        self.emit(f"let {name}: Tensor<{arr.dtype}, {{ [{dyn}] }}> = "
                  f"unsafe {{ make_tensor_view({new_base}, {shape}, {strides}, {arr.name}.token()) }};")
        return Val("array", name, value=Array(name, arr.ndim, arr.dtype, mutable=False, in_body=True))

    def strides_of(self, arr: Array) -> str:
        """The array's strides (cutile has no accessor: the module gets the `tensor_strides_N` compiler op)."""
        name = f"{arr.name}_strides"
        if name not in self.prologue.view_names:
            self.prologue.view_names.add(name)
            consts = self.stride_constants.get(arr.name, [None] * arr.ndim)
            dims = ", ".join(str(c) if c is not None else "-1" for c in consts)
            self.prologue.lines.append(f"let {name}: Array<{{ [{dims}] }}> = tensor_strides_{arr.ndim}({arr.name});")
            self.helpers.add(arr.ndim)
        return name

    def ct_load(self, node: ast.Call, hint: str) -> Val:
        args = _bind(node, ["array", "index", "shape"], {"order", "padding_mode", "latency", "allow_tma"})
        for k in ("latency", "allow_tma"):
            if k in args:
                raise Unsupported(f"ct.load(..., {k}=)", node)
        arr = self.expr(args["array"], "")
        if arr.kind != "array":
            raise Unsupported("ct.load from something that is not a kernel array parameter", args["array"])
        shape = self.dims(args["shape"])
        padding = self.padding(args.get("padding_mode"), node)
        order = None
        if "order" in args:
            v = self.expr(args["order"], "")
            if v.kind != "py" or not isinstance(v.value, tuple):
                raise Unsupported("a load order that is not a constant tuple", args["order"])
            order = tuple(int(o) for o in v.value)
        view = self.view_for(arr.value, shape, padding, order, mutable=False, node=node)
        index = self.index_list(args["index"], len(shape))
        return self.tile(arr.value.dtype, shape, f"{view.var}.load([{', '.join(index)}])", hint)


# ---- helpers ------------------------------------------------------------------------------------

RUST_KEYWORDS = {"as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for", "if",
                 "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self",
                 "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "async",
                 "await", "dyn", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "typeof",
                 "unsized", "virtual", "yield", "try", "shape", "constant", "tile"}


def rust_name(name: str) -> str:
    """A Python identifier as a Rust one (keywords and names cutile's prelude uses get a trailing `_`)."""
    return f"{name}_" if name in RUST_KEYWORDS else name


def _ct_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "ct":
        return func.attr
    return None


def _dotted(node: ast.expr) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _call_label(call: ast.Call) -> str:
    d = _dotted(call.func)
    return f"{'.'.join(d)}(...)" if d else "a call"


def _bind(call: ast.Call, positional: list[str], optional: set[str]) -> dict[str, ast.expr]:
    """Map a call's arguments onto names (positional first, then keywords); unknown keywords are holes."""
    out: dict[str, ast.expr] = {}
    for name, arg in zip(positional, call.args):
        if isinstance(arg, ast.Starred):
            raise Unsupported("*args in a call", call)
        out[name] = arg
    if len(call.args) > len(positional):
        raise Unsupported(f"{_call_label(call)} with {len(call.args)} positional arguments", call)
    for kw in call.keywords:
        if kw.arg is None:
            raise Unsupported("**kwargs in a call", call)
        if kw.arg not in positional and kw.arg not in optional:
            raise Unsupported(f"{_call_label(call)[:-5]}(..., {kw.arg}=)", call)
        out[kw.arg] = kw.value
    return out


def _names_assigned_in_loops(stmts: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.For, ast.While)):
                for inner in node.body:
                    for n in ast.walk(inner):
                        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                            names.add(n.id)
    return names


def _broadcast_shapes(shapes: list[tuple[str, ...]], node: ast.AST) -> tuple[str, ...]:
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0} - {"1"}
        if len(dims) > 1:
            raise Unsupported("broadcasting tiles of incompatible shapes", node, " vs ".join(map(str, shapes)))
        out.append(dims.pop() if dims else "1")
    return tuple(out)


def _fold(op: type, a: Any, b: Any, node: ast.AST) -> Any:
    try:
        return {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b, ast.Div: lambda: a / b,
                ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b, ast.Pow: lambda: a ** b,
                ast.BitAnd: lambda: a & b, ast.BitOr: lambda: a | b, ast.BitXor: lambda: a ^ b,
                ast.LShift: lambda: a << b, ast.RShift: lambda: a >> b}[op]()
    except (KeyError, ArithmeticError, TypeError):
        raise Unsupported(f"folding {_opname(op)} of constants", node) from None


def _fold_cmp(op: ast.cmpop, a: Any, b: Any) -> bool:
    return {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b, ast.Eq: a == b,
            ast.NotEq: a != b, ast.Is: a is b, ast.IsNot: a is not b}[type(op)]


def _opname(op: type) -> str:
    return {ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>",
            ast.MatMult: "@"}.get(op, op.__name__)


def _operand(expr: str) -> str:
    """Parenthesise a sum inside a product etc.: keep it simple and always wrap compound operands."""
    return paren(expr)


_EFFECTFUL = (".load(", "load_ptr_tko", "store", "token", "make_", "get_tensor", "num_tiles", "partition")


def _assigned_names(stmts: list[ast.stmt]) -> set[str]:
    return {n.id for st in stmts for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _idents(text: str) -> set[str]:
    return set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", text))


def _range_end(expr: str) -> str:
    return expr if paren(expr) == expr else f"({expr})"


def _describe(v: Val) -> str:
    return tile_type(v.dtype, v.shape) if v.kind == "tile" else f"{v.kind} {v.dtype}"


__all__ = ["BodyTranslator", "Unsupported", "Lost", "math"]
