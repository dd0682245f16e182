"""Static (AST) inspection of an op module: kernels, their bodies, and the launches in host code.

Nothing here imports or runs the module. What it finds:

* every function decorated `@ct.kernel` / `@ct.kernel(...)` (or bound as `name = ct.kernel(fn)`),
  with the arrays it indexes (and their rank, from index tuples), its loads and stores (view or
  pointer, tile shape, padding, mask), notable math calls, loops and `if`s;
* every `ct.launch(stream, grid, kernel, (args...))` in host code, once per path through the
  enclosing function: a small path-sensitive evaluator folds literals and module constants,
  forks at `if`s it cannot decide, and records the path's conditions ("guards"), so a wrapper
  that dispatches between tile configurations yields one launch per configuration.

Values it cannot know (tensor shapes, wrapper arguments) stay `Unknown`, carrying a type hint
(a comparison is a bool, `float(...)` a float) and, for a bare wrapper argument, its default.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

MAX_PATHS = 32  # per host function; more paths are dropped with a note

# ct.* calls worth listing for a human and for the IR self-check (the rest is plain arithmetic).
NOTABLE_MATH = {
    "mma", "mma_scaled", "matmul", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sin", "cos",
    "sum", "max", "min", "prod", "argmax", "argmin", "reduce", "scan", "cumsum", "cumprod", "where",
    "arange", "maximum", "minimum", "truediv", "astype", "transpose", "permute", "reshape", "cat",
    "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg", "atomic_and", "atomic_or",
    "atomic_xor", "pow", "floor", "ceil", "abs", "isnan", "bitcast",
}
VIEW_OPS = {"load", "store"}
POINTER_OPS = {"gather", "scatter", "load_advanced_indexing", "store_advanced_indexing",
               "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg",
               "atomic_and", "atomic_or", "atomic_xor"}
ARRAY_ATTRS = {"shape", "dtype", "strides", "ndim", "tiled_view", "slice", "get_raw_memory", "foreign_pointer"}


# ---------------------------------------------------------------------------------------------
# Records (JSON-able: they travel to the child process)


class IfSite(BaseModel):
    line: int
    condition: str
    names: list[str]


class MemorySite(BaseModel):
    line: int
    op: str
    array: str | None
    access: str  # "view" | "pointer"
    tile_shape: str | None = None
    padding: str | None = None
    masked: bool = False


class KernelStatic(BaseModel):
    name: str  # module attribute holding the kernel object
    function: str  # the decorated def's name
    line: int
    params: list[str]
    annotations: dict[str, str] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)  # decorator keywords (literal or source text)
    array_ndim: dict[str, int | None] = Field(default_factory=dict)  # used as an array -> rank if known
    ndim_evidence: dict[str, str] = Field(default_factory=dict)
    if_sites: list[IfSite] = Field(default_factory=list)
    memory: list[MemorySite] = Field(default_factory=list)
    math_ops: list[str] = Field(default_factory=list)
    loops: int = 0
    reads: list[str] = Field(default_factory=list)  # parameters the body reads (an unread constant needs no value)


class ArgValue(BaseModel):
    expr: str
    known: bool = False
    value: bool | int | float | None = None
    kind: str | None = None  # "bool" | "int" | "float" when known or hinted
    default: bool | int | float | None = None  # the wrapper argument's default, if the arg is one
    origin: str | None = None  # for an unknown local name: the expression it was computed from


class LaunchStatic(BaseModel):
    function: str
    line: int
    kernel: str | None
    grid: str
    args: list[ArgValue] | None
    guards: list[str] = Field(default_factory=list)


class StaticInfo(BaseModel):
    kernels: list[KernelStatic]
    launches: list[LaunchStatic]
    notes: list[str] = Field(default_factory=list)
    factory_kernels: list[str] = Field(default_factory=list)  # @ct.kernel defs inside functions (made at run time)


# ---------------------------------------------------------------------------------------------
# Names: which expressions mean cuda.tile.<attr>


class TileNames:
    """Resolves `ct.load`, `cuda.tile.load` or a from-imported `load` to "load"."""

    def __init__(self, tree: ast.Module):
        self.module_aliases: set[str] = set()
        self.direct: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "cuda.tile" or a.name.startswith("cuda.tile."):
                        if a.asname and a.name == "cuda.tile":
                            self.module_aliases.add(a.asname)
                        elif not a.asname:
                            self.module_aliases.add("cuda.tile")
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                if node.module == "cuda":
                    for a in node.names:
                        if a.name == "tile":
                            self.module_aliases.add(a.asname or "tile")
                elif node.module == "cuda.tile":
                    for a in node.names:
                        self.direct[a.asname or a.name] = a.name

    def attr(self, node: ast.AST) -> str | None:
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head in self.direct:
            return self.direct[head] + ("." + rest if rest else "")
        for alias in self.module_aliases:
            if dotted.startswith(alias + "."):
                return dotted[len(alias) + 1:]
        return None


def dotted_parts(node: ast.AST) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None for anything but a name with attributes."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _dotted(node: ast.AST) -> str | None:
    parts = dotted_parts(node)
    return ".".join(parts) if parts is not None else None


def _kw(call: ast.Call, name: str, pos: int | None = None) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if pos is not None and len(call.args) > pos and not any(isinstance(a, ast.Starred) for a in call.args[:pos + 1]):
        return call.args[pos]
    return None


def _rank_of(index: ast.expr | None) -> int | None:
    if index is None:
        return None
    if isinstance(index, ast.Tuple):
        return len(index.elts)
    if isinstance(index, (ast.Constant, ast.Name, ast.BinOp, ast.Call, ast.Attribute, ast.Subscript)):
        return 1
    return None


def _text(node: ast.AST | None) -> str | None:
    return None if node is None else ast.unparse(node)


# ---------------------------------------------------------------------------------------------
# Kernels


def _kernel_decorator(names: TileNames, dec: ast.expr) -> tuple[bool, dict[str, Any]]:
    if names.attr(dec) == "kernel":
        return True, {}
    if isinstance(dec, ast.Call) and names.attr(dec.func) == "kernel":
        opts: dict[str, Any] = {}
        for k in dec.keywords:
            if k.arg:
                try:
                    opts[k.arg] = ast.literal_eval(k.value)
                except ValueError:
                    opts[k.arg] = ast.unparse(k.value)
        return True, opts
    return False, {}


def _inspect_kernel(names: TileNames, fn: ast.FunctionDef, attr_name: str, options: dict) -> KernelStatic:
    a = fn.args
    params = [p.arg for p in (a.posonlyargs + a.args + a.kwonlyargs)]
    annotations = {p.arg: ast.unparse(p.annotation) for p in (a.posonlyargs + a.args + a.kwonlyargs)
                   if p.annotation is not None}
    pset = set(params)

    # Local names that stand for a parameter array: `s = x.slice(...)`, `y = x`; views: `v = x.tiled_view(...)`.
    alias: dict[str, str] = {}
    views: dict[str, tuple[str | None, ast.Call]] = {}

    def root(node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            if node.id in pset:
                return node.id
            return alias.get(node.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "slice":
            return root(node.func.value)
        return None

    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            tgt, val = node.targets[0].id, node.value
            if isinstance(val, ast.Call) and isinstance(val.func, ast.Attribute) and val.func.attr == "tiled_view":
                views[tgt] = (root(val.func.value), val)
            elif (r := root(val)) is not None and tgt not in pset:
                alias[tgt] = r

    exact: dict[str, dict[int, int]] = {}  # array -> rank -> first line that implies it
    lower: dict[str, int] = {}
    evidence: dict[str, str] = {}
    used: set[str] = set()
    memory: list[MemorySite] = []
    math: set[str] = set()
    ifs: list[IfSite] = []
    loops = 0

    def note_rank(arr: str | None, rank: int | None, line: int, why: str) -> None:
        if arr is None:
            return
        used.add(arr)
        if rank is not None:
            seen = exact.setdefault(arr, {})
            seen[rank] = min(line, seen.get(rank, line))
            evidence.setdefault(arr, f"{why} at line {line}")

    def view_site(call: ast.Call, view: ast.Call, arr: str | None, op: str) -> None:
        shape = _kw(view, "tile_shape", 0)
        note_rank(arr, _rank_of(shape), view.lineno, "tiled_view shape")
        memory.append(MemorySite(line=call.lineno, op=op, array=arr, access="view", tile_shape=_text(shape),
                                 padding=_text(_kw(view, "padding_mode"))))

    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.While)):
            loops += 1
        elif isinstance(node, (ast.If, ast.IfExp)):
            test_names = sorted({n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)})
            ifs.append(IfSite(line=node.lineno, condition=ast.unparse(node.test), names=test_names))
        elif isinstance(node, ast.Attribute) and node.attr in ARRAY_ATTRS:
            r = root(node.value)
            if r is not None:
                used.add(r)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "shape" and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, int) and node.slice.value >= 0:
            r = root(node.value.value)
            if r is not None:
                lower[r] = max(lower.get(r, 0), node.slice.value + 1)
                evidence.setdefault(r, f".shape[{node.slice.value}] at line {node.lineno}")
        if not isinstance(node, ast.Call):
            continue
        attr = names.attr(node.func)
        if attr in VIEW_OPS and node.args:
            arr = root(node.args[0])
            index = _kw(node, "index", 1)
            note_rank(arr, _rank_of(index), node.lineno, f"ct.{attr} index")
            shape = _kw(node, "shape", 2) if attr == "load" else None
            memory.append(MemorySite(line=node.lineno, op=f"ct.{attr}", array=arr, access="view",
                                     tile_shape=_text(shape), padding=_text(_kw(node, "padding_mode"))))
        elif attr in POINTER_OPS and node.args:
            arr = root(node.args[0])
            note_rank(arr, _rank_of(_kw(node, "indices", 1)), node.lineno, f"ct.{attr} indices")
            padding = _kw(node, "padding_value")
            memory.append(MemorySite(line=node.lineno, op=f"ct.{attr}", array=arr, access="pointer",
                                     padding=_text(padding), masked=_kw(node, "mask") is not None))
            if attr.startswith("atomic"):
                math.add(attr)
        elif attr == "num_tiles" and node.args:
            note_rank(root(node.args[0]), _rank_of(_kw(node, "shape", 2)), node.lineno, "ct.num_tiles shape")
        elif attr in NOTABLE_MATH:
            math.add(attr)
        elif isinstance(node.func, ast.Attribute) and node.func.attr in ("load", "store"):
            base = node.func.value
            if isinstance(base, ast.Name) and base.id in views:
                arr, view = views[base.id]
                view_site(node, view, arr, f"view.{node.func.attr}")
            elif isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and base.func.attr == "tiled_view":
                view_site(node, base, root(base.func.value), f"view.{node.func.attr}")
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "astype":
            math.add("astype")
        if isinstance(node.func, ast.Attribute) and node.func.attr == "tiled_view":
            r = root(node.func.value)
            note_rank(r, _rank_of(_kw(node, "tile_shape", 0)), node.lineno, "tiled_view shape")

    array_ndim: dict[str, int | None] = {}
    for p in params:
        if p not in used and p not in lower:
            continue
        ranks = exact.get(p)
        if ranks:
            # Conflicting uses: take the first one and let cuda-tile report the others.
            array_ndim[p] = min(ranks, key=lambda r: ranks[r])
        else:
            array_ndim[p] = lower.get(p)
    memory.sort(key=lambda m: m.line)
    ifs.sort(key=lambda i: i.line)
    reads = sorted({n.id for stmt in fn.body for n in ast.walk(stmt)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in pset})
    return KernelStatic(name=attr_name, function=fn.name, line=fn.lineno, params=params, annotations=annotations,
                        options=options, array_ndim=array_ndim, ndim_evidence=evidence, if_sites=ifs,
                        memory=memory, math_ops=sorted(math), loops=loops, reads=reads)


def find_kernels(tree: ast.Module, names: TileNames) -> list[KernelStatic]:
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    out: list[KernelStatic] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                ok, opts = _kernel_decorator(names, dec)
                if ok:
                    out.append(_inspect_kernel(names, node, node.name, opts))
                    break
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            # name = ct.kernel(fn)  or  name = ct.kernel(occupancy=2)(fn)
            call = node.value
            if isinstance(call, ast.Call) and len(call.args) == 1 and isinstance(call.args[0], ast.Name):
                ok, opts = _kernel_decorator(names, call.func) if isinstance(call.func, ast.Call) else (
                    names.attr(call.func) == "kernel", {})
                fn = defs.get(call.args[0].id)
                if ok and fn is not None:
                    out.append(_inspect_kernel(names, fn, node.targets[0].id, opts))
    return out


# ---------------------------------------------------------------------------------------------
# Host code: a small path-sensitive evaluator


@dataclass(frozen=True)
class Unknown:
    expr: str
    kind: str | None = None  # "bool" | "int" | "float"
    default: Any = None  # a bare wrapper argument's literal default


@dataclass(frozen=True)
class KernelRef:
    name: str


def _kind(v: Any) -> str | None:
    if isinstance(v, Unknown):
        return v.kind
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    return None


_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
        ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_,
        ast.BitOr: operator.or_, ast.BitXor: operator.xor}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not}
_PURE_BUILTINS = {"min": min, "max": max, "abs": abs, "int": int, "float": float, "bool": bool, "len": len}


class Evaluator:
    def __init__(self, names: TileNames, kernels: set[str], module_env: dict[str, Any]):
        self.names = names
        self.kernels = kernels
        self.module_env = module_env

    def lookup(self, name: str, env: dict[str, Any]) -> Any:
        if name in env:
            return env[name]
        if name in self.module_env:
            return self.module_env[name]
        if name in self.kernels:
            return KernelRef(name)
        return Unknown(name)

    def eval(self, node: ast.AST, env: dict[str, Any]) -> Any:
        try:
            return self._eval(node, env)
        except Exception:  # arithmetic on odd values: give up on this expression only
            return Unknown(ast.unparse(node))

    def _eval(self, node: ast.AST, env: dict[str, Any]) -> Any:
        text = ast.unparse(node)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.lookup(node.id, env)
        if isinstance(node, ast.Tuple):
            return tuple(self.eval(e, env) for e in node.elts)
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand, env)
            if isinstance(node.op, ast.Not):
                return Unknown(text, "bool") if isinstance(v, Unknown) else (not v)
            if isinstance(v, Unknown):
                return Unknown(text, v.kind)
            return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[type(node.op)](v)
        if isinstance(node, ast.BinOp):
            a, b = self.eval(node.left, env), self.eval(node.right, env)
            if isinstance(a, Unknown) or isinstance(b, Unknown):
                kinds = {_kind(a), _kind(b)}
                kind = "float" if "float" in kinds or isinstance(node.op, ast.Div) else (
                    "int" if kinds <= {"int", "bool"} else None)
                return Unknown(text, kind)
            if isinstance(node.op, (ast.Pow, ast.LShift)) and isinstance(b, (int, float)) and abs(b) > 256:
                return Unknown(text, _kind(a))  # no giant numbers from a hostile module
            return _BIN[type(node.op)](a, b)
        if isinstance(node, ast.BoolOp):
            vals = [self.eval(v, env) for v in node.values]
            if any(isinstance(v, Unknown) for v in vals):
                return Unknown(text, "bool" if all(_kind(v) == "bool" for v in vals) else None)
            out = vals[0]
            for v in vals[1:]:
                out = (out and v) if isinstance(node.op, ast.And) else (out or v)
            return out
        if isinstance(node, ast.Compare):
            left = self.eval(node.left, env)
            result: Any = True
            for op, comp in zip(node.ops, node.comparators):
                right = self.eval(comp, env)
                if isinstance(left, Unknown) or isinstance(right, Unknown) or type(op) not in _CMP:
                    return Unknown(text, "bool")
                result = result and _CMP[type(op)](left, right)
                left = right
            return result
        if isinstance(node, ast.IfExp):
            t = self.eval(node.test, env)
            if not isinstance(t, Unknown):
                return self.eval(node.body if t else node.orelse, env)
            a, b = self.eval(node.body, env), self.eval(node.orelse, env)
            if not isinstance(a, Unknown) and not isinstance(b, Unknown) and a == b and type(a) is type(b):
                return a
            ka, kb = _kind(a), _kind(b)
            return Unknown(text, ka if ka == kb else None)
        if isinstance(node, ast.Call):
            args = [self.eval(a, env) for a in node.args]
            attr = self.names.attr(node.func)
            if attr == "cdiv" and len(args) == 2:
                a, b = args
                if isinstance(a, Unknown) or isinstance(b, Unknown):
                    return Unknown(text, "int")
                return -((-a) // b)
            if isinstance(node.func, ast.Name) and node.func.id in _PURE_BUILTINS and node.func.id not in env:
                fname = node.func.id
                if fname in ("float", "int", "bool", "len") and (not args or any(isinstance(a, Unknown) for a in args)):
                    return Unknown(text, {"float": "float", "int": "int", "len": "int", "bool": "bool"}[fname])
                if any(isinstance(a, Unknown) for a in args) or node.keywords:
                    kinds = {_kind(a) for a in args}
                    return Unknown(text, "float" if "float" in kinds else ("int" if kinds == {"int"} else None))
                return _PURE_BUILTINS[fname](*args)
            return Unknown(text)
        if isinstance(node, ast.Subscript):
            base = self.eval(node.value, env)
            idx = self.eval(node.slice, env)
            if isinstance(base, (tuple, list)) and isinstance(idx, int) and not isinstance(idx, bool):
                return base[idx]
            if isinstance(node.value, ast.Attribute) and node.value.attr in ("shape", "stride"):
                return Unknown(text, "int")
            return Unknown(text)
        if isinstance(node, ast.Attribute):
            return Unknown(text)
        return Unknown(text)


@dataclass
class _Path:
    env: dict[str, Any]
    guards: list[str] = field(default_factory=list)
    done: bool = False

    def fork(self, guard: str) -> "_Path":
        return _Path(dict(self.env), self.guards + [guard])


class HostWalker:
    def __init__(self, ev: Evaluator, function: str, notes: list[str]):
        self.ev = ev
        self.function = function
        self.notes = notes
        self.launches: list[LaunchStatic] = []
        self.truncated = False

    # -- effects --------------------------------------------------------------------------------
    def assign(self, target: ast.expr, value: Any, value_node: ast.expr | None, env: dict[str, Any]) -> None:
        bind_target(target, value, value_node, env)

    def record_launches(self, node: ast.AST | None, path: _Path) -> None:
        if node is None:
            return
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and self.ev.names.attr(call.func) == "launch":
                self.record(call, path)

    def record(self, call: ast.Call, path: _Path) -> None:
        if len(call.args) < 4 or any(isinstance(a, ast.Starred) for a in call.args[:4]):
            self.notes.append(f"{self.function}:{call.lineno}: ct.launch call not in the form "
                              "launch(stream, grid, kernel, args); skipped")
            return
        _, grid, kern, args = call.args[:4]
        kval = self.ev.eval(kern, path.env)
        kname = kval.name if isinstance(kval, KernelRef) else None
        arg_values: list[ArgValue] | None = None
        if isinstance(args, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in args.elts):
            arg_values = [self.arg_value(e, path.env) for e in args.elts]
        else:
            v = self.ev.eval(args, path.env)
            if isinstance(v, tuple):
                arg_values = [self.value_to_arg(f"{ast.unparse(args)}[{i}]", x) for i, x in enumerate(v)]
        self.launches.append(LaunchStatic(function=self.function, line=call.lineno, kernel=kname,
                                          grid=self.grid_text(grid, path.env), args=arg_values,
                                          guards=list(path.guards)))

    def grid_text(self, grid: ast.expr, env: dict[str, Any]) -> str:
        """The grid as an expression: a name bound earlier (`grid = (cdiv(m, T), 1, 1)`) shows what it holds."""
        text = ast.unparse(grid)
        if not isinstance(grid, ast.Name):
            return text
        v = self.ev.eval(grid, env)
        if isinstance(v, tuple):
            parts = [x.expr if isinstance(x, Unknown) else repr(x) for x in v]
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        if isinstance(v, Unknown) and v.expr != text:
            return v.expr
        return text

    def arg_value(self, node: ast.expr, env: dict[str, Any]) -> ArgValue:
        return self.value_to_arg(ast.unparse(node), self.ev.eval(node, env))

    @staticmethod
    def value_to_arg(expr: str, v: Any) -> ArgValue:
        if isinstance(v, Unknown):
            return ArgValue(expr=expr, kind=v.kind, default=v.default, origin=v.expr if v.expr != expr else None)
        if isinstance(v, (bool, int, float)):
            return ArgValue(expr=expr, known=True, value=v, kind=_kind(v))
        return ArgValue(expr=expr)

    # -- control flow ---------------------------------------------------------------------------
    def block(self, stmts: list[ast.stmt], paths: list[_Path]) -> list[_Path]:
        for stmt in stmts:
            nxt: list[_Path] = []
            for p in paths:
                nxt.extend([p] if p.done else self.stmt(stmt, p))
            if len(nxt) > MAX_PATHS:
                nxt = nxt[:MAX_PATHS]
                self.truncated = True
            paths = nxt
        return paths

    def stmt(self, s: ast.stmt, p: _Path) -> list[_Path]:
        ev = self.ev
        if isinstance(s, ast.Assign):
            self.record_launches(s.value, p)
            v = ev.eval(s.value, p.env)
            for t in s.targets:
                self.assign(t, v, s.value, p.env)
            return [p]
        if isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.record_launches(s.value, p)
                self.assign(s.target, ev.eval(s.value, p.env), s.value, p.env)
            return [p]
        if isinstance(s, ast.AugAssign):
            self.record_launches(s.value, p)
            if isinstance(s.target, ast.Name):
                node = ast.BinOp(left=ast.Name(s.target.id, ast.Load()), op=s.op, right=s.value)
                p.env[s.target.id] = ev.eval(node, p.env)
            return [p]
        if isinstance(s, ast.If):
            self.record_launches(s.test, p)
            t = ev.eval(s.test, p.env)
            if not isinstance(t, Unknown):
                return self.block(s.body if t else s.orelse, [p])
            cond = ast.unparse(s.test)
            yes, no = p.fork(cond), p.fork(f"not ({cond})")
            return self.block(s.body, [yes]) + self.block(s.orelse, [no])
        if isinstance(s, (ast.For, ast.AsyncFor)):
            self.record_launches(s.iter, p)
            self.assign(s.target, Unknown(ast.unparse(s.target)), None, p.env)
            paths = self.block(s.body, [p])
            return self.block(s.orelse, paths)
        if isinstance(s, ast.While):
            self.record_launches(s.test, p)
            paths = self.block(s.body, [p])
            return self.block(s.orelse, paths)
        if isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                self.record_launches(item.context_expr, p)
            return self.block(s.body, [p])
        if isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            paths = self.block(s.body, [p])
            paths = self.block(s.orelse, paths)
            for h in s.handlers:  # launches in handlers are still visible launches
                self.block(h.body, [_Path(dict(p.env), p.guards + [f"except {ast.unparse(h.type) if h.type else ''}".strip()])])
            return self.block(s.finalbody, paths)
        if isinstance(s, ast.Match):
            out: list[_Path] = []
            subj = ast.unparse(s.subject)
            for case in s.cases:
                out += self.block(case.body, [p.fork(f"match {subj}: case {ast.unparse(case.pattern)}")])
            return out
        if isinstance(s, (ast.Return, ast.Raise)):
            self.record_launches(getattr(s, "value", None) or getattr(s, "exc", None), p)
            p.done = True
            return [p]
        if isinstance(s, ast.Expr):
            self.record_launches(s.value, p)
            return [p]
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [p]  # nested definitions are walked separately when they are top level only
        self.record_launches(s, p)
        return [p]


def _module_env(tree: ast.Module, ev: Evaluator) -> dict[str, Any]:
    env: dict[str, Any] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            v = ev.eval(stmt.value, env)
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    env[t.id] = v
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            env[stmt.target.id] = ev.eval(stmt.value, env)
    return env


def _function_env(fn: ast.FunctionDef) -> dict[str, Any]:
    env: dict[str, Any] = {}
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for arg, d in list(zip(positional, defaults)) + list(zip(a.kwonlyargs, a.kw_defaults)):
        default = d.value if isinstance(d, ast.Constant) and isinstance(d.value, (bool, int, float)) else None
        kind = _kind(default) if default is not None else None
        if kind is None and arg.annotation is not None:
            ann = ast.unparse(arg.annotation)
            kind = {"bool": "bool", "int": "int", "float": "float"}.get(ann)
        env[arg.arg] = Unknown(arg.arg, kind, default)
    for extra in (a.vararg, a.kwarg):
        if extra is not None:
            env[extra.arg] = Unknown(extra.arg)
    return env


def _dedupe(launches: list[LaunchStatic]) -> list[LaunchStatic]:
    """One record per call site and argument values; guards that differ between merged paths drop out."""
    merged: dict[tuple, LaunchStatic] = {}
    for ln in launches:
        key = (ln.function, ln.line, ln.kernel,
               None if ln.args is None else tuple((a.known, a.value, type(a.value).__name__) for a in ln.args))
        if key in merged:
            kept = merged[key]
            kept.guards = [g for g in kept.guards if g in ln.guards]
        else:
            merged[key] = ln.model_copy(deep=True)
    return list(merged.values())


def find_launches(tree: ast.Module, names: TileNames, kernels: list[KernelStatic], notes: list[str]) -> list[LaunchStatic]:
    kernel_names = {k.name for k in kernels}
    kernel_defs = {k.function for k in kernels}
    ev = Evaluator(names, kernel_names, {})
    ev.module_env = _module_env(tree, ev)
    out: list[LaunchStatic] = []

    def walk_function(fn: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str) -> None:
        if fn.name in kernel_defs:
            return
        for dec in fn.decorator_list:
            if names.attr(dec if not isinstance(dec, ast.Call) else dec.func) == "function":
                return  # a tile helper, not host code
        w = HostWalker(ev, qualname, notes)
        w.block(fn.body, [_Path(_function_env(fn))])
        if w.truncated:
            notes.append(f"{qualname}: more than {MAX_PATHS} paths; later branches were not explored")
        out.extend(w.launches)

    module_level: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            walk_function(node, node.name)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    walk_function(item, f"{node.name}.{item.name}")
        else:
            module_level.append(node)
    w = HostWalker(ev, "<module>", notes)
    w.block(module_level, [_Path(dict(ev.module_env))])
    out.extend(w.launches)
    return _dedupe(out)


def find_factory_kernels(tree: ast.Module, names: TileNames) -> list[KernelStatic]:
    """@ct.kernel functions defined inside another function: made when it runs (a kernel factory)."""
    out: list[KernelStatic] = []
    for top in tree.body:
        scopes = [top] if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)) else (
            [n for n in top.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            if isinstance(top, ast.ClassDef) else [])
        for scope in scopes:
            for node in ast.walk(scope):
                if node is scope or not isinstance(node, ast.FunctionDef):
                    continue
                for dec in node.decorator_list:
                    ok, opts = _kernel_decorator(names, dec)
                    if ok:
                        out.append(_inspect_kernel(names, node, node.name, opts))
                        break
    return out


def inspect_source(tree: ast.Module) -> StaticInfo:
    """Kernels and launches of a parsed module."""
    names = TileNames(tree)
    notes: list[str] = []
    kernels = find_kernels(tree, names)
    launches = find_launches(tree, names, kernels, notes)
    factories = find_factory_kernels(tree, names)
    return StaticInfo(kernels=kernels + factories, launches=launches, notes=notes,
                      factory_kernels=[k.name for k in factories])


# ---------------------------------------------------------------------------------------------
# Module values: what a module-level name means, through the module's imports (added for the draft translator,
# issue #21, so that it folds constants with this evaluator instead of a second one)

DTYPE_NAMES = {"float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
               "uint32", "uint64", "bool_", "float8_e4m3fn", "float8_e5m2", "tfloat32"}
_TORCH_DTYPE_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "int": "int32",
                        "long": "int64", "short": "int16", "bool": "bool_"}
_MATH_CONSTANTS = {"pi", "e", "tau", "inf", "nan"}
_MATH_FUNCS = {"log", "log2", "log10", "exp", "exp2", "sqrt", "sin", "cos", "tan", "tanh", "atan", "floor", "ceil",
               "fabs", "pow", "erf", "log1p", "expm1", "isqrt", "gcd", "copysign"}


@dataclass(frozen=True)
class ModuleRef:
    """An imported module: `math`, `torch`, `numpy`, `cuda.tile` (or its alias), ..."""

    name: str


@dataclass(frozen=True)
class DTypeRef:
    """A dtype object (`ct.float16`, `torch.float16`, `torch.half`): its cuTile Python name."""

    name: str


@dataclass(frozen=True)
class TileRef:
    """A module-level alias of a cuda.tile name (`exp2 = ct.exp2`): the name inside cuda.tile."""

    attr: str


@dataclass(frozen=True)
class FunctionRef:
    """A function defined at the top level of a module file (a kernel's helper, maybe imported)."""

    path: str
    name: str


def _module_attr(mod: ModuleRef, attr: str) -> Any:
    if mod.name == "math" and attr in _MATH_CONSTANTS:
        return getattr(math, attr)
    if mod.name in ("torch", "cuda.tile", "numpy"):
        name = _TORCH_DTYPE_ALIASES.get(attr, attr) if mod.name == "torch" else attr
        if name == "bool" and mod.name == "numpy":
            name = "bool_"
        if name in DTYPE_NAMES:
            return DTypeRef(name)
        if mod.name == "cuda.tile":
            return TileRef(attr)
    return Unknown(f"{mod.name}.{attr}")


class ConstantEvaluator(Evaluator):
    """Evaluator, plus what module-level code reads: math constants and functions of constants, dtype objects of
    torch / numpy / cuda.tile, attributes of imported modules. Everything else is what Evaluator gives."""

    def _eval(self, node: ast.AST, env: dict[str, Any]) -> Any:
        if isinstance(node, ast.Attribute):
            base = self.eval(node.value, env)
            if isinstance(base, ModuleRef):
                return _module_attr(base, node.attr)
            if self.names.attr(node) in DTYPE_NAMES:
                return DTypeRef(self.names.attr(node))
            return Unknown(ast.unparse(node))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
            base = self.eval(node.func.value, env)
            if isinstance(base, ModuleRef) and base.name == "math" and node.func.attr in _MATH_FUNCS:
                args = [self.eval(a, env) for a in node.args]
                if all(isinstance(a, (int, float)) and not isinstance(a, bool) and abs(a) < 1e300 for a in args):
                    return getattr(math, node.func.attr)(*args)
                return Unknown(ast.unparse(node), "float")
        if isinstance(node, ast.Name) and node.id not in env and self.names.direct.get(node.id) in DTYPE_NAMES:
            return DTypeRef(self.names.direct[node.id])
        return super()._eval(node, env)


_MODULE_CACHE: dict[tuple[str, int, int], dict[str, Any]] = {}
_MAX_IMPORT_DEPTH = 8


def _import_target(path: Path, level: int, module: str | None) -> Path | None:
    """The file a relative import names (`from .x import y`, `from .. import x`), or None."""
    base = path.parent
    for _ in range(level - 1):
        base = base.parent
    if module:
        base = base.joinpath(*module.split("."))
        for cand in (base.with_suffix(".py"), base / "__init__.py"):
            if cand.is_file():
                return cand
        return None
    return base / "__init__.py" if (base / "__init__.py").is_file() else None


def module_values(path: str | Path, tree: ast.Module | None = None, _depth: int = 0) -> dict[str, Any]:
    """Every top-level name of the module file at `path` -> its value as ConstantEvaluator sees it: numbers and
    tuples folded through imports (relative imports of sibling modules followed, `math` evaluated), ModuleRef for
    modules, DTypeRef for dtype objects, FunctionRef for functions, Unknown for the rest. Never raises on a
    module it cannot read: its names are simply Unknown."""
    path = Path(path).resolve()
    try:
        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size)
    except OSError:
        return {}
    if tree is None and key in _MODULE_CACHE:
        return _MODULE_CACHE[key]
    if tree is None:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
            return {}
    names = TileNames(tree)
    ev = ConstantEvaluator(names, set(), {})
    env: dict[str, Any] = {}
    for alias in names.module_aliases:
        if "." not in alias:
            env[alias] = ModuleRef("cuda.tile")
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.name.startswith("cuda.tile") or a.name == "cuda":
                    continue  # TileNames resolves cuda.tile and its aliases
                env[a.asname or a.name.split(".")[0]] = ModuleRef(a.name if a.asname else a.name.split(".")[0])
        elif isinstance(stmt, ast.ImportFrom):
            if stmt.level == 0:
                for a in stmt.names:
                    if stmt.module == "math" and a.name in _MATH_CONSTANTS:
                        env[a.asname or a.name] = getattr(math, a.name)
                    elif stmt.module in ("torch", "numpy", "cuda.tile") and a.name != "*":
                        env[a.asname or a.name] = _module_attr(ModuleRef(stmt.module), a.name)
                    elif a.name != "*":
                        env[a.asname or a.name] = Unknown(f"{stmt.module}.{a.name}")
                continue
            target = _import_target(path, stmt.level, stmt.module)
            for a in stmt.names:
                if a.name == "*":
                    continue
                value: Any = Unknown(a.name)
                if target is not None and _depth < _MAX_IMPORT_DEPTH:
                    other = module_values(target, None, _depth + 1)
                    if a.name in other:
                        value = other[a.name]
                    else:  # `from . import sibling`: the module itself, its values through a namespace
                        sub = _import_target(path, stmt.level, f"{stmt.module}.{a.name}" if stmt.module else a.name)
                        if sub is not None:
                            value = ModuleRef(f"file:{sub}")
                env[a.asname or a.name] = value
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            env[stmt.name] = FunctionRef(str(path), stmt.name)
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                pairs = _unpacked(t, stmt.value)
                if pairs is None:
                    bind_target(t, ev.eval(stmt.value, env), stmt.value, env)
                for sub, node in pairs or ():  # `TM, TN = 64, 32` / `[A, B] = [1, 2]`: item by item
                    bind_target(sub, ev.eval(node, env), node, env)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            env[stmt.target.id] = ev.eval(stmt.value, env)
    if len(_MODULE_CACHE) > 256:
        _MODULE_CACHE.clear()
    _MODULE_CACHE[key] = env
    return env


