"""Masks of pointer loads and stores, compared condition by condition, and whether masked-off lanes can matter.

A mask is a conjunction of compares. Two conditions are the same bound when they compare the same index (widened,
reshaped or broadcast alike: `exti`, `reshape` and `broadcast` keep every value) with the same predicate, against
the same value, signed or unsigned alike when the index is known to be non-negative. A reference that bounds an
index by an array's own shape (cuTile Python passes shapes with every array) and a port that bounds it by a plain
scalar parameter (a raw-pointer port passes `n_rows`, `hidden_size`) are equal exactly when the host passes that
shape: a warning naming it, for the host stage's correctness tests to confirm. A condition only one side has is an
error: a bound dropped (a row mask missing) reads or writes out of bounds, a bound added drops data.
"""

from __future__ import annotations

from dataclasses import dataclass

from tileport.validators.tileir.canon import MEM_WRITES, CanonEntry, Node, Val, render
from tileport.validators.tileir.checks.pointers import Linear, host_equation, strip_kept
from tileport.validators.tileir.intforms import NONNEG, Signs

_PREDICATES = ("less_than_or_equal", "less_than", "greater_than_or_equal", "greater_than", "equal", "not_equal")
# elementwise ops a masked-off lane's value can only reach the same lane through
_LANEWISE = frozenset({
    "addf", "subf", "mulf", "divf", "remf", "negf", "absf", "fma", "maxf", "minf", "exp", "exp2", "log", "log2",
    "rsqrt", "sqrt", "tanh", "sin", "cos", "ftof", "itof", "ftoi", "exti", "trunci", "bitcast", "addi", "subi",
    "muli", "select", "cmpf", "cmpi", "andi", "ori", "xori",
})


def conjuncts(v: Val | None, limit: int = 64) -> list[Val]:
    """The conditions an i1 mask is the conjunction of (andi trees flattened; reshapes, broadcasts looked through)."""
    if v is None:
        return []
    n = v.node
    while n is not None and n.op.name in ("reshape", "broadcast") and n.operands and limit > 0:
        v, n, limit = n.operands[0], n.operands[0].node, limit - 1
    if n is None or n.op.name != "andi" or limit <= 0:
        return [v]
    return [c for o in n.operands for c in conjuncts(o, limit - 1)]


def condition_text(v: Val, ce: CanonEntry) -> str:
    n = v.node
    if n is not None and n.op.name == "cmpi" and len(n.operands) == 2:
        pred = next((f for f in n.op.flags if f in _PREDICATES), "?")
        sign = "unsigned" if "unsigned" in n.op.flags else "signed"
        return f"cmpi {pred} {sign}({render(n.operands[0], ce)}, {render(n.operands[1], ce)})"
    return render(v, ce)


@dataclass
class Bound:
    val: Val
    pred: str | None
    signed: bool
    index: str | None  # stripped hash of the compared index
    limit: Val | None  # stripped bound value


def _bound(v: Val) -> Bound:
    n = v.node
    if n is None or n.op.name != "cmpi" or len(n.operands) != 2:
        return Bound(v, None, True, None, None)
    pred = next((f for f in n.op.flags if f in _PREDICATES), None)
    return Bound(v, pred, "unsigned" not in n.op.flags, strip_kept(n.operands[0]).hash, strip_kept(n.operands[1]))


def _arg_role(v: Val, ce: CanonEntry) -> str | None:
    if v.node is None and v.arg_index is not None:
        return ce.arg_roles.get(v.arg_index)
    return None


@dataclass
class MaskVerdict:
    lost: list[str]  # conditions only the reference has
    added: list[str]  # conditions only the port has
    host: list[str]  # conditions equal only when the host passes a shape as a scalar


