"""Translate one `@ct.kernel` body (a Python AST) into the statements of one cutile-rs entry.

The constant branches the entry fixes are folded while translating (their conditions evaluate over the
entry's known constants); every other `ct.Constant` stays a name (a const generic). Statements outside the
subset become holes: a TILEPORT-HOLE region in the text (the contract in tileport/agents/holes.py) and a `Hole`
record, never guessed code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable

from tileport.draft.calls import CallOps
from tileport.draft.memory import MemoryOps
from tileport.draft.unroll import UnrollOps
from tileport.draft.placeholder import infer
from tileport.analysis.static import DTypeRef, FunctionRef, ModuleRef, fold_constant
from tileport.draft.values import (FLOATS, INTS, OP_DTYPE, RUST_DTYPE, Array, Lost, NeedsDtype, Unsupported,
                                          Val, View, constant_tile, literal, paren, shape_macro, tile_type)
from tileport.draft.syntax import (INDENT, CMP_FUNCS, ARITH_OPS, BIT_OPS, FMA_FLOATS, rust_name, dotted,
                                          names_assigned_in_loops, broadcast_shapes, fold_binop, fold_compare, opname,
                                          operand, EFFECTFUL, assigned_names, idents, range_end, describe,
                                          is_static_iter, assigns_before_reading)


@dataclass
class Scope:
    names: dict[str, Val] = field(default_factory=dict)
    loop: bool = False  # the body of a run-time `for` (an `if` branch: False)


@dataclass
class Prologue:
    """Partitions every load/store/num_tiles needs, hoisted to the top of the entry (they are loop-invariant)."""

    lines: list[str] = field(default_factory=list)
    views: dict[tuple, View] = field(default_factory=dict)
    used_names: set[str] = field(default_factory=set)
    view_names: set[str] = field(default_factory=set)


class BodyTranslator(MemoryOps, CallOps, UnrollOps):
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
        # a binding: (its assignment statement, the ct.static_iter items it is unrolled in)
        self.uses: dict[tuple, int] = {}  # binding -> how often its name is read
        self.fusable: set[tuple] = set()  # bindings of named products read by an add/sub (first pass)
        self.known_fusable: set[tuple] = set()
        self.known_uses: dict[tuple, int] | None = None  # the first pass' counts: deferring products needs them
        self.unroll_path: tuple = ()  # the ct.static_iter items being translated (loop statement, item index)
        self.pending: list[Val] = []  # products bound to a name but not written yet (their one use fuses them)
        self.mut_names: set[str] = set()
        self.stride_constants: dict[str, list[int | None]] = {}  # array -> static strides (1) or None
        self.helpers: set[int] = set()  # ranks whose tensor_strides_N compiler op the module needs
        self.computed_index = False
        self.approximations: list[str] = []  # named approximations this entry makes (the coverage table's)
        self.name_prefix = ""  # set while a helper function is inlined: its locals get their own names
        self.inline_depth = 0
        self.needs_dtype = False  # an op-dtype literal was needed: write the entry per concrete dtype
        self.shared_outputs: set[str] = set()  # rank > 3 outputs: `&Tensor` written through an unsafe PartitionMut
        self.fold_requests: set[str] = set()
        self.local_defs: dict[str, set[str]] = {}  # local name -> the names its assignments read (see request_fold)  # int constants a tile extent computes with: fold them per entry
        self.loops: list[list] = []  # open loops: [index of the `for` line, names varying with it, depth, counter, id]  # a load/store index the compiler may not prove in bounds (cuTile never traps)
        self.loop_assigned: dict[int, set[str]] = {}
        # output -> its view stores: (tile shape, per index component the bid axis / "0" / None, in a loop,
        # the view variable, the stored tile expression, the index as written, the ids of the loops around it,
        # whether an index is the innermost loop's counter)
        self.out_stores: dict[str, list[tuple]] = {}
        # array -> the token of its latest pointer store at the entry's top level: the next pointer access of that
        # array is ordered after it, as cuTile Python's token order does for accesses of one array
        self.ptr_tokens: dict[str, str] = {}
        self.carried_tokens: dict[str, str] = {}  # array -> the mutable Token its scatters in loops/branches carry

    # ---- names -------------------------------------------------------------------------------

    def lookup(self, name: str, node: ast.AST) -> Val:
        for scope in reversed(self.scopes):
            if name in scope.names:
                v = scope.names[name]
                if v.kind == "lost":
                    raise Lost(name, bool(v.extra.get("gap")))
                if "binding" in v.extra:
                    self.uses[v.extra["binding"]] = self.uses.get(v.extra["binding"], 0) + 1
                return v
        if name in self.generics:
            return Val("scalar", name, "i32", const_name=name)
        if name in self.folded:
            return Val("py", value=self.folded[name])
        if name in self.module_consts:
            return module_val(name, self.module_consts[name], node)
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
        if not self.loops or any(k in expr for k in EFFECTFUL):
            return None
        names = idents(expr)
        for i, loop in enumerate(self.loops):
            if not (names & loop[1]):
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
            later_loops = names_assigned_in_loops(body[i + 1:])
            try:
                self.statement(stmt, later_loops)
            except Unsupported as e:
                self.hole(e, stmt, later_loops)
            except Lost as lost:
                self.hole(Unsupported(f"a statement using `{lost.name}`, which an earlier hole leaves undefined",
                                      stmt, "write it with the hole it depends on", gap=lost.gap), stmt, later_loops)
            except (ArithmeticError, AttributeError, IndexError, KeyError, TypeError, ValueError,
                    RecursionError) as e:  # a translator bug on odd input: a hole that says so, never a traceback
                self.hole(Unsupported("a statement the draft translator failed on", stmt,
                                      f"{type(e).__name__}: {str(e)[:120]} (a tileport bug; please report it)"), stmt,
                          later_loops)

    def hole(self, e: Unsupported, stmt: ast.stmt, later_loops: set[str] = frozenset()) -> None:
        if isinstance(e, NeedsDtype):
            self.needs_dtype = True
        node = e.node or stmt
        if not hasattr(node, "lineno"):
            node = stmt
        e.node = node
        token = self.on_hole(e) or "@HOLE?@"
        col = getattr(node, "col_offset", 0) + 1
        reason = f"unsupported: {e.what} at {self.file}:{node.lineno}:{col}"
        if e.detail:
            reason += f" ({e.detail})"
        # the region a writer replaces (tileport/agents/holes.py reads it): the placeholder fails rustc with an
        # error naming the hole id (an undefined value `tileport_hole_<id>`)
        self.emit(f"// TILEPORT-HOLE {token} BEGIN {' '.join(reason.split())}")
        for i, line in enumerate(self.src_lines(stmt)):
            self.emit(f"// {'python: ' if i == 0 else '        '}{line}")
        self.pending.clear()  # a deferred product read by the hole's statement is the writer's to write
        typed = self.placeholder(stmt, token, later_loops)
        if typed is None:
            self.emit(f"tileport_hole_{token};")
        self.emit(f"// TILEPORT-HOLE {token} END")
        if typed is None:
            self.mark_lost(stmt, e.gap)

    def placeholder(self, stmt: ast.stmt, token: str, later_loops: set[str]) -> str | None:
        """`x = <expr>` as a hole: `x` bound to a typed placeholder (the region's last line, which fails rustc naming
        the hole), so later statements translate; None when the statement is not one assignment or its type
        cannot be told (see placeholder.py)."""
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            name, value = stmt.target.id, stmt.value
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            name = stmt.target.id
            value = ast.copy_location(ast.BinOp(left=ast.Name(name, ast.Load()), op=stmt.op, right=stmt.value), stmt)
        else:
            return None
        typed = infer(self, value)
        if typed is None or not typed[1] or (typed[0] == "tile" and not all(typed[2])):
            return None
        kind, dtype, shape = typed
        rust_t = tile_type(dtype, shape) if kind == "tile" else dtype
        current = self.find_outer(name)
        if current is not None and current[0].kind in ("tile", "scalar") and current[0].extra.get("mut") and \
                (current[0].dtype, current[0].shape) == (dtype, shape if kind == "tile" else current[0].shape):
            self.emit(f"{current[0].expr} = tileport_hole_{token};")  # a carried value keeps its binding
            return rust_t
        mut = "mut " if name in later_loops else ""
        rname = self.fresh(self.name_prefix + rust_name(name)) if self.name_prefix else rust_name(name)
        self.emit(f"let {mut}{rname}: {rust_t} = tileport_hole_{token};")
        self.define_in_loops(rname)
        self.prologue.used_names.add(rname)
        if mut:
            self.mut_names.add(rname)
        self.scopes[-1].names[name] = Val(kind, rname, dtype, shape if kind == "tile" else (),
                                          extra={"mut": bool(mut), "hole": token})
        return rust_t

    def mark_lost(self, stmt: ast.stmt, gap: bool = False) -> None:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.scopes[-1].names[node.id] = Val("lost", extra={"gap": gap})

    def src_lines(self, node: ast.AST) -> list[str]:
        """The statement's source lines (a compound statement: its first line), stripped."""
        first = getattr(node, "lineno", 0)
        last = first if isinstance(node, (ast.For, ast.If, ast.While, ast.With)) else \
            (getattr(node, "end_lineno", first) or first)
        return [self.source_lines[i - 1].strip() for i in range(first, last + 1)
                if 0 < i <= len(self.source_lines)] or [""]

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
                self.runtime_if(stmt)
                return
            self.block(stmt.body if cond else stmt.orelse)
            return
        if isinstance(stmt, ast.For):
            self.for_loop(stmt)
            return
        if isinstance(stmt, ast.Return) and stmt.value is None:
            self.emit("return;")
            return
        raise Unsupported(f"`{type(stmt).__name__.lower()}` statement", stmt)

    def runtime_if(self, stmt: ast.If) -> None:
        """`if` on a run-time scalar (cutile lowers a Rust `if` on a bool scalar to the same structured if).
        Values the branches reassign are carried: a `let mut` copy before the `if`, assigned inside; a name a
        branch defines anew is local to it (a later read of it is a hole)."""
        try:
            test = self.expr(stmt.test, "")
        except Unsupported as e:
            raise Unsupported("`if` on a run-time value", stmt, f"its test: {e.what}") from None
        if test.kind == "tile" and test.dtype == "bool" and test.shape in ((), ("1",)):
            # each step its own typed let: the cutile JIT reads tile_to_scalar's generics from the binding's type
            t = self.hoist("", "Tile<bool, { [] }>", test.expr if not test.shape else
                           f"{paren(test.expr)}.reshape(shape![])")
            cond = self.hoist("", "bool", f"tile_to_scalar({t})")
        elif test.kind == "scalar" and test.dtype == "bool":
            cond = test.expr
        else:
            raise Unsupported("`if` on a run-time value that is not a boolean scalar", stmt,
                              f"its test is {describe(test)}")
        if any(isinstance(n, (ast.Return, ast.Break, ast.Continue)) for st in stmt.body + stmt.orelse
               for n in ast.walk(st)):
            raise Unsupported("a return / break / continue inside an `if` on a run-time value", stmt)
        declared = []
        for name in sorted(assigned_names(stmt.body + stmt.orelse)):
            found = self.find_outer(name)
            if found is not None and found[0].kind == "py" and found[0].value is None and \
                    assigns_before_reading(stmt.body, name) and assigns_before_reading(stmt.orelse, name):
                # None before the `if` and set on every path through it (cuTile Python types it by its branches):
                # a `let mut` before the `if`, written once the first branch tells its type (`declare_pending`)
                rname = self.fresh(rust_name(name))
                self.emit(f"@DECL@ {rname}")
                self.scopes[found[1]].names[name] = Val("pending", rname, extra={"was": found[0]})
                declared.append((found[1], name, rname))
                continue
            if found is None or found[0].kind not in ("tile", "scalar") or found[0].extra.get("mut"):
                continue
            old = found[0]
            rname = self.fresh(rust_name(name))
            self.emit(f"let mut {rname}: {tile_type(old.dtype, old.shape) if old.kind == 'tile' else old.dtype} "
                      f"= {old.expr};")
            self.define_in_loops(rname)
            self.mut_names.add(rname)
            self.scopes[found[1]].names[name] = Val(old.kind, rname, old.dtype, old.shape, extra={"mut": True})
        self.flush_all_pending()
        self.emit(f"if {cond} {{")
        for i, branch in enumerate((stmt.body, stmt.orelse)):
            if i == 1:
                if not branch:
                    break
                self.emit("} else {")
            self.depth += 1
            self.scopes.append(Scope())
            self.block(branch)
            self.flush_all_pending()
            self.scopes.pop()
            self.depth -= 1
        self.emit("}")
        for at, name, rname in declared:
            v = self.scopes[at].names.get(name)
            if v is not None and v.kind == "pending":  # no branch bound it (each a hole): nothing to declare
                self.lines = [ln for ln in self.lines if ln.strip() != f"@DECL@ {rname}"]
                self.scopes[at].names[name] = Val("lost")

    def runtime_ifexp(self, node: ast.IfExp, hint: str) -> Val:
        """`a if c else b` on a run-time scalar `c`: a Rust `if` expression yielding a value of one type (cutile
        compiles an if/else with a result, as cuTile Python's if with yields)."""
        test = self.expr(node.test, "")
        if test.kind == "scalar" and test.dtype == "bool":
            cond = test.expr
        elif test.kind == "tile" and test.dtype == "bool" and all(d == "1" for d in test.shape):
            t = self.hoist("", "Tile<bool, { [] }>", test.expr if not test.shape else
                           f"{paren(test.expr)}.reshape(shape![])")
            cond = self.hoist("", "bool", f"tile_to_scalar({t})")
        else:
            raise Unsupported("a conditional expression on a run-time value that is not a boolean scalar", node)
        name = self.fresh(hint or "sel")
        at = len(self.lines)
        self.emit(f"@IFEXP@ {name}")
        self.flush_all_pending()
        vals = []
        for i, branch in enumerate((node.body, node.orelse)):
            if i:
                self.emit("} else {")
            self.depth += 1
            saved = self.loops
            self.loops = []  # nothing inside a branch moves out of it
            try:
                v = self.expr(branch, "")
            finally:
                self.loops = saved
            if v.kind == "py" and vals:
                v = self.materialize(v, vals[0], branch)
            if v.kind not in ("tile", "scalar"):
                self.depth -= 1
                raise Unsupported("a conditional expression whose branches are not both tiles or scalars", node)
            self.emit(v.expr)
            self.depth -= 1
            vals.append(v)
        a, b = vals
        if (a.kind, a.dtype, a.shape) != (b.kind, b.dtype, b.shape):
            raise Unsupported("a conditional expression whose branches differ in type", node,
                              f"{describe(a)} vs {describe(b)}")
        rust_t = tile_type(a.dtype, a.shape) if a.kind == "tile" else a.dtype
        self.lines[at] = self.lines[at].replace(f"@IFEXP@ {name}", f"let {name}: {rust_t} = if {cond} {{")
        self.emit("};")
        self.define_in_loops(name)
        self.last_hoist = None
        return Val(a.kind, name, a.dtype, a.shape)

    def flush_all_pending(self) -> None:
        """Deferred products are written before a branch: a use inside it must not move them into it."""
        for d in list(self.pending):
            self.pending.remove(d)
            if d.extra.get("fused"):
                continue
            name = self.fresh(d.extra["name"])
            self.emit(f"let {name}: {tile_type(d.dtype, d.shape)} = {d.expr};")
            d.expr = name
            d.extra.pop("mul", None)

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
            v = self.expr(value, "")  # a helper returning a tuple (`bidx, bidy = swizzle_2d(...)`), a constant tuple
            if v.kind == "py" and isinstance(v.value, tuple) and len(v.value) == len(names):
                vals = [Val("py", value=x) for x in v.value]
            elif v.kind == "tuple" and len(v.value) == len(names):
                vals = list(v.value)
            else:
                raise Unsupported("unpacking a value that is not a tuple of as many items", stmt)
            for name, item in zip(names, vals):
                self.last_hoist = None  # an item's temporary may be read by another item: keep every line
                self.bind(name, item, value, later_loops, stmt)
            return
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
        except NeedsDtype:
            raise  # static once the entry is written per concrete dtype
        except (Unsupported, Lost):
            return None
        if v.kind == "py":
            return bool(v.value)
        return None

    def assign(self, name: str, node: ast.expr, later_loops: set[str], stmt: ast.stmt) -> None:
        self.bind(name, self.expr(node, rust_name(name)), node, later_loops, stmt)

    def bind(self, name: str, v: Val, node: ast.expr, later_loops: set[str], stmt: ast.stmt) -> None:
        if v.kind == "tuple":
            raise Unsupported(f"binding a tuple of run-time values to `{name}`", stmt)
        if self.last_hoist and v.expr == self.last_hoist[0] and len(self.lines) == self.last_hoist[2]:
            # the value's own typed temporary is the last line: bind the Python name directly instead
            self.lines.pop()
            v = Val(v.kind, self.last_hoist[1], v.dtype, v.shape, v.value, v.const_name)
        self.last_hoist = None
        current = self.find_outer(name)
        if current is not None and current[0].kind == "pending":
            current = self.declare_pending(name, current, v, stmt)
        if current is not None and current[0].kind == "py" and current[0].value is None \
                and current[1] < len(self.scopes) - 1 and v.kind in ("tile", "scalar"):
            if any(sc.loop for sc in self.scopes[current[1] + 1:]):
                raise Unsupported(f"`{name}` starts as None and becomes {describe(v)} inside a run-time loop", stmt,
                                  "cuTile Python rejects it too (cuda-tile 1.7: `Type of "
                                  f"{name} depends on path taken`); in a ct.static_iter loop the draft unrolls it")
            current = None  # None outside this `if` branch, which does not set it on every path: local to it
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
                raise Unsupported(f"loop-carried `{name}` changes type ({describe(old)} -> {describe(v)})", stmt)
            if not old.extra.get("mut"):
                raise Unsupported(f"loop-carried `{name}` not declared mutable", stmt)
            self.emit(f"{old.expr} = {v.expr};")
            return
        mut = "mut " if name in later_loops else ""
        rname = rust_name(name)
        if self.name_prefix:  # an inlined helper's local: its own name, never shadowing the caller's
            rname = self.fresh(self.name_prefix + rname)
        self.flush_pending(rname)
        key = (id(stmt), self.unroll_path)
        if (not mut and v.kind == "tile" and v.extra.get("mul") and self.known_uses is not None
                and self.known_uses.get(key) == 1 and key in self.known_fusable and not (idents(" ".join(v.extra["mul"])) & self.mut_names)):
            # a product read exactly once: keep it unwritten so that read can contract it into an fma
            deferred = Val("tile", f"{operand(v.extra['mul'][0])} * {operand(v.extra['mul'][1])}", v.dtype,
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
        if not mut and v.kind == "scalar" and v.extra.get("bid") is not None:
            extra["bid"] = v.extra["bid"]  # a name bound to ct.bid(axis): a store index the launch grid can own
        if not mut and v.kind == "tile" and v.extra.get("mul"):
            extra["mul_named"] = True
        self.scopes[-1].names[name] = Val(v.kind, rname, v.dtype, v.shape, extra=extra, const_name=None)

    def declare_pending(self, name: str, current: tuple[Val, int], v: Val, stmt: ast.stmt) -> tuple[Val, int]:
        """The first value a run-time `if` gives a name that was None before it: the `let mut` before the `if` gets
        its type and a typed zero no path reads (every path sets it before reading it: `assigns_before_reading`)."""
        pending, at = current
        if v.kind not in ("tile", "scalar"):
            raise Unsupported(f"`{name}` starts as None and becomes a {v.kind} value in a run-time `if`", stmt,
                              "only a tile or a scalar can be carried out of a run-time `if`")
        rname = pending.expr
        rust_t = tile_type(v.dtype, v.shape) if v.kind == "tile" else v.dtype
        zero = literal(0, v.dtype, stmt)
        init = f"constant({zero}, {shape_macro(v.shape)})" if v.kind == "tile" else zero
        marker = f"@DECL@ {rname}"
        k = next(i for i in range(len(self.lines) - 1, -1, -1) if self.lines[i].strip() == marker)
        self.lines[k] = self.lines[k].replace(marker, f"let mut {rname}: {rust_t} = {init};")
        self.define_in_loops(rname)
        self.mut_names.add(rname)
        declared = Val(v.kind, rname, v.dtype, v.shape, extra={"mut": True})
        self.scopes[at].names[name] = declared
        return declared, at

    def flush_pending(self, rname: str) -> None:
        """A deferred product whose operands `let {rname}` is about to shadow is written out first."""
        for d in list(self.pending):
            if d.extra.get("fused"):
                self.pending.remove(d)
            elif rname in idents(" ".join(d.extra["mul"])):
                name = self.fresh(d.extra["name"])
                self.emit(f"let {name}: {tile_type(d.dtype, d.shape)} = {d.expr};")
                d.expr = name
                d.extra.pop("mul", None)
                self.pending.remove(d)

    def materialize(self, v: Val, like: Val, node: ast.AST) -> Val:
        if like.kind == "scalar":
            return Val("scalar", literal(v.value, like.dtype, node), like.dtype)
        return self.tile(like.dtype, like.shape, constant_tile(v.value, like.dtype, like.shape, node))

    def find_outer(self, name: str) -> tuple[Val, int] | None:
        for i in range(len(self.scopes) - 1, -1, -1):
            if name in self.scopes[i].names:
                return self.scopes[i].names[name], i
        return None

    def for_loop(self, stmt: ast.For) -> None:
        if stmt.orelse:
            raise Unsupported("`for ... else`", stmt)
        if is_static_iter(stmt):
            self.static_for(stmt)
            return
        if not isinstance(stmt.target, ast.Name):
            raise Unsupported("a `for` target that is not a name", stmt)
        it = stmt.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and not it.keywords and 1 <= len(it.args) <= 3):
            raise Unsupported("a `for` loop over something other than range(...)", stmt.iter)
        bound_vals = [self.expr(a, "") for a in it.args]
        args = [self.index_scalar(v, a, bound=True) for v, a in zip(bound_vals, it.args)]
        if len(args) == 1:
            head = f"0i32..{range_end(args[0])}"
        else:
            head = f"{args[0]}..{range_end(args[1])}"
        if len(args) == 3:
            head = f"({head}).step_by({paren(args[2])} as usize)"
        var = rust_name(stmt.target.id)
        # loop-carried (mutable) variables and the loop variable vary with the loop
        carried = {rust_name(n) for n in assigned_names(stmt.body)}
        self.loops.append([len(self.lines), carried | {var}, self.depth, var, id(stmt)])
        self.define_in_loops(var)
        self.emit(f"for {var} in {head} {{")
        self.loops[-1][0] = len(self.lines) - 1
        self.depth += 1
        # the compiler proves an index in range when it walks 0..num_tiles(view, axis); other trip counts it checks
        counted = len(it.args) == 1 and bool(bound_vals[0].extra.get("tile_count"))
        self.scopes.append(Scope({stmt.target.id: Val("scalar", var, "i32", extra={"index_ok": counted})}, loop=True))
        self.block(stmt.body)
        self.scopes.pop()
        self.depth -= 1
        self.loops.pop()
        self.emit("}")

    # ---- memory statements -------------------------------------------------------------------


    # ---- expressions -------------------------------------------------------------------------

    def expr(self, node: ast.expr, hint: str) -> Val:
        if isinstance(node, ast.Constant):
            if node.value is None or isinstance(node.value, (bool, int, float)):
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
            if all(v.kind in ("scalar", "py") and (v.kind != "scalar" or v.dtype == "bool") for v in vals):
                sym = " && " if isinstance(node.op, ast.And) else " || "
                return Val("scalar", sym.join(operand(v.expr) if v.kind == "scalar" else
                                              ("true" if v.value else "false") for v in vals), "bool")
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
                return self.runtime_ifexp(node, hint)
            return self.expr(node.body if c else node.orelse, hint)
        raise Unsupported(f"a {type(node).__name__} expression", node)

    def attribute(self, node: ast.Attribute) -> Val:
        chain = dotted(node)
        if chain and chain[0] == "ct" and len(chain) == 2 and chain[1] in RUST_DTYPE:
            return Val("dtype", value=RUST_DTYPE[chain[1]])
        if chain and chain[0] == "ct" and len(chain) == 3 and chain[1] in ("PaddingMode", "RoundingMode"):
            return Val("enum", value=(chain[1], chain[2]))
        base = self.expr(node.value, "")
        if base.kind == "module":
            return module_val(ast.unparse(node), fold_constant(node, {chain[0]: base.value} if chain else {}), node)
        if base.kind == "array" and node.attr == "dtype":
            return Val("dtype", value=base.value.dtype)
        if base.kind == "tile" and node.attr == "dtype":
            return Val("dtype", value=base.dtype)
        if base.kind == "array" and node.attr == "shape":
            return Val("shape_of", value=base.value)
        if base.kind == "array" and node.attr == "ndim":  # static per variant: folded
            return Val("py", value=base.value.ndim)
        if base.kind == "tile" and node.attr == "ndim":
            return Val("py", value=len(base.shape))
        if base.kind == "tile" and node.attr == "shape" and all(d.isdigit() for d in base.shape):
            return Val("py", value=tuple(int(d) for d in base.shape))
        raise Unsupported(f"the attribute `.{node.attr}`", node)

    def subscript(self, node: ast.Subscript) -> Val:
        base = self.expr(node.value, "")
        if base.kind == "tile" and _is_expand_index(node.slice):
            return self.expand_index(base, node)
        if base.kind in ("shape_of", "py") and isinstance(node.slice, ast.Slice):
            # `X.shape[-2:]`, a constant tuple's slice: the items, as Python slices them
            bounds = [None if b is None else self.expr(b, "") for b in (node.slice.lower, node.slice.upper,
                                                                         node.slice.step)]
            if any(b is not None and not (b.kind == "py" and isinstance(b.value, int)) for b in bounds):
                raise Unsupported("a slice with bounds that are not constant ints", node)
            sl = slice(*[None if b is None else b.value for b in bounds])
            if base.kind == "py":
                return Val("py", value=base.value[sl])
            arr: Array = base.value
            return Val("tuple", value=[Val("scalar", f"{arr.name}.shape()[{k}]", "i32")
                                       for k in range(arr.ndim)[sl]])
        idx = self.expr(node.slice, "")
        if base.kind == "shape_of" and idx.kind == "py" and isinstance(idx.value, int):
            arr: Array = base.value
            axis = idx.value + arr.ndim if idx.value < 0 else idx.value
            return Val("scalar", f"{arr.name}.shape()[{axis}]", "i32")
        if base.kind == "py" and idx.kind == "py":
            return Val("py", value=base.value[idx.value])
        raise Unsupported("indexing (`x[...]`) other than array.shape[i]", node)

    def expand_index(self, base: Val, node: ast.Subscript) -> Val:
        """`t[:, None]`, `t[None, :]`, `t[None]`, `t[..., None]`: cuTile's Tile.__getitem__ is expand_dims (a new
        axis of extent 1 at each None; `:` keeps an axis; `...` stands for the axes not named)."""
        items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        kept = sum(1 for i in items if isinstance(i, ast.Slice))
        ell = [k for k, i in enumerate(items) if isinstance(i, ast.Constant) and i.value is Ellipsis]
        if len(ell) > 1 or kept > len(base.shape) or (not ell and kept != len(base.shape) and kept):
            raise Unsupported("a tile index other than `:` / None / `...` per axis", node)
        if ell:
            fill = len(base.shape) - kept
            items = items[:ell[0]] + [ast.Slice()] * fill + items[ell[0] + 1:]
        elif not kept:
            items = items + [ast.Slice()] * len(base.shape)
        shape: list[str] = []
        axes = iter(base.shape)
        for i in items:
            shape.append("1" if isinstance(i, ast.Constant) and i.value is None else next(axes))
        return Val("tile", f"{paren(base.expr)}.reshape({shape_macro(tuple(shape))})", base.dtype, tuple(shape))

    # binary arithmetic, with NumPy-style broadcasting made explicit
    def binop(self, node: ast.BinOp, hint: str) -> Val:
        a, b = self.expr(node.left, ""), self.expr(node.right, "")
        op = type(node.op)
        if a.kind == "py" and b.kind == "py":
            return Val("py", value=fold_binop(op, a.value, b.value, node))
        if op is ast.MatMult:
            return self.matmul(a, b, node, hint)
        if op in BIT_OPS:
            return self.elementwise(a, b, node, lambda x, y, d: f"{paren(x)} {BIT_OPS[op]} {paren(y)}",
                                    bool_ok=True)
        if op in (ast.FloorDiv, ast.Mod):
            return self.int_divmod(op, a, b, node, hint)
        if op not in ARITH_OPS:
            raise Unsupported(f"the operator {opname(op)}", node)
        sym = ARITH_OPS[op]
        if a.kind in ("scalar", "py") and b.kind in ("scalar", "py"):
            dtype = self.scalar_dtype(a, b, op)
            x, y = self.as_scalar(a, dtype, node, hint), self.as_scalar(b, dtype, node, hint)
            return Val("scalar", f"{operand(x)} {sym} {operand(y)}", dtype, extra=_static_of(a, b))
        if op is ast.Div:
            for v in (a, b):
                if v.kind == "tile" and v.dtype in INTS:
                    raise Unsupported("true division of integer tiles", node)
        if op in (ast.Add, ast.Sub):
            fused = self.fuse_fma(op, a, b, node)
            if fused is not None:
                return fused
        res = self.elementwise(a, b, node, lambda x, y, d: f"{operand(x)} {sym} {operand(y)}")
        if op is ast.Mult and (res.dtype in FMA_FLOATS):
            res.extra["mul"] = tuple(res.extra["operands"])
        return res

    def fuse_fma(self, op: type, a: Val, b: Val, node: ast.AST) -> Val | None:
        """cuTile Python contracts a float multiply whose only use is an add/sub into one fma (its
        rewrite_patterns pass, same rounding and ftz); write the same op so the IR, and the rounding, match."""
        tiles = [v for v in (a, b) if v.kind == "tile"]
        if not tiles:
            return None
        dtype = tiles[0].dtype
        if dtype not in FMA_FLOATS or any(t.dtype != dtype for t in tiles):
            return None
        shape = broadcast_shapes([t.shape for t in tiles], node)
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
            return self.tile_divmod(op, a, b, node, hint)
        for v, side in ((a, node.left), (b, getattr(node, "right", None))):
            if v.kind == "scalar" and v.const_name:
                # a const generic on a 0-d tile (scalar_to_tile) is no scalar element to the cutile JIT (measured:
                # "expected a scalar element type"); cuTile folds the constant: fold it per entry
                self.fold_requests.add(v.const_name)
            elif v.kind == "scalar" and side is not None:
                self.fold_if_static(side)  # `tiles_n = ct.cdiv(N, TILE_N)`: constant per variant, folded by cuTile
        x, y = self.as_scalar(a, "i32", node, hint), self.as_scalar(b, "i32", node, hint)
        if (a.kind == "scalar" and a.dtype != "i32") or (b.kind == "scalar" and b.dtype != "i32"):
            raise Unsupported(f"the operator {opname(op)} on floats", node)
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
            if b.kind == "py":  # a constant divisor's sign is known: cuTile folds `y < 0` to a constant
                neg = self.hoist("", "Tile<bool, { [] }>", constant_tile(b.value < 0, "bool", ()))
            else:
                neg = f"lt_tile({ty}, {zero})"
            fix = self.hoist("", "Tile<bool, { [] }>", f"(lt_tile({r}, {zero}) ^ {neg}) & ne_tile({r}, {zero})")
            t = self.hoist("", t0, f"select({fix}, {r} + {ty}, {r})")
        return Val("scalar", self.hoist(hint, "i32", f"tile_to_scalar({t})"), "i32")

    def tile_divmod(self, op: type, a: Val, b: Val, node: ast.AST, hint: str) -> Val:
        """// and % on integer tiles, rounding toward negative infinity as Python (and cuTile Python) do: divi
        rounding<negative_inf>; remi plus the sign fix-up."""
        tiles = [v for v in (a, b) if v.kind == "tile"]
        dtype = tiles[0].dtype
        if dtype not in INTS:
            raise Unsupported(f"the operator {opname(op)} on {dtype} tiles", node)
        shape = broadcast_shapes([t.shape for t in tiles], node)
        x, y = self.to_tile(a, dtype, shape, node), self.to_tile(b, dtype, shape, node)
        tt = tile_type(dtype, shape)
        if op is ast.FloorDiv:
            return self.tile(dtype, shape, f"divi({x}, {y}, rounding::NegativeInf)", hint)
        tx, ty = self.hoist("", tt, x), self.hoist("", tt, y)
        r = self.hoist("", tt, f"remi({tx}, {ty})")
        zero = self.hoist("", tt, f"constant({literal(0, dtype, node)}, {shape_macro(shape)})")
        fix = self.hoist("", tile_type("bool", shape),
                         f"(lt_tile({r}, {zero}) ^ lt_tile({ty}, {zero})) & ne_tile({r}, {zero})")
        return self.tile(dtype, shape, f"select({fix}, {r} + {ty}, {r})", hint)

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
        self.fold_as_float(v, dtype)
        return self.hoist(f"{hint}_{dtype}" if hint else "", dtype, f"convert_scalar({v.expr})")

    def fold_if_static(self, node: ast.AST) -> None:
        """When `node` computes from ct.Constant ints and module constants only (through the locals it reads),
        ask for those constants to be folded: cuTile Python folds the value, and so does the entry."""
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        seen: set[str] = set()
        leaves: set[str] = set()
        while names - seen:
            name = (names - seen).pop()
            seen.add(name)
            if name in self.local_defs:
                names |= self.local_defs[name]
            else:
                leaves.add(name)
        if leaves and all(n in self.generics or n in self.module_consts or n in ("ct", "min", "max")
                          for n in leaves) and leaves & self.generics:
            self.fold_requests |= leaves & self.generics

    def fold_as_float(self, v: Val, dtype: str) -> None:
        """An int ct.Constant meeting floats: cuTile Python folds it to a float constant (`x / N` divides by the
        constant N.0, no int-to-float conversion), so the entry is written per value of it and it folds."""
        if dtype in FLOATS and (v.const_name or v.extra.get("static")):
            self.fold_requests |= {v.const_name} if v.const_name else set(v.extra["static"])

    def elementwise(self, a: Val, b: Val, node: ast.AST, render, bool_ok: bool = False,
                    dtype: str | None = None, extra: list[Val] | None = None) -> Val:
        """Broadcast a and b to one tile type (tiles decide the dtype; scalars/literals follow) and render."""
        vals = [a, b] + (extra or [])
        tiles = [v for v in vals if v.kind == "tile"]
        if not tiles:
            raise Unsupported("an elementwise op on scalars only", node)
        if dtype is None and len({t.dtype for t in tiles}) > 1:
            # cuTile Python promotes mixed operands (promote_dtypes: f16/bf16 with f32 -> f32, narrower ints to the
            # wider) and casts the other with astype: the same convert_tile here
            dtype = self.promoted(tiles, node)
            a, b = (self.cast_to(v, dtype) for v in (a, b))
            extra = [self.cast_to(v, dtype) for v in (extra or [])]
            tiles = [v for v in [a, b] + extra if v.kind == "tile"]
        dtype = dtype or tiles[0].dtype
        for t in tiles:
            if t.dtype != dtype:
                raise Unsupported("mixing tile dtypes without astype", node, f"{t.dtype} vs {dtype}")
        if dtype == "bool" and not bool_ok:
            raise Unsupported("arithmetic on boolean tiles", node)
        shape = broadcast_shapes([t.shape for t in tiles], node)
        exprs = [self.to_tile(v, dtype, shape, node) for v in (a, b)]
        return Val("tile", render(exprs[0], exprs[1], dtype), dtype, shape, extra={"operands": exprs})

    def promoted(self, tiles: list[Val], node: ast.AST) -> str:
        dts = {t.dtype for t in tiles}
        if OP_DTYPE in dts:
            raise NeedsDtype("mixed dtypes with the op dtype", node, "promotion needs a concrete dtype")
        for order in (("f16", "f32", "f64"), ("bf16", "f32", "f64"), ("i8", "i16", "i32", "i64"),
                      ("u8", "u16", "u32", "u64")):
            if dts <= set(order):
                return max(dts, key=order.index)
        raise Unsupported("mixing tile dtypes without astype", node, " vs ".join(sorted(dts)))

    def cast_to(self, v: Val, dtype: str) -> Val:
        if v.kind != "tile" or v.dtype == dtype:
            return v
        return self.tile(dtype, v.shape, f"convert_tile({v.expr})")

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
            c = self.hoist("", tile_type(dtype, ()), constant_tile(v.value, dtype, (), node))
            if not shape:
                return c
            return self.to_tile(Val("tile", c, dtype, ()), dtype, shape, node)
        if v.kind == "scalar":
            s = v.expr
            if v.dtype != dtype:
                if dtype == OP_DTYPE or dtype == "bool":
                    raise Unsupported(f"a {v.dtype} scalar combined with a {dtype} tile", node)
                self.fold_as_float(v, dtype)
                s = self.hoist("", dtype, f"convert_scalar({v.expr})")
            if not shape:
                return self.hoist("", tile_type(dtype, ()), f"scalar_to_tile({s})")
            if v.const_name:  # a const generic: cutile lowers its .broadcast without the rank change (tileiras
                # rejects it), so go through a 0-d tile, as a tile operand does
                t0 = self.hoist("", tile_type(dtype, ()), f"scalar_to_tile({s})")
                return self.to_tile(Val("tile", t0, dtype, ()), dtype, shape, node)
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
        if isinstance(node.op, ast.Invert) and v.kind == "tile":
            return self.invert(v, node)
        raise Unsupported(f"the unary operator {type(node.op).__name__}", node)

    def compare(self, op: ast.cmpop, a: Val, b: Val, node: ast.AST, hint: str) -> Val:
        if isinstance(op, (ast.Is, ast.IsNot)):
            return Val("py", value=self.is_none(a, b, node) == isinstance(op, ast.Is))
        if a.kind == "dtype" and b.kind == "dtype" and isinstance(op, (ast.Eq, ast.NotEq)):
            if (a.value == OP_DTYPE) != (b.value == OP_DTYPE):
                # a dtype switch on the op dtype (`ct.tfloat32 if A.dtype == ct.float32 else A.dtype`): static per
                # variant, so the entry is written once per concrete dtype and the test folds there
                raise NeedsDtype("a test of the op dtype", node, "the entry is specialised per dtype")
            return Val("py", value=(a.value == b.value) == isinstance(op, ast.Eq))
        if a.kind == "py" and b.kind == "py":
            return Val("py", value=fold_compare(op, a.value, b.value))
        if type(op) not in CMP_FUNCS:
            raise Unsupported(f"the comparison {type(op).__name__}", node)
        if a.kind != "tile" and b.kind != "tile":
            if a.kind in ("scalar", "py") and b.kind in ("scalar", "py"):
                dtype = self.scalar_dtype(a, b)
                x, y = self.as_scalar(a, dtype, node, ""), self.as_scalar(b, dtype, node, "")
                return Val("scalar", f"{operand(x)} {_CMP_SYM[type(op)]} {operand(y)}", "bool")
            raise Unsupported("a comparison of run-time scalars", node)
        dtype = a.dtype if a.kind == "tile" else b.dtype
        fn = CMP_FUNCS[type(op)]
        res = self.elementwise(a, b, node, lambda x, y, d: f"{fn}({x}, {y})", bool_ok=True, dtype=dtype)
        return Val("tile", res.expr, "bool", res.shape)

    def is_none(self, a: Val, b: Val, node: ast.AST) -> bool:
        """`x is None` with either side the constant None: static per variant. An array parameter is a tensor in
        every variant the draft writes (a launch passing None fixes that parameter to the constant None)."""
        for x, y in ((a, b), (b, a)):
            if y.kind == "py" and y.value is None:
                if x.kind == "py":
                    return x.value is None
                if x.kind in ("array", "tile", "scalar", "view", "dtype", "enum"):
                    return False
        raise Unsupported("an `is` test that is not against None", node)

    # ---- calls -------------------------------------------------------------------------------


    # ct.* functions ------------------------------------------------------------------------------


