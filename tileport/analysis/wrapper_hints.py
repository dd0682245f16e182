"""What a wrapper's own source says about its tensor parameters, for capture's built inputs (AST only).

* rank: `a, b, c, d = x.shape` (exactly 4), `x.shape[3]` / `x.size(3)` / `x.stride(3)` (at least 4),
  `x.shape[-3]` / `x.size(-3)` (at least 3), `x.dim() == 3` / `x.ndim == 3` (exactly 3);
* dtype: `x.dtype == torch.float32`, `x.dtype in (torch.int32, torch.int64)`, `x.dtype is torch.bfloat16`
  (in an assert, an if or anywhere): the dtypes each parameter may take, in the order written.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

RANK_CAP = 6


@dataclass
class Hints:
    exact: dict[str, int] = field(default_factory=dict)  # parameter -> its rank, when unpacked or compared
    at_least: dict[str, int] = field(default_factory=dict)  # parameter -> the smallest rank its indexing allows
    dtypes: dict[str, list[str]] = field(default_factory=dict)  # parameter -> the dtypes its checks name

    def rank(self, name: str) -> int | None:
        if name in self.exact:
            return self.exact[name]
        return self.at_least.get(name)


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _shape_of(node: ast.AST) -> str | None:
    """`x.shape` -> "x"."""
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        return _name(node.value)
    return None


def _int(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _int(node.operand)
        return -v if v is not None else None
    return None


def _torch_dtype(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
        return node.attr
    return None


def hints_for(fn: Any) -> Hints:
    """Hints from the source of `fn` (a function or a class's forward/__call__); empty when it has none."""
    h = Hints()
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return h
    try:
        params = set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return h

    def least(name: str | None, idx: int | None) -> None:
        if name in params and idx is not None:
            need = idx + 1 if idx >= 0 else -idx
            if need <= RANK_CAP:
                h.at_least[name] = max(h.at_least.get(name, 0), need)

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], (ast.Tuple, ast.List)):
            name = _shape_of(node.value)
            if name in params and not any(isinstance(e, ast.Starred) for e in node.targets[0].elts):
                h.exact.setdefault(name, len(node.targets[0].elts))
        elif isinstance(node, ast.Subscript):
            least(_shape_of(node.value), _int(node.slice))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("size", "stride") and node.args:
            least(_name(node.func.value), _int(node.args[0]))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right, op = node.left, node.comparators[0], node.ops[0]
            # x.dim() == 3, x.ndim == 3
            target = None
            if isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) and left.func.attr == "dim":
                target = _name(left.func.value)
            elif isinstance(left, ast.Attribute) and left.attr == "ndim":
                target = _name(left.value)
            if target in params and isinstance(op, ast.Eq) and _int(right) is not None:
                h.exact.setdefault(target, _int(right))
            # x.dtype == torch.float32 / in (...) / is ...
            if isinstance(left, ast.Attribute) and left.attr == "dtype" and _name(left.value) in params:
                name = _name(left.value)
                found: list[str] = []
                if isinstance(op, (ast.Eq, ast.Is)) and _torch_dtype(right):
                    found = [_torch_dtype(right)]
                elif isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                    found = [d for d in (_torch_dtype(e) for e in right.elts) if d]
                for d in found:
                    h.dtypes.setdefault(name, [])
                    if d not in h.dtypes[name]:
                        h.dtypes[name].append(d)
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            pass  # `a.dtype == x or a.dtype == y`: each Compare is visited on its own
    for name, r in list(h.at_least.items()):
        if name in h.exact and h.exact[name] < r:
            del h.exact[name]  # contradictory: trust the indexing
    return h


__all__ = ["Hints", "hints_for"]