def compare_masks(rmask: Val | None, pmask: Val | None, ref: CanonEntry, port: CanonEntry) -> MaskVerdict:
    rs, ps = Signs(), Signs()
    rl, pl = Linear(ref), Linear(port)
    rb = [_bound(v) for v in conjuncts(rmask)]
    pb = [_bound(v) for v in conjuncts(pmask)]
    used: set[int] = set()
    out = MaskVerdict([], [], [])

    def sign_free(a: Bound, b: Bound) -> bool:
        if a.signed == b.signed:
            return True
        return (rs.of(strip_kept(a.val.node.operands[0])) >= NONNEG and ps.of(strip_kept(b.val.node.operands[0])) >= NONNEG)

    exact: dict[int, int] = {}  # identical conditions pair first, so a near match never takes one's partner
    for i, a in enumerate(rb):
        k = next((k for k, b in enumerate(pb) if k not in used and b.val.hash == a.val.hash), None)
        if k is not None:
            exact[i] = k
            used.add(k)
    for i, a in enumerate(rb):
        if i in exact:
            continue
        match = None
        for k, b in enumerate(pb):
            if k in used:
                continue
            if a.pred is None or a.pred != b.pred or a.index != b.index or not sign_free(a, b):
                continue
            if a.limit.hash == b.limit.hash:
                match = (k, None)
                break
        if match is None:
            # the same bound written over other parameters: index - limit as linear forms, whose difference is an
            # equation between the port's scalars and the reference's constants and shapes
            for k, b in enumerate(pb):
                if k in used or a.pred is None or a.pred != b.pred or not sign_free(a, b):
                    continue
                ra_, pa_ = a.val.node.operands, b.val.node.operands
                la, lb = rl.difference(ra_[0], ra_[1]), pl.difference(pa_[0], pa_[1])
                common = {t for t in la if lb.get(t) == la[t]}
                rest_a = {t: c for t, c in la.items() if t not in common}
                rest_b = {t: c for t, c in lb.items() if t not in common}
                eq = host_equation(rest_a, rest_b, rl, pl) if rest_a or rest_b else ""
                if eq is not None:
                    match = (k, f"`{condition_text(b.val, port)}` is the reference's "
                                f"`{condition_text(a.val, ref)}` when {eq}" if eq else None)
                    break
        if match is None:
            out.lost.append(condition_text(a.val, ref))
            continue
        used.add(match[0])
        if match[1]:
            out.host.append(match[1])
    out.added = [condition_text(b.val, port) for k, b in enumerate(pb) if k not in used]
    return out


def masked_lanes_unobservable(load: Node, mask: Val | None) -> str:
    """Whether the lanes `mask` turns off in `load` can reach memory or another lane: "no" when every use of the
    loaded value is lane-wise and ends in pointer stores masked by at least the same conditions; "host" when the
    stores bound the same indices with the same predicates but against other values (the same lanes when the
    host passes equal shapes); "yes" otherwise."""
    if mask is None or not load.results:
        return "yes"
    need = conjuncts(mask)
    need_h = {v.hash for v in need}
    need_b = {(b.pred, b.index) for b in map(_bound, need)}
    verdict = "no"
    stack = [(u, load) for u in load.users]
    seen: set[tuple[int, int]] = set()
    while stack:
        u, src = stack.pop()
        if (id(u), id(src)) in seen:
            continue
        seen.add((id(u), id(src)))
        name = u.op.name
        if name in MEM_WRITES:
            # only as the stored value (never an address or a mask), under at least the load's conditions
            if name != "store_ptr_tko" or len(u.operands) < 3 or u.operands[1].node is not src:
                return "yes"
            if any(v.node is src for v in (u.operands[0], u.operands[2])):
                return "yes"
            have = conjuncts(u.operands[2])
            if need_h <= {v.hash for v in have}:
                continue
            if None in {p for p, _ in need_b} or not need_b <= {(b.pred, b.index) for b in map(_bound, have)}:
                return "yes"
            verdict = "host"
            continue
        if name not in _LANEWISE:
            return "yes"
        stack.extend((w, u) for w in u.users)
    return verdict
