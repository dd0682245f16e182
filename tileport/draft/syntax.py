"""Tables and small AST helpers the body translator shares: operator maps, argument binding, names."""

from __future__ import annotations

import ast
import copy
import re
from typing import Any

from tileport.draft.core_names import CORE_FUNCTIONS
from tileport.draft.values import OP_DTYPE, Unsupported, Val, paren, tile_type
from tileport.analysis.static import TileNames, TileRef, Unknown, dotted_parts, fold_constant

INDENT = "    "
CMP_FUNCS = {ast.Lt: "lt_tile", ast.LtE: "le_tile", ast.Gt: "gt_tile", ast.GtE: "ge_tile", ast.Eq: "eq_tile",
        ast.NotEq: "ne_tile"}
ARITH_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
BIT_OPS = {ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}
ROUNDING = {"RN": "NearestEven", "RZ": "Zero", "RM": "NegativeInf", "RP": "PositiveInf", "FULL": "Full",
             "APPROX": "Approx"}
PADDING = {"ZERO": "Zero", "NEG_ZERO": "NegZero", "NAN": "Nan", "POS_INF": "PosInf", "NEG_INF": "NegInf",
            "UNDETERMINED": "None"}
UNARY_MATH = {"exp": "exp", "log": "log", "log2": "log2", "tanh": "tanh", "sin": "sin", "cos": "cos", "tan": "tan",
          "sinh": "sinh", "cosh": "cosh", "floor": "floor", "ceil": "ceil"}
ELEM_BYTES = {"i8": 1, "u8": 1, "bool": 1, "i16": 2, "u16": 2, "f16": 2, "bf16": 2, "i32": 4, "u32": 4, "f32": 4,
               "i64": 8, "u64": 8, "f64": 8}
FMA_FLOATS = {"f16", "bf16", "f32", "f64", OP_DTYPE}
REDUCTIONS = {"sum": "reduce_sum", "max": "reduce_max", "min": "reduce_min", "prod": "reduce_prod"}


RUST_KEYWORDS = {"as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for", "if",
                 "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self",
                 "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "async",
                 "await", "dyn", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "typeof",
                 "unsized", "virtual", "yield", "try", "shape", "constant", "tile"}


def rust_name(name: str) -> str:
    """A Python identifier as a Rust one: keywords, names cutile's prelude uses and the free functions of
    `cutile::core` (a local `num_tiles` would shadow `num_tiles(&view, axis)`) get a trailing `_`."""
    return f"{name}_" if name in RUST_KEYWORDS or name in CORE_FUNCTIONS else name


def ct_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "ct":
        return func.attr
    return None


dotted = dotted_parts  # `a.b.c` as its parts (the analysis' reader of the same names)


def call_label(call: ast.Call) -> str:
    d = dotted(call.func)
    return f"{'.'.join(d)}(...)" if d else "a call"


def bind_args(call: ast.Call, positional: list[str], optional: set[str]) -> dict[str, ast.expr]:
    """Map a call's arguments onto names (positional first, then keywords); unknown keywords are holes."""
    out: dict[str, ast.expr] = {}
    for name, arg in zip(positional, call.args):
        if isinstance(arg, ast.Starred):
            raise Unsupported("*args in a call", call)
        out[name] = arg
    if len(call.args) > len(positional):
        raise Unsupported(f"{call_label(call)} with {len(call.args)} positional arguments", call)
    for kw in call.keywords:
        if kw.arg is None:
            raise Unsupported("**kwargs in a call", call)
        if kw.arg not in positional and kw.arg not in optional:
            raise Unsupported(f"{call_label(call)[:-5]}(..., {kw.arg}=)", call)
        out[kw.arg] = kw.value
    return out


def assigns_before_reading(stmts: list[ast.stmt], name: str) -> bool:
    """Every path through `stmts` assigns `name` before anything reads it (an `if` counts when both its branches
    do and its test does not read it)."""
    def reads(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(node))

    for st in stmts:
        if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            if reads(st.value):
                return False
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
            continue
        if isinstance(st, ast.If) and not reads(st.test):
            if assigns_before_reading(st.body, name) and assigns_before_reading(st.orelse, name):
                return True
        if reads(st) or name in assigned_names([st]):
            return False
    return False