# ---- helpers ------------------------------------------------------------------------------------

def module_val(name: str, value: Any, node: ast.AST) -> Val:
    """A module-level value (stage A's evaluator, through the module's imports) as a translator value."""
    if isinstance(value, (bool, int, float)) or (isinstance(value, tuple) and all(
            isinstance(v, (bool, int, float)) for v in value)):
        return Val("py", value=value)
    if isinstance(value, DTypeRef) and value.name in RUST_DTYPE:
        return Val("dtype", value=RUST_DTYPE[value.name])
    if isinstance(value, FunctionRef):
        return Val("function", value=value)
    if isinstance(value, ModuleRef):
        return Val("module", value=value)
    alias = _tile_alias(value)
    if alias is not None:
        return alias
    raise Unsupported(f"name `{name}`", node, "a module-level value that is not a compile-time constant "
                      f"({getattr(value, 'expr', type(value).__name__)})")


def _static_of(a: Val, b: Val) -> dict:
    """extra["static"]: the const generics a scalar computed only from them (and literals) depends on."""
    deps: set[str] = set()
    for v in (a, b):
        if v.kind == "py":
            continue
        if v.const_name:
            deps.add(v.const_name)
        elif v.extra.get("static"):
            deps |= set(v.extra["static"])
        else:
            return {}
    return {"static": sorted(deps)} if deps else {}