def _unpacked(target: ast.AST, value: ast.AST) -> list[tuple[ast.AST, ast.AST]] | None:
    """(target, value) pairs of a tuple or list target over a tuple or list display of the same length."""
    if (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)
            and not any(isinstance(e, ast.Starred) for e in [*target.elts, *value.elts])):
        return list(zip(target.elts, value.elts))
    return None


def bind_target(target: ast.expr, value: Any, value_node: ast.expr | None, env: dict[str, Any]) -> None:
    """An assignment's effect on `env`: a name takes the value; a tuple or list of targets takes the items of a tuple
    value of that length, and otherwise each name (a starred one too) is Unknown (`m, n = x.shape` unpacks integers);
    attributes and subscripts have no tracked effect."""
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        n = len(target.elts)
        if isinstance(value, tuple) and len(value) == n:
            for t, v in zip(target.elts, value):
                bind_target(t, v, None, env)
        else:
            text = ast.unparse(value_node) if value_node is not None else "?"
            is_shape = isinstance(value_node, ast.Attribute) and value_node.attr in ("shape", "stride")
            for i, t in enumerate(target.elts):
                bind_target(t.value if isinstance(t, ast.Starred) else t,
                            Unknown(f"{text}[{i}]", "int" if is_shape else None), None, env)


_CT_NAMES = TileNames(ast.parse("import cuda.tile as ct"))


def fold_constant(node: ast.AST, env: dict[str, Any], tree: ast.Module | None = None) -> Any:
    """Stage A's evaluation of a constant expression over `env` (names -> values, e.g. a variant's ct.Constant
    values over the module's values): the value, or Unknown when it is not a compile-time constant. Without
    `tree`, `ct` names cuda.tile."""
    ev = ConstantEvaluator(TileNames(tree) if tree is not None else _CT_NAMES, set(), {})
    return ev.eval(node, env)


__all__ = ["inspect_source", "StaticInfo", "KernelStatic", "LaunchStatic", "ArgValue", "Unknown", "ModuleRef",
           "DTypeRef", "FunctionRef", "TileRef", "ConstantEvaluator", "module_values", "fold_constant"]