def is_static_iter(node: ast.AST) -> bool:
    """`for ... in ct.static_iter(...)`: a loop cuTile unrolls at compile time (nothing is carried through it)."""
    it = getattr(node, "iter", None)
    return isinstance(node, ast.For) and isinstance(it, ast.Call) and ct_name(it.func) == "static_iter"


def names_assigned_in_loops(stmts: list[ast.stmt]) -> set[str]:
    """Names a run-time loop among `stmts` assigns (they are carried: `let mut`); an unrolled ct.static_iter body
    rebinds its names item after item instead."""
    names: set[str] = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.For, ast.While)) and not is_static_iter(node):
                for inner in node.body:
                    for n in ast.walk(inner):
                        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                            names.add(n.id)
    return names


def broadcast_shapes(shapes: list[tuple[str, ...]], node: ast.AST) -> tuple[str, ...]:
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0} - {"1"}
        if len(dims) > 1:
            raise Unsupported("broadcasting tiles of incompatible shapes", node, " vs ".join(map(str, shapes)))
        out.append(dims.pop() if dims else "1")
    return tuple(out)


def fold_binop(op: type, a: Any, b: Any, node: ast.AST) -> Any:
    """a op b on constants, by stage A's evaluator (one set of rules: same bounds, a // 0 is not a constant)."""
    v = fold_constant(ast.BinOp(left=ast.Constant(a), op=op(), right=ast.Constant(b)), {})
    if isinstance(v, Unknown):
        raise Unsupported(f"folding {opname(op)} of constants", node)
    return v


def fold_compare(op: ast.cmpop, a: Any, b: Any) -> bool:
    v = fold_constant(ast.Compare(left=ast.Constant(a), ops=[op], comparators=[ast.Constant(b)]), {})
    if isinstance(v, Unknown):
        raise Unsupported(f"the comparison {type(op).__name__} of constants", None)
    return v


def opname(op: type) -> str:
    return {ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>",
            ast.MatMult: "@"}.get(op, op.__name__)


def operand(expr: str) -> str:
    """Parenthesise a sum inside a product etc.: keep it simple and always wrap compound operands."""
    return paren(expr)


EFFECTFUL = (".load(", "load_ptr_tko", "store", "token", "make_", "get_tensor", "num_tiles", "partition")


def assigned_names(stmts: list[ast.stmt]) -> set[str]:
    return {n.id for st in stmts for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def idents(text: str) -> set[str]:
    return set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", text))


def range_end(expr: str) -> str:
    return expr if paren(expr) == expr else f"({expr})"


def describe(v: Val) -> str:
    return tile_type(v.dtype, v.shape) if v.kind == "tile" else f"{v.kind} {v.dtype}"



class _Canonical(ast.NodeTransformer):
    def __init__(self, names: TileNames, env: dict[str, Any], local: set[str]):
        self.names, self.env, self.local = names, env, local

    def _ct(self, attr: str, node: ast.AST) -> ast.expr:
        out: ast.expr = ast.Name("ct", ast.Load())
        for part in attr.split("."):
            out = ast.Attribute(out, part, ast.Load())
        return ast.copy_location(out, node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        attr = self.names.attr(node)
        if attr is not None and isinstance(node.ctx, ast.Load):
            return self._ct(attr, node)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if not isinstance(node.ctx, ast.Load) or node.id in self.local or node.id == "ct":
            return node
        attr = self.names.attr(node)
        if attr is None and isinstance(self.env.get(node.id), TileRef):
            attr = self.env[node.id].attr
        return self._ct(attr, node) if attr is not None else node


def canonical_ct(fn: ast.FunctionDef, tree: ast.Module, env: dict[str, Any]) -> ast.FunctionDef:
    """A copy of `fn` where every spelling of a cuda.tile name (`cuda.tile.load`, an alias module, a from-import,
    a module-level alias `exp2 = ct.exp2`) reads `ct.<name>`, the one spelling the translator matches."""
    names = TileNames(tree)
    if names.module_aliases == {"ct"} and not names.direct and not any(isinstance(v, TileRef) for v in env.values()):
        return fn
    local = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs} | {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return _Canonical(names, env, local).visit(copy.deepcopy(fn))
