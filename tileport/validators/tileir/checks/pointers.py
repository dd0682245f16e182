"""Addresses of pointer loads and stores, compared as linear forms over the array's base.

A gather's pointer tile is `offset(base, index)`, the index a sum of products (`row * stride0 + col * 1`, widened
and broadcast along the way). Both sides are rewritten as base array + sum of coefficient x factors x index terms,
where a factor is a parameter named by its role (`stride0(array #0)`, `scalar i32 #2`), a coefficient an integer
and an index any other value (a block id, an iota, a normalised integer form) by its structural hash. Equal forms
address the same elements. A term that differs only in that the reference multiplies by an array's own stride and
the port by a plain scalar parameter (a raw-pointer port's `row_stride`) is equal when the host passes that stride:
a warning. Any other difference reads or writes other elements: an error naming both forms.
"""

from __future__ import annotations

from collections import defaultdict

from tileport.validators.tileir.canon import CanonEntry, Val, render
from tileport.validators.tileir.intforms import int_literal

_VALUE_KEEPING = frozenset({"exti", "reshape", "broadcast", "assume"})
_PTR_KEEPING = frozenset({"reshape", "broadcast", "assume", "ptr_to_ptr"})

Term = tuple[str, tuple[str, ...]]  # (index key, sorted parameter factors)


def strip_kept(v: Val, keeping: frozenset[str] = _VALUE_KEEPING, limit: int = 32) -> Val:
    """The value under ops that keep it (`exti`, `reshape`, `broadcast`, `assume`: its assumed operand; or another
    `keeping` set, e.g. the ops that keep a pointer)."""
    for _ in range(limit):
        n = v.node
        if n is None or n.op.name not in keeping or not n.operands:
            return v
        v = n.operands[-1] if n.op.name == "assume" else n.operands[0]
    return v


class Linear:
    def __init__(self, ce: CanonEntry):
        self.ce = ce
        self.shown: dict[str, Val] = {}  # index key -> a value to render it by

    def strip(self, v: Val) -> Val:
        return strip_kept(v)

    def difference(self, a: Val, b: Val) -> dict[Term, int]:
        """The linear form of a - b."""
        out = defaultdict(int, self.of(a))
        for t, c in self.of(b).items():
            out[t] -= c
        return {t: c for t, c in out.items() if c}

    def of(self, v: Val, depth: int = 0) -> dict[Term, int]:
        v = self.strip(v)
        k = int_literal(v)
        if k is not None:
            return {("1", ()): k} if k else {}
        n = v.node
        if n is None and v.arg_index is not None and v.arg_index not in self.ce.ptr_ordinal:
            role = self.ce.arg_roles.get(v.arg_index, f"arg{v.arg_index}")
            return {("1", (role,)): 1}
        if n is not None and depth < 24 and len(n.operands) == 2 and n.op.name in ("addi", "subi", "muli"):
            a, b = (self.of(x, depth + 1) for x in n.operands)
            if n.op.name == "muli":
                return self._mul(a, b, v)
            out = defaultdict(int, a)
            for t, c in b.items():
                out[t] += c if n.op.name == "addi" else -c
            return {t: c for t, c in out.items() if c}
        self.shown.setdefault(v.hash, v)
        return {(v.hash, ()): 1}

    def _mul(self, a: dict[Term, int], b: dict[Term, int], whole: Val) -> dict[Term, int]:
        out: dict[Term, int] = defaultdict(int)
        for (ia, fa), ca in a.items():
            for (ib, fb), cb in b.items():
                if ia != "1" and ib != "1":  # a product of two indices: keep it whole
                    self.shown.setdefault(whole.hash, whole)
                    return {(whole.hash, ()): 1}
                out[(ia if ia != "1" else ib, tuple(sorted(fa + fb)))] += ca * cb
        return {t: c for t, c in out.items() if c}

    def pointer(self, v: Val, depth: int = 0) -> tuple[int | None, dict[Term, int]]:
        """(array ordinal, linear offset) of a pointer tile; ordinal None when it does not start at an argument."""
        v = strip_kept(v, _PTR_KEEPING)
        n = v.node
        if n is None:
            return (self.ce.ptr_ordinal.get(v.arg_index) if v.arg_index is not None else None), {}
        if n.op.name == "offset" and len(n.operands) == 2 and depth < 16:
            base, terms = self.pointer(n.operands[0], depth + 1)
            out = defaultdict(int, terms)
            for t, c in self.of(n.operands[1]).items():
                out[t] += c
            return base, {t: c for t, c in out.items() if c}
        return None, {}

    def text(self, terms: dict[Term, int]) -> str:
        parts = []
        for (index, factors), c in sorted(terms.items(), key=lambda kv: (kv[0][0] == "1", kv[0])):
            items = ([] if c == 1 else [str(c)]) + list(factors) + (
                [] if index == "1" else [render(self.shown[index], self.ce) if index in self.shown else "?"])
            parts.append("*".join(items) or "1")
        return " + ".join(parts) or "0"


def compare_addresses(rptr: Val, pptr: Val, ref: CanonEntry, port: CanonEntry) -> tuple[str, str, list[str]] | None:
    """None when both address the same elements (possibly under host conditions, returned in the list);
    else (reference form, port form, []) for an error."""
    rl, pl = Linear(ref), Linear(port)
    rb, rt = rl.pointer(rptr)
    pb, pt = pl.pointer(pptr)
    if rb is None or pb is None:
        return None  # not an argument-based address: judged through the dataflow elsewhere
    if rt == pt:
        return ("", "", [])
    host: list[str] = []
    left_p = dict(pt)
    unmatched_r: dict[Term, int] = {}
    for (index, factors), c in rt.items():
        if left_p.get((index, factors)) == c:
            del left_p[(index, factors)]
            continue
        partner = None
        for (pi, pf), pc in left_p.items():
            if pi != index or pc != c or len(pf) != len(factors):
                continue
            diff = [(a, b) for a, b in zip(factors, pf) if a != b]
            if diff and all(a.startswith(("stride", "shape")) and b.startswith("scalar") for a, b in diff):
                partner = (pi, pf)
                host.extend(f"{b} where the reference uses {a}" for a, b in diff)
                break
        if partner is None:
            unmatched_r[(index, factors)] = c
        else:
            del left_p[partner]
    if unmatched_r or left_p:
        cond = host_equation(unmatched_r, left_p, rl, pl)
        if cond is None:
            return rl.text(rt), pl.text(pt), []
        host.append(cond)
    return ("", "", host)


def _only(terms: dict[Term, int], prefixes: tuple[str, ...]) -> bool:
    """Every term is a constant or one parameter (no index) whose role starts with one of `prefixes`."""
    return all(index == "1" and (not factors or (len(factors) == 1 and factors[0].startswith(prefixes)))
               for index, factors in terms)


def host_equation(ref_rest: dict[Term, int], port_rest: dict[Term, int], rl: "Linear",
                  pl: "Linear") -> str | None:
    """What is left after the common terms: the reference's constants and array shapes/strides against the port's
    plain scalar parameters is an equation the host satisfies by what it passes (a port that takes `hidden_size`
    where the reference folded 1024 or reads the array's shape); anything else is no equation."""
    if not port_rest or not _only(port_rest, ("scalar",)) or not _only(ref_rest, ("shape", "stride")):
        return None
    if not any(f for _, f in port_rest):
        return None
    if all(c < 0 for c in port_rest.values()):
        port_rest = {t: -c for t, c in port_rest.items()}
        ref_rest = {t: -c for t, c in ref_rest.items()}
    return f"{pl.text(port_rest)} = {rl.text(ref_rest)}"
