"""Calls: ct.* functions and tile methods (math, reductions, mma, shapes, conversions, modes)."""

from __future__ import annotations

import ast
import os
from typing import Any

from tileport.draft.values import (FLOATS, INTS, OP_DTYPE, NeedsDtype, Unsupported, Val, View, constant_tile,
                                          gap, literal, paren, shape_macro)
from tileport.draft.syntax import (ROUNDING, PADDING, UNARY_MATH, REDUCTIONS, ct_name, call_label, bind_args,
                                          broadcast_shapes, canonical_ct, names_assigned_in_loops)
from tileport.draft.coverage import FUNCTIONS
from tileport.analysis.static import FunctionRef, fold_constant, module_values

_HELPERS: dict[tuple[str, str, int], tuple[ast.FunctionDef | None, dict[str, Any]]] = {}


def helper_def(ref: FunctionRef) -> tuple[ast.FunctionDef | None, dict[str, Any]]:
    """The helper's definition and its module's values (cached per file and name)."""
    try:
        stamp = os.stat(ref.path).st_mtime_ns
    except OSError:
        stamp = 0
    key = (ref.path, ref.name, stamp)
    if key not in _HELPERS:
        fn = None
        env = module_values(ref.path)
        try:
            tree = ast.parse(open(ref.path, encoding="utf-8").read(), filename=ref.path)
            fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == ref.name), None)
            fn = canonical_ct(fn, tree, env) if fn is not None else None
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
            pass
        if len(_HELPERS) > 512:
            _HELPERS.clear()
        _HELPERS[key] = (fn, env)
    return _HELPERS[key]


def _sum_dims(a: str, b: str) -> str | None:
    """Two tile extents added (a literal when both are); None when a type could not spell the sum."""
    if a.isdigit() and b.isdigit():
        return str(int(a) + int(b))
    return None