_CMP_SYM = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def _is_expand_index(index: ast.expr) -> bool:
    items = index.elts if isinstance(index, ast.Tuple) else [index]
    plain = all((isinstance(i, ast.Slice) and i.lower is None and i.upper is None and i.step is None)
                or (isinstance(i, ast.Constant) and (i.value is None or i.value is Ellipsis)) for i in items)
    return plain and any(isinstance(i, ast.Constant) and i.value is None for i in items)


def _tile_alias(value: Any) -> Val | None:
    """A module-level alias of a cuda.tile enum member or dtype (`PAD_ZERO = ct.PaddingMode.ZERO`): stage A's
    evaluator keeps its source text; the member it names is the value (the same one cuTile Python reads)."""
    text = getattr(value, "expr", None)
    if not isinstance(text, str):
        return None
    parts = text.split(".")
    if len(parts) >= 3 and parts[-2] in ("PaddingMode", "RoundingMode") and parts[0] in ("ct", "cuda", "tile"):
        return Val("enum", value=(parts[-2], parts[-1]))
    if len(parts) >= 2 and parts[-1] in RUST_DTYPE and parts[0] in ("ct", "cuda", "tile"):
        return Val("dtype", value=RUST_DTYPE[parts[-1]])
    return None


__all__ = ["BodyTranslator", "INDENT", "Lost", "Unsupported", "rust_name"]
