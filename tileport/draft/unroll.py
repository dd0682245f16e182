"""`for ... in ct.static_iter(...)`: the loop cuTile Python unrolls at compile time, unrolled the same way.

cuTile evaluates the iterable at compile time (range, enumerate, zip, reversed over constants, tuples of tiles or
arrays; at most 1000 items) and inlines the body once per item with the target bound to it (cuda.tile `static_iter`).
The draft does exactly that: each item's body is translated in the enclosing scope, so a name keeps the value its
last item gave it, and a test on it is static per item. That is what makes an accumulator that starts as `None`
exact: `acc = None; for x in ct.static_iter(...): acc = t if acc is None else acc + t` is the first item's tile, then
`acc + t` per later item — the same operations, in the same order, as the reference. (In a run-time `for`, cuTile
Python rejects such a value: cuda-tile 1.7 `TypeCheckingError: Type of acc depends on path taken`.)
"""

from __future__ import annotations

import ast

from tileport.draft.values import Unsupported, Val

MAX_STATIC_ITEMS = 1000  # cuda.tile static_iter: "must not exceed some pre-defined number of iterations (currently, 1000)"


class UnrollOps:
    """Mixin of BodyTranslator: compile-time loops."""

    def static_for(self, stmt: ast.For) -> None:
        call = stmt.iter
        if len(call.args) != 1 or call.keywords:
            raise Unsupported("ct.static_iter with other than one iterable", call)
        if any(isinstance(n, (ast.Break, ast.Continue, ast.Return)) for st in stmt.body for n in ast.walk(st)):
            raise Unsupported("break / continue / return in a ct.static_iter loop", stmt,
                              "cuTile Python refuses them there too")
        outer = self.unroll_path
        try:
            for k, item in enumerate(self.static_items(call.args[0])):
                self.unroll_path = outer + ((id(stmt), k),)  # each item's statements bind values of their own
                self.bind_static_target(stmt.target, item, stmt)
                self.block(stmt.body)
        finally:
            self.unroll_path = outer

    def static_items(self, node: ast.expr) -> list[Val]:
        """The items of a compile-time iterable, each a translator value (a Python value or a tile/array)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords \
                and self._shadowed(node.func.id) is None:
            f, args = node.func.id, node.args
            if f == "range" and 1 <= len(args) <= 3:
                bounds = [self.static_int(a) for a in args]
                if len(bounds) == 3 and bounds[2] == 0:
                    raise Unsupported("ct.static_iter(range(...)) with a zero step", node)
                return [Val("py", value=i) for i in self._limited(range(*bounds), node)]
            if f == "reversed" and len(args) == 1:
                return list(reversed(self.static_items(args[0])))
            if f == "enumerate" and 1 <= len(args) <= 2:
                start = self.static_int(args[1]) if len(args) == 2 else 0
                return [_pair([Val("py", value=start + i), v]) for i, v in enumerate(self.static_items(args[0]))]
            if f == "zip" and args:
                return [_pair(list(vs)) for vs in zip(*(self.static_items(a) for a in args))]
        if isinstance(node, (ast.Tuple, ast.List)):
            return self._limited([self.expr(e, "") for e in node.elts], node)
        v = self.expr(node, "")
        if v.kind == "py" and isinstance(v.value, (tuple, list, range)):
            return [Val("py", value=x) for x in self._limited(v.value, node)]
        if v.kind == "tuple":
            return list(v.value)
        raise Unsupported("a ct.static_iter iterable that is not a compile-time sequence", node,
                          "range / enumerate / zip / reversed of constants, or a tuple of tiles or arrays")

    def static_int(self, node: ast.expr) -> int:
        """A compile-time int; a const generic asks for the entry to be written per its value (folded)."""
        v = self.expr(node, "")
        if v.kind == "py" and isinstance(v.value, int) and not isinstance(v.value, bool):
            return v.value
        if v.kind == "scalar":
            self.request_fold(node)
        raise Unsupported("a ct.static_iter bound that is not a compile-time integer", node)

    def bind_static_target(self, target: ast.expr, item: Val, stmt: ast.For) -> None:
        if isinstance(target, ast.Name):
            self.scopes[-1].names[target.id] = item
            return
        if isinstance(target, ast.Tuple) and all(isinstance(t, ast.Name) for t in target.elts):
            parts = ([Val("py", value=x) for x in item.value] if item.kind == "py" and isinstance(item.value, tuple)
                     else list(item.value) if item.kind == "tuple" else None)
            if parts is None or len(parts) != len(target.elts):
                raise Unsupported("unpacking a ct.static_iter item that is not a tuple of as many values", stmt)
            for t, part in zip(target.elts, parts):
                self.scopes[-1].names[t.id] = part
            return
        raise Unsupported("a ct.static_iter target that is not a name or a tuple of names", target)

    @staticmethod
    def _limited(items, node: ast.AST):
        if len(items) > MAX_STATIC_ITEMS:
            raise Unsupported(f"ct.static_iter over {len(items)} items", node,
                              f"cuTile Python unrolls at most {MAX_STATIC_ITEMS}")
        return items


def _pair(vals: list[Val]) -> Val:
    if all(v.kind == "py" for v in vals):
        return Val("py", value=tuple(v.value for v in vals))
    return Val("tuple", value=vals)