class CallOps:
    """Mixin of BodyTranslator: ct.* calls and methods on tiles, arrays and views."""

    def call(self, node: ast.Call, hint: str) -> Val:
        name = ct_name(node.func)
        if name is None and isinstance(node.func, ast.Name) and node.func.id in ("min", "max") \
                and not node.keywords and len(node.args) == 2 and self._shadowed(node.func.id) is None:
            vals = [self.expr(a, "") for a in node.args]
            if not all(v.kind == "py" for v in vals):  # Python's min/max of run-time values: ct.minimum/maximum
                return self._minmax("minimum" if node.func.id == "min" else "maximum", node, hint, vals)
        if name is None and isinstance(node.func, ast.Name) and node.func.id == "abs" and len(node.args) == 1:
            return self._abs(node, self.expr(node.args[0], ""))
        if name is None and isinstance(node.func, ast.Name) and node.func.id not in ("float", "min", "max"):
            target = self._shadowed(node.func.id)
            if target is not None and target.kind == "function":
                return self.inline(target.value, node, hint)
        if name is None and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            base = self._shadowed(node.func.value.id)
            if base is not None and base.kind == "module":  # math.log2(2.0) and such: a constant, folded
                args = [self.expr(a, "") for a in node.args]
                if all(a.kind == "py" for a in args) and not node.keywords:
                    folded = fold_constant(ast.Call(func=node.func, args=[ast.Constant(a.value) for a in args],
                                                    keywords=[]), {node.func.value.id: base.value})
                    if isinstance(folded, (bool, int, float)):
                        return Val("py", value=folded)
                raise Unsupported(call_label(node), node, "a call into a module that is not a constant")
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
            raise Unsupported(call_label(node), node)
        handler = getattr(self, f"ct_{name}", None)
        if handler is not None:
            return handler(node, hint)
        if name in UNARY_MATH:
            args = bind_args(node, ["x"], set())
            x = self.expr(args["x"], "")
            if x.kind != "tile" or not x.is_float:
                raise Unsupported(f"ct.{name} on a {x.kind}", node)
            return Val("tile", f"{UNARY_MATH[name]}({x.expr})", x.dtype, x.shape)
        if name in REDUCTIONS:
            return self.reduce(name, node, hint)
        row = FUNCTIONS.get(name)
        if row is not None and row.status == "gap":
            missing = row.note.removeprefix("cutile-rs 0.5 has no ").split(";")[0] if row.note else name
            raise gap(f"ct.{name}", node, missing, row.rust)
        if row is not None and row.status == "untranslated":
            raise Unsupported(f"ct.{name}", node, f"cutile-rs has {row.rust}; the draft does not write it yet")
        raise Unsupported(f"ct.{name}", node)

    def _shadowed(self, name: str) -> Val | None:
        """What a bare name means here (a local, a parameter or a module value), None when nothing defines it."""
        try:
            return self.lookup(name, None)
        except Unsupported:
            return None

    def inline(self, ref: FunctionRef, node: ast.Call, hint: str) -> Val:
        """A call of a device helper (`@ct.function` or a plain function, in this module or imported): its body
        translated in place, over the argument values, with its own module's constants (cutile 0.5 has no
        device function items a kernel entry can call: inlining is what cuTile Python's compiler does too)."""
        fn, env = helper_def(ref)
        label = call_label(node)
        if fn is None:
            raise Unsupported(label, node, f"the helper `{ref.name}` is not a function whose source can be read")
        if self.inline_depth >= 8:
            raise Unsupported(label, node, "helpers nested deeper than 8 calls (recursion?)")
        body = [st for st in fn.body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
        if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None or any(
                isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom)) for st in body[:-1] for n in ast.walk(st)):
            raise Unsupported(label, node, f"the helper `{ref.name}` is not straight-line code ending in one "
                                           "`return value`")
        a = fn.args
        if a.vararg or a.kwarg or a.posonlyargs:
            raise Unsupported(label, node, f"the helper `{ref.name}` takes *args/**kwargs or positional-only "
                                           "parameters")
        params = [x.arg for x in a.args] + [x.arg for x in a.kwonlyargs]
        given: dict[str, ast.expr] = dict(zip(params, node.args))
        if len(node.args) > len(a.args):
            raise Unsupported(label, node, "more positional arguments than the helper has parameters")
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in params or kw.arg in given:
                raise Unsupported(label, node, f"a keyword argument the helper `{ref.name}` does not take")
            given[kw.arg] = kw.value
        defaults = dict(zip([x.arg for x in a.args][len(a.args) - len(a.defaults):], a.defaults))
        defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        values: dict[str, Val] = {}
        for pname in params:
            if pname in given:
                v = self.expr(given[pname], "")
                if v.kind == "tile" and not v.expr.isidentifier():  # computed once, as the call computes it
                    v = self.tile(v.dtype, v.shape, v.expr, pname)
                values[pname] = v
            elif pname in defaults:
                d = fold_constant(defaults[pname], env)
                if not isinstance(d, (bool, int, float)):
                    raise Unsupported(label, node, f"the default of `{pname}` is not a constant")
                values[pname] = Val("py", value=d)
            else:
                raise Unsupported(label, node, f"no value for the helper's parameter `{pname}`")
        saved = (self.scopes, self.module_consts, self.name_prefix)
        self.scopes = [type(self.scopes[0])(values)]
        self.module_consts = env
        self.name_prefix = f"{fn.name.strip('_')}_"
        self.inline_depth += 1
        try:
            for i, st in enumerate(body[:-1]):
                self.statement(st, names_assigned_in_loops(body[i + 1:]))
            return self.expr(body[-1].value, hint)
        except Unsupported as e:
            cls = NeedsDtype if isinstance(e, NeedsDtype) else Unsupported  # the entry still specialises per dtype
            raise cls(e.what if e.what.endswith(")") and "helper" in e.what else
                      f"{e.what} (in the helper `{fn.name}`)", node, e.detail, gap=e.gap) from None
        finally:
            self.scopes, self.module_consts, self.name_prefix = saved
            self.inline_depth -= 1

    def method(self, node: ast.Call, hint: str) -> Val:
        func = node.func
        assert isinstance(func, ast.Attribute)
        m = func.attr
        # the value an astype converts gets its own name: `t_raw` for `t = ....astype(...)`
        recv = self.expr(func.value, f"{hint}_raw" if hint and m == "astype" else "")
        if recv.kind == "tile" and m == "astype":
            args = bind_args(node, ["dtype"], {"rounding_mode"})
            return self.astype(recv, args, node, hint)
        if recv.kind == "tile" and m == "reshape":
            args = bind_args(node, ["shape"], set())
            return self.reshape(recv, args["shape"], node)
        if recv.kind == "tile" and m == "item" and not node.args and not node.keywords:
            if any(d != "1" for d in recv.shape):  # cuTile: Tile.item() is reshape(()), one element only
                raise Unsupported("`.item()` of a tile with more than one element", node)
            return Val("tile", f"{paren(recv.expr)}.reshape(shape![])", recv.dtype, ()) if recv.shape else recv
        if recv.kind == "tile" and m == "transpose" and not node.args and not node.keywords:
            return self.transpose(recv, node)
        if recv.kind == "array" and m == "slice":
            return self.slice(recv.value, node, hint)
        if recv.kind == "array" and m == "tiled_view":
            args = bind_args(node, ["tile_shape"], {"padding_mode"})
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
                args = bind_args(node, ["index", "tile"], set())
                self.view_store(recv.value, args["index"], args["tile"], node)
                return Val("none")
        if recv.kind == "view" and m == "load":
            args = bind_args(node, ["index"], set())
            view: View = recv.value
            index = self.index_list(args["index"], len(view.shape))
            return self.tile(view.array.dtype, view.shape, f"{view.var}.load([{', '.join(index)}])", hint)
        if recv.kind == "view" and m == "num_tiles":
            args = bind_args(node, ["axis"], set())
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
                self.request_fold(item)
                raise Unsupported("a tile shape that is not made of constants", item)
        return tuple(out)

    def request_fold(self, node: ast.AST) -> None:
        """A tile extent computed from ct.Constant ints (`2 * D`): a Rust type cannot spell the arithmetic of const
        generics, so the entry is written per value of those constants (static per variant) and it folds."""
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        seen: set[str] = set()
        while names - seen:  # through the locals it reads (`count = C * H * W`), to the constants they come from
            name = (names - seen).pop()
            seen.add(name)
            names |= self.local_defs.get(name, set())
        self.fold_requests |= names & self.generics

    def const_int(self, node: ast.expr) -> int:
        v = self.expr(node, "")
        if v.kind == "py" and isinstance(v.value, int) and not isinstance(v.value, bool):
            return v.value
        raise Unsupported("an axis that is not a constant integer", node)

    def padding(self, node: ast.expr | None, call: ast.AST) -> str:
        if node is None:
            return "any"
        v = self.expr(node, "")
        if v.kind == "enum" and v.value[0] == "PaddingMode" and v.value[1] in PADDING:
            return PADDING[v.value[1]]
        raise Unsupported("a padding_mode that is not a ct.PaddingMode member", node)

    def rounding(self, node: ast.expr | None) -> str | None:
        if node is None:
            return None
        v = self.expr(node, "")
        if v.kind == "py" and v.value is None:
            return None
        if v.kind == "enum" and v.value[0] == "RoundingMode" and v.value[1] in ROUNDING:
            return ROUNDING[v.value[1]]
        raise Unsupported("a rounding_mode that is not a ct.RoundingMode member", node)

    def flag(self, node: ast.expr | None) -> bool:
        if node is None:
            return False
        v = self.expr(node, "")
        if v.kind == "py" and isinstance(v.value, bool):
            return v.value
        raise Unsupported("a mode flag that is not a constant bool", node)

    def ct_exp(self, node: ast.Call, hint: str) -> Val:
        return self._rounded_unary("exp", node)

    def ct_tanh(self, node: ast.Call, hint: str) -> Val:
        return self._rounded_unary("tanh", node)

    def _rounded_unary(self, name: str, node: ast.Call) -> Val:
        """ct.exp / ct.tanh, with `rounding_mode=` as cutile's <name>_with_rounding (FULL / APPROX, f32 only)."""
        args = bind_args(node, ["x"], {"rounding_mode"})
        x = self.expr(args["x"], "")
        if x.kind != "tile" or not x.is_float:
            raise Unsupported(f"ct.{name} on a {x.kind}", node)
        r = self.rounding(args.get("rounding_mode"))
        if r is None:
            return Val("tile", f"{name}({x.expr})", x.dtype, x.shape)
        if r not in ("Full", "Approx") or x.dtype not in ("f32", OP_DTYPE):
            raise Unsupported(f"ct.{name}(..., rounding_mode={r}) on {x.dtype}", node,
                              "cuTile allows FULL / APPROX on float32 only")
        if x.dtype == OP_DTYPE:
            raise NeedsDtype(f"ct.{name} with a rounding mode", node, "float32 only: specialised per dtype")
        return Val("tile", f"unsafe {{ {name}_with_rounding({x.expr}, rounding::{r}) }}", x.dtype, x.shape)

    def _shift(self, node: ast.Call, left: bool, hint: str) -> Val:
        args = bind_args(node, ["x", "y"], set())
        a, b = self.expr(args["x"], ""), self.expr(args["y"], "")
        if a.kind != "tile" and b.kind != "tile":
            raise Unsupported("a shift of scalars only", node)

        def render(x: str, y: str, d: str) -> str:
            if d not in INTS:
                raise Unsupported("a shift of non-integer tiles", node)
            # shri is arithmetic for signed and logical for unsigned element types, as cuTile Python's
            return f"shli({x}, {y}, overflow::None)" if left else f"shri({x}, {y})"
        return self.elementwise(a, b, node, render)

    def ct_bitwise_rshift(self, node: ast.Call, hint: str) -> Val:
        return self._shift(node, False, hint)

    def ct_bitwise_lshift(self, node: ast.Call, hint: str) -> Val:
        # measured: cutile 0.5's shli(.., overflow::None) writes no overflow attribute and its bytecode writer fails
        # ("missing attribute 'overflow' on op ShLI"); cuTile Python writes overflow = none
        raise gap("ct.bitwise_lshift", node, "shli with overflow none (the bytecode writer needs the attribute)",
                  "a multiply by 2**n for a constant shift, or shli(x, y, overflow::NoWrap) where no bit is lost")

    def ct_bitcast(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "dtype"], set())
        x, d = self.expr(args["x"], ""), self.expr(args["dtype"], "")
        if x.kind != "tile" or d.kind != "dtype":
            raise Unsupported("ct.bitcast of a non-tile or to something that is not a dtype", node)
        if d.value == x.dtype:
            return x
        if OP_DTYPE in (x.dtype, d.value):
            raise NeedsDtype("ct.bitcast of the op dtype", node, "the bit width needs a concrete dtype")
        return self.tile(d.value, x.shape, f"bitcast({x.expr})", hint)

    def ct_cat(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["tiles", "axis"], set())
        items = args["tiles"].elts if isinstance(args["tiles"], (ast.Tuple, ast.List)) else None
        if items is None or len(items) != 2:
            raise Unsupported("ct.cat of something other than two tiles", node)
        a, b = (self.expr(i, "") for i in items)
        if a.kind != "tile" or b.kind != "tile" or a.dtype != b.dtype or len(a.shape) != len(b.shape):
            raise Unsupported("ct.cat of tiles of two dtypes or ranks", node)
        axis = self.const_int(args["axis"])
        axis = axis + len(a.shape) if axis < 0 else axis
        if not all(x == y for k, (x, y) in enumerate(zip(a.shape, b.shape)) if k != axis):
            raise Unsupported("ct.cat of tiles whose other axes differ", node)
        ext = _sum_dims(a.shape[axis], b.shape[axis])
        if ext is None:
            self.fold_requests |= {d for d in (a.shape[axis], b.shape[axis]) if d in self.generics}
            raise Unsupported("ct.cat along an axis whose extents are not literals", node,
                              f"{a.shape[axis]} + {b.shape[axis]} is not a literal in a tile type")
        shape = a.shape[:axis] + (ext,) + a.shape[axis + 1:]
        return self.tile(a.dtype, shape, f"cat({a.expr}, {b.expr}, {axis}i32)", hint)

    def ct_extract(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "index", "shape"], set())
        x = self.expr(args["x"], "")
        if x.kind != "tile":
            raise Unsupported("ct.extract of a scalar", node)
        shape = self.dims(args["shape"])
        items = args["index"].elts if isinstance(args["index"], ast.Tuple) else [args["index"]]
        if len(items) != len(x.shape) or len(shape) != len(x.shape):
            raise Unsupported("ct.extract with an index or shape of another rank", node)
        idx = []
        for item in items:
            v = self.expr(item, "")
            if v.kind == "py" and isinstance(v.value, int) and not isinstance(v.value, bool):
                idx.append(self.hoist("", "Tile<i32, { [] }>", f"constant({v.value}i32, shape![])"))
            elif v.kind == "scalar" and v.dtype == "i32":
                idx.append(self.hoist("", "Tile<i32, { [] }>", f"scalar_to_tile({v.expr})"))
            else:
                raise Unsupported("a ct.extract index that is not an int32 scalar", item)
        return self.tile(x.dtype, shape, f"extract({x.expr}, [{', '.join(idx)}])", hint)

    def ct_matmul(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "y"], set())
        return self.matmul(self.expr(args["x"], ""), self.expr(args["y"], ""), node, hint)

    def matmul(self, x: Val, y: Val, node: ast.AST, hint: str) -> Val:
        """`x @ y` / ct.matmul of 2-D tiles as cuTile Python lowers it: mma into a zero accumulator of the input
        dtype's first mma accumulator type (f16 -> f16, bf16/f32/tf32 -> f32, i8 -> i32), then astype back."""
        if x.kind != "tile" or y.kind != "tile" or len(x.shape) != 2 or len(y.shape) != 2:
            raise Unsupported("a matmul of tiles that are not both 2-D", node)
        if x.dtype != y.dtype:
            raise Unsupported("a matmul of two dtypes", node)
        if OP_DTYPE == x.dtype:
            raise NeedsDtype("a matmul of the op dtype", node, "its accumulator type depends on the dtype")
        acc_t = {"f16": "f16", "bf16": "f32", "f32": "f32", "tf32": "f32", "f64": "f64", "i8": "i32", "u8": "i32",
                 "f8e4m3fn": "f16", "f8e5m2": "f16"}.get(x.dtype)
        if acc_t is None or x.shape[1] != y.shape[0]:
            raise Unsupported("a matmul of this dtype or of shapes that do not chain", node)
        shape = (x.shape[0], y.shape[1])
        acc = self.tile(acc_t, shape, f"constant({literal(0, acc_t, node)}, {shape_macro(shape)})")
        r = self.tile(acc_t, shape, f"mma({x.expr}, {y.expr}, {acc.expr})", hint)
        return r if acc_t == x.dtype else self.tile(x.dtype, shape, f"convert_tile({r.expr})", hint)

    def ct_bid(self, node: ast.Call, hint: str) -> Val:
        axis = self.const_int(bind_args(node, ["axis"], set())["axis"])
        return Val("scalar", f"program_id({axis})", "i32", extra={"index_ok": True, "bid": axis})

    def ct_num_blocks(self, node: ast.Call, hint: str) -> Val:
        axis = self.const_int(bind_args(node, ["axis"], set())["axis"])
        return Val("scalar", f"num_programs({axis})", "i32")

    def ct_cdiv(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "y"], set())
        a, b = self.expr(args["x"], ""), self.expr(args["y"], "")
        if a.kind == "py" and b.kind == "py":  # stage A's evaluator (ct.cdiv of 0 is no constant)
            v = fold_constant(ast.Call(func=ast.Attribute(ast.Name("ct", ast.Load()), "cdiv", ast.Load()),
                                       args=[ast.Constant(a.value), ast.Constant(b.value)], keywords=[]), {})
            if not isinstance(v, int):
                raise Unsupported("ct.cdiv of constants that do not divide", node)
            return Val("py", value=v)
        x, y = self.as_scalar(a, "i32", node, hint), self.as_scalar(b, "i32", node, hint)
        if a.kind == "tile" or b.kind == "tile":
            raise Unsupported("ct.cdiv on tiles", node)
        return Val("scalar", f"ceil_div({x}, {y})", "i32")

    def _minmax(self, name: str, node: ast.Call, hint: str, vals: list[Val] | None = None) -> Val:
        args = bind_args(node, ["x", "y"], {"flush_to_zero", "propagate_nan"}) if vals is None else {}
        a, b = vals if vals is not None else (self.expr(args["x"], ""), self.expr(args["y"], ""))
        if a.kind == "py" and b.kind == "py":
            return Val("py", value=(min if name == "minimum" else max)(a.value, b.value))
        if a.kind in ("scalar", "py") and b.kind in ("scalar", "py"):
            dtype = self.scalar_dtype(a, b)
            x, y = self.as_scalar(a, dtype, node, hint), self.as_scalar(b, dtype, node, hint)
            if dtype in INTS:
                return Val("scalar", f"{'min' if name == 'minimum' else 'max'}({x}, {y})", dtype)
            # float scalars: on 0-d tiles, as cuTile Python lowers them (maxf/minf), back to a scalar
            t0 = f"Tile<{dtype}, {{ [] }}>"
            tx, ty = self.hoist("", t0, f"scalar_to_tile({x})"), self.hoist("", t0, f"scalar_to_tile({y})")
            fn = "minf" if name == "minimum" else "maxf"
            t = self.hoist("", t0, f"{fn}({tx}, {ty}, nan::Disabled, ftz::Disabled)")
            return Val("scalar", self.hoist(hint, dtype, f"tile_to_scalar({t})"), dtype)
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

    def _abs(self, node: ast.AST, x: Val) -> Val:
        if x.kind == "py":
            return Val("py", value=abs(x.value))
        if x.kind == "scalar":
            t = self.hoist("", f"Tile<{x.dtype}, {{ [] }}>", f"scalar_to_tile({x.expr})")
            x = Val("tile", t, x.dtype, ())
        if x.kind != "tile" or x.dtype == "bool":
            raise Unsupported("abs of something that is not a number", node)
        return Val("tile", f"{'absf' if x.is_float else 'absi'}({x.expr})", x.dtype, x.shape)

    def ct_abs(self, node: ast.Call, hint: str) -> Val:
        return self._abs(node, self.expr(bind_args(node, ["x"], set())["x"], ""))

    def ct_negative(self, node: ast.Call, hint: str) -> Val:
        x = bind_args(node, ["x"], set())["x"]
        return self.unary(ast.copy_location(ast.UnaryOp(op=ast.USub(), operand=x), node), hint)

    def ct_floordiv(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "y"], set())
        return self.binop(ast.copy_location(ast.BinOp(left=args["x"], op=ast.FloorDiv(), right=args["y"]), node),
                          hint)

    def ct_mod(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "y"], set())
        return self.binop(ast.copy_location(ast.BinOp(left=args["x"], op=ast.Mod(), right=args["y"]), node), hint)

    def ct_cumsum(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "axis"], {"reverse", "rounding_mode", "flush_to_zero"})
        if self.rounding(args.get("rounding_mode")) is not None or self.flag(args.get("flush_to_zero")):
            raise gap("ct.cumsum(..., rounding_mode=/flush_to_zero=)", node, "rounding or ftz on scan_sum",
                      "scan(x, axis, reverse, identity, |a, b| addf(a, b, rounding::R, ftz::F))")
        x = self.expr(args["x"], "")
        if x.kind != "tile" or not x.shape:
            raise Unsupported("ct.cumsum of something that is not a tile of rank >= 1", node)
        axis = self.const_int(args["axis"]) if "axis" in args else 0
        axis = axis + len(x.shape) if axis < 0 else axis
        if axis != 0:  # measured: cutile-compiler 0.5 writes `dim = 0` on every scan, whatever dim it is given
            raise gap(f"ct.cumsum over axis {axis}", node, "scan over an axis other than 0 (its compiler writes "
                      "dim = 0)", "permute(x, ..) so the axis is 0, scan_sum(.., 0i32, ..), permute back")
        rev = "Reverse" if self.flag(args.get("reverse")) else "Forward"
        zero = literal(0, x.dtype, node)
        return self.tile(x.dtype, x.shape, f"scan_sum({x.expr}, {axis}i32, reverse::{rev}, {zero})", hint)

    def permute(self, x: Val, perm: tuple[int, ...], node: ast.AST, hint: str) -> Val:
        if sorted(perm) != list(range(len(x.shape))):
            raise Unsupported("a permutation that is not one of the tile's axes", node)
        if perm == tuple(range(len(x.shape))):
            return x
        shape = tuple(x.shape[i] for i in perm)
        dims = ", ".join(str(i) for i in perm)
        arr = self.hoist("", f"Array<{{ [{dims}] }}>", f"const_array![{dims}]")
        return self.tile(x.dtype, shape, f"permute({x.expr}, {arr})", hint)

    def ct_permute(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "axes"], set())
        x = self.expr(args["x"], "")
        axes = self.expr(args["axes"], "")
        if x.kind != "tile" or axes.kind != "py" or not isinstance(axes.value, tuple):
            raise Unsupported("ct.permute of a non-tile or with axes that are not constants", node)
        rank = len(x.shape)
        return self.permute(x, tuple(int(a) + rank if int(a) < 0 else int(a) for a in axes.value), node, hint)

    def _binary_call(self, node: ast.Call, op: ast.AST, hint: str) -> Val:
        """ct.<f>(x, y) that means a Python operator: translated as that operator is."""
        args = bind_args(node, ["x", "y"], set())
        if isinstance(op, ast.cmpop):
            return self.compare(op, self.expr(args["x"], ""), self.expr(args["y"], ""), node, hint)
        return self.binop(ast.copy_location(ast.BinOp(left=args["x"], op=op, right=args["y"]), node), hint)

    def ct_bitwise_and(self, node, hint):
        return self._binary_call(node, ast.BitAnd(), hint)

    def ct_bitwise_or(self, node, hint):
        return self._binary_call(node, ast.BitOr(), hint)

    def ct_bitwise_xor(self, node, hint):
        return self._binary_call(node, ast.BitXor(), hint)

    def ct_equal(self, node, hint):
        return self._binary_call(node, ast.Eq(), hint)

    def ct_not_equal(self, node, hint):
        return self._binary_call(node, ast.NotEq(), hint)

    def ct_less(self, node, hint):
        return self._binary_call(node, ast.Lt(), hint)

    def ct_less_equal(self, node, hint):
        return self._binary_call(node, ast.LtE(), hint)

    def ct_greater(self, node, hint):
        return self._binary_call(node, ast.Gt(), hint)

    def ct_greater_equal(self, node, hint):
        return self._binary_call(node, ast.GtE(), hint)

    def ct_bitwise_not(self, node: ast.Call, hint: str) -> Val:
        x = self.expr(bind_args(node, ["x"], set())["x"], "")
        return self.invert(x, node)

    def invert(self, x: Val, node: ast.AST) -> Val:
        """~x: x ^ all-ones (measured: cutile 0.5 declares noti but its JIT has no `cuda_tile.noti` op)."""
        if x.kind != "tile" or (x.dtype not in INTS and x.dtype != "bool"):
            raise Unsupported("a bitwise not of something that is not an integer or boolean tile", node)
        ones = Val("py", value=True if x.dtype == "bool" else -1)
        return self.elementwise(x, ones, node, lambda a, b, d: f"{paren(a)} ^ {paren(b)}", bool_ok=True)

    def _float_pair(self, name: str, node: ast.Call, render) -> Val:
        args = bind_args(node, ["x", "y"], set())
        a, b = self.expr(args["x"], ""), self.expr(args["y"], "")
        res = self.elementwise(a, b, node, render)
        if not (res.dtype in FLOATS or res.dtype == OP_DTYPE):
            raise Unsupported(f"ct.{name} of integer tiles", node)
        return res

    def ct_atan2(self, node: ast.Call, hint: str) -> Val:
        return self._float_pair("atan2", node, lambda x, y, d: f"atan2({x}, {y})")

    def ct_pow(self, node: ast.Call, hint: str) -> Val:
        return self._float_pair("pow", node, lambda x, y, d: f"pow({x}, {y})")

    def ct_sqrt(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x"], {"rounding_mode", "flush_to_zero"})
        x = self.expr(args["x"], "")
        if x.kind != "tile" or not x.is_float:
            raise Unsupported("ct.sqrt of a non-float tile", node)
        r = self.rounding(args.get("rounding_mode")) or "NearestEven"
        ftz = "Enabled" if self.flag(args.get("flush_to_zero")) else "Disabled"
        return Val("tile", f"sqrt({x.expr}, rounding::{r}, ftz::{ftz})", x.dtype, x.shape)

    def ct_broadcast_to(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "shape"], set())
        x = self.expr(args["x"], "")
        shape = self.dims(args["shape"])
        if x.kind != "tile":
            raise Unsupported("ct.broadcast_to of a scalar", node)
        if broadcast_shapes([x.shape, shape], node) != shape:
            raise Unsupported("ct.broadcast_to a shape the tile does not broadcast to", node)
        return Val("tile", self.to_tile(x, x.dtype, shape, node), x.dtype, shape)

    def ct_minimum(self, node: ast.Call, hint: str) -> Val:
        return self._minmax("minimum", node, hint)

    def ct_maximum(self, node: ast.Call, hint: str) -> Val:
        return self._minmax("maximum", node, hint)

    def _arith(self, op: str, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "y"], {"rounding_mode", "flush_to_zero"})
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

    def _ftz_unary(self, name: str, node: ast.Call) -> Val:
        """ct.NAME(x, flush_to_zero=...) of a float tile -> cutile's NAME(x, ftz::...)."""
        args = bind_args(node, ["x"], {"flush_to_zero"})
        x = self.expr(args["x"], "")
        if x.kind != "tile" or not x.is_float:
            raise Unsupported(f"ct.{name} of a non-float tile", node)
        ftz = "Enabled" if self.flag(args.get("flush_to_zero")) else "Disabled"
        return Val("tile", f"{name}({x.expr}, ftz::{ftz})", x.dtype, x.shape)

    def ct_exp2(self, node: ast.Call, hint: str) -> Val:
        return self._ftz_unary("exp2", node)

    def ct_rsqrt(self, node: ast.Call, hint: str) -> Val:
        return self._ftz_unary("rsqrt", node)

    def ct_where(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["cond", "x", "y"], set())
        c, a, b = (self.expr(args[k], "") for k in ("cond", "x", "y"))
        if c.kind != "tile" or c.dtype != "bool":
            raise Unsupported("ct.where with a condition that is not a boolean tile", node)
        tiles = [v for v in (a, b) if v.kind == "tile"]
        if not tiles:
            raise Unsupported("ct.where choosing between two scalars", node)
        dtype = tiles[0].dtype
        if len({t.dtype for t in tiles}) > 1:  # cuTile's where promotes x and y to one dtype (promote_types)
            dtype = self.promoted(tiles, node)
            a, b = self.cast_to(a, dtype), self.cast_to(b, dtype)
        shape = broadcast_shapes([c.shape] + [t.shape for t in tiles], node)
        cx = self.to_tile(c, "bool", shape, node)
        ax, bx = self.to_tile(a, dtype, shape, node), self.to_tile(b, dtype, shape, node)
        return Val("tile", f"select({cx}, {ax}, {bx})", dtype, shape)

    def ct_astype(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "dtype"], {"rounding_mode"})
        return self.astype(self.expr(args["x"], ""), {k: v for k, v in args.items() if k != "x"}, node, hint)

    def ct_reshape(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "shape"], set())
        x = self.expr(args["x"], "")
        if x.kind != "tile":
            raise Unsupported("ct.reshape of a scalar", node)
        return self.reshape(x, args["shape"], node)

    def ct_transpose(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "axis0", "axis1"], set())
        x = self.expr(args["x"], "")
        if x.kind != "tile":
            raise Unsupported("ct.transpose of a scalar", node)
        if "axis0" not in args and "axis1" not in args:
            return self.transpose(x, node)
        if "axis0" not in args or "axis1" not in args:
            raise Unsupported("ct.transpose with one explicit axis", node)
        rank = len(x.shape)
        a0, a1 = (self.const_int(args[k]) for k in ("axis0", "axis1"))
        a0, a1 = a0 + rank if a0 < 0 else a0, a1 + rank if a1 < 0 else a1
        perm = list(range(rank))
        if not (0 <= a0 < rank and 0 <= a1 < rank):
            raise Unsupported("ct.transpose axes out of the tile's rank", node)
        perm[a0], perm[a1] = perm[a1], perm[a0]
        if rank == 2 and perm == [1, 0]:
            return self.transpose(x, node)
        return self.permute(x, tuple(perm), node, hint)

    def ct_expand_dims(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "axis"], set())
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
        return self.tile(d.value, shape, constant_tile(value, d.value, shape, node))

    def ct_full(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["shape", "fill_value", "dtype"], set())
        v = self.expr(args["fill_value"], "")
        if v.kind == "scalar":  # a run-time fill value: the scalar broadcast to the tile, as cuTile lowers it
            shape = self.dims(args["shape"])
            d = self.expr(args["dtype"], "")
            if d.kind != "dtype":
                raise Unsupported("a dtype argument that is not a dtype", args["dtype"])
            return self.tile(d.value, shape, self.to_tile(v, d.value, shape, node), hint)
        if v.kind != "py":
            raise Unsupported("ct.full with a fill value that is not a number", node)
        return self._fill(node, args["shape"], v.value, args["dtype"])

    def ct_zeros(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["shape", "dtype"], set())
        return self._fill(node, args["shape"], 0, args["dtype"])

    def ct_ones(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["shape", "dtype"], set())
        return self._fill(node, args["shape"], 1, args["dtype"])

    def ct_arange(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["size"], {"dtype", "start", "step"})
        if "start" in args or "step" in args:
            raise Unsupported("ct.arange with start/step", node)
        size = self.dims(args["size"])
        d = self.expr(args["dtype"], "") if "dtype" in args else Val("dtype", value="i32")
        if d.kind != "dtype" or d.value not in INTS:
            raise Unsupported("ct.arange of a non-integer dtype", node)
        return self.tile(d.value, size, f"iota({shape_macro(size)})", hint)

    def ct_mma(self, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "y", "acc"], {"use_fast_acc"})
        if self.flag(args.get("use_fast_acc")):
            raise Unsupported("ct.mma(..., use_fast_acc=True)", node)
        x, y, acc = (self.expr(args[k], "") for k in ("x", "y", "acc"))
        for v, k in ((x, "x"), (y, "y"), (acc, "acc")):
            if v.kind != "tile" or len(v.shape) not in (2, 3) or len(v.shape) != len(x.shape):
                raise Unsupported("ct.mma of operands that are not all 2-D or all 3-D tiles", args[k])
        if x.dtype != y.dtype:
            raise Unsupported("ct.mma of operands of two dtypes", node)
        b = x.shape[:-2]
        if x.shape[-1] != y.shape[-2] or y.shape[:-2] != b or acc.shape != (*b, x.shape[-2], y.shape[-1]):
            raise Unsupported("ct.mma with operand shapes that do not chain", node)
        if b:  # batched: cutile's `mma` is 2-D only; its Tile IR op `mmaf` takes rank 3 (cutile _core.rs, N = 3)
            if x.dtype not in FLOATS and x.dtype != OP_DTYPE:
                raise Unsupported("a batched ct.mma of integer tiles", node,
                                  "cutile 0.5 `mmai` needs a signedness per operand; mma per batch item instead")
            return Val("tile", f"mmaf({x.expr}, {y.expr}, {acc.expr})", acc.dtype, acc.shape)
        return Val("tile", f"mma({x.expr}, {y.expr}, {acc.expr})", acc.dtype, acc.shape)

    def reduce(self, name: str, node: ast.Call, hint: str) -> Val:
        args = bind_args(node, ["x", "axis"], {"keepdims", "rounding_mode", "flush_to_zero", "propagate_nan"})
        for k in ("rounding_mode", "flush_to_zero", "propagate_nan"):
            if k in args:
                v = self.expr(args[k], "")
                if not (v.kind == "py" and not v.value):
                    raise Unsupported(f"ct.{name}(..., {k}=)", node)
        x = self.expr(args["x"], "")
        if x.kind != "tile":
            raise Unsupported(f"ct.{name} of a scalar", node)
        axis_v = self.expr(args["axis"], "") if "axis" in args else Val("py", value=None)
        if axis_v.kind == "py" and axis_v.value is None:
            if len(x.shape) != 1:  # a rank-1 tile: the one axis, as cuTile Python reduces it (reduce dim=0)
                raise Unsupported(f"ct.{name} over all axes of a rank-{len(x.shape)} tile", node,
                                  "reduce one axis at a time, or reshape to rank 1 first")
            args = {**args, "axis": ast.copy_location(ast.Constant(0), node)}
        axis = self.const_int(args["axis"])
        axis = axis + len(x.shape) if axis < 0 else axis
        keep = self.flag(args.get("keepdims"))
        reduced = x.shape[:axis] + x.shape[axis + 1:]
        r = self.tile(x.dtype, reduced, f"{REDUCTIONS[name]}({x.expr}, {axis}i32)", hint)
        if not keep:
            return r
        shape = x.shape[:axis] + ("1",) + x.shape[axis + 1:]
        return Val("tile", f"{r.expr}.reshape({shape_macro(shape)})", x.dtype, shape)
