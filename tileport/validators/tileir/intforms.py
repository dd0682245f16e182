"""The equivalence layer for integer forms: different ops that compute the same index arithmetic hash alike.

Frontends spell the same integer arithmetic differently. cuTile Python has `ct.cdiv` (`divi ... rounding<
positive_inf>`), floor division (`rounding<negative_inf>`), floor-mod (`remi` fixed up by a `select`) and `min`
(`mini`); a cutile-rs port writes `(m + B - 1) / B` and `/` (rounding toward zero), `%` (a bare `remi`) and an
`if`/`else` clamp. Each form is normalised to what it computes (ceil-div, floor-div, floor-mod, min, max, a
compare) before hashing, with the condition under which the form equals it:

* exact forms (`rounding<positive_inf>`, the floor-mod select, `mini`, an `if`/`yield` or `select` clamp) need none;
* rounding toward zero equals flooring, and `remi` equals floor-mod, when the dividend and the divisor are >= 0 (a
  zero divisor is undefined in both forms);
  `(x + B - 1) / B` rounding toward zero is a ceil-division when x >= 0;
* a signed and an unsigned compare agree when both operands are >= 0.

Signs are proven from the IR only (constants, block ids and counts, index-space and tensor shapes, `assume
bounded<lo, ...>` with lo >= 0, and sums, products, quotients, mins and clamps of those). A form whose condition is
proven is a note; a compare is normalised only when proven; the division and remainder forms are normalised either
way (the swizzle arithmetic of real ports cannot be proven) and the finding names the unproven condition as a
warning. The ops a form consumes internally (the select's compares, an `if`'s yields) are marked transparent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

# sign facts: 0 unknown, 1 known >= 0, 2 known > 0
UNKNOWN, NONNEG, POS = 0, 1, 2
_NONNEG_OPS = frozenset({"get_tile_block_id", "get_index_space_shape", "get_tensor_shape", "iota"})
_POS_OPS = frozenset({"get_num_tile_blocks"})
_PASS_THROUGH = frozenset({"reshape", "broadcast", "exti"})
# the ops `normalize` may rewrite (a cheap test before the call)
FORM_OPS = frozenset({"divi", "remi", "select", "mini", "maxi", "if", "cmpi"})


@dataclass(frozen=True, slots=True)
class Form:
    """How one side wrote a normalised op: what it computes, as written, and what equality needs."""

    computes: str  # "ceil-division", "floor-mod", "min", ...
    written: str  # "divi rounding<positive_inf>", "remi (truncating)", "if/yield clamp", ...
    needs: str | None = None  # "x >= 0 and y > 0" where the form equals `computes` only then
    proven: bool = True
    named: tuple = ()  # (label, value) pairs the condition is about, rendered in findings

    def needs_text(self, ce=None) -> str | None:
        if not self.needs:
            return None
        if not self.named:
            return self.needs
        from tileport.validators.tileir.canon import render  # canon imports this module

        return self.needs + " (" + ", ".join(f"{label} = {render(v, ce)}" for label, v in self.named) + ")"


def int_literal(v) -> int | None:
    """A splatted integer constant's value; None for anything else."""
    if v.splat is None:
        return None
    try:
        return int(v.splat[1])
    except ValueError:
        return None


class Signs:
    """Memoised sign facts of the values of one entry."""

    def __init__(self):
        self.memo: dict[int, int] = {}

    def of(self, v, depth: int = 0) -> int:
        got = self.memo.get(id(v))
        if got is not None:
            return got
        self.memo[id(v)] = UNKNOWN  # cycle guard
        s = self._compute(v, depth)
        self.memo[id(v)] = s
        return s

    def _compute(self, v, depth: int) -> int:
        if depth > 48:
            return UNKNOWN
        lit = int_literal(v)
        if lit is not None:
            return POS if lit > 0 else NONNEG if lit == 0 else UNKNOWN
        n = v.node
        if n is None:
            loop = getattr(v, "owner_node", None)
            if loop is not None and v.barg is not None and v.barg[1] == 0 and loop.op.name == "for" and \
                    len(loop.operands) >= 3:
                # a for loop's index runs from its lower bound upwards when its step is positive
                lo, step = (self.of(loop.operands[k], depth + 1) for k in (0, 2))
                return lo if step == POS else UNKNOWN
            return UNKNOWN
        name = n.op.name
        ops = n.operands
        if name == "assume":
            pred = n.op.attrs.get("bounded")
            base = self.of(ops[-1], depth + 1) if ops else UNKNOWN
            if pred is not None:
                lo = pred.split(",")[0].strip()
                try:
                    lo_v = int(lo)
                except ValueError:
                    return base
                return max(base, POS if lo_v > 0 else NONNEG if lo_v == 0 else UNKNOWN)
            return base
        if name in _NONNEG_OPS:
            return NONNEG
        if name in _POS_OPS:
            return POS
        if name in _PASS_THROUGH and ops:
            return self.of(ops[0], depth + 1) if name != "exti" or "unsigned" not in n.op.flags else NONNEG
        if form := getattr(n, "form", None):
            if form.computes in ("ceil-division", "floor-division", "floor-mod") and len(ops) >= 1:
                return NONNEG if self._all(n.form_inputs, depth) >= NONNEG else UNKNOWN
            if form.computes in ("min", "max"):
                a, b = (self.of(x, depth + 1) for x in n.form_inputs)
                return min(a, b) if form.computes == "min" else max(a, b)
        sa = [self.of(x, depth + 1) for x in ops[:2]]
        if name in ("addi", "muli") and len(sa) == 2:
            if min(sa) == UNKNOWN:
                return UNKNOWN
            return POS if (name == "addi" and max(sa) == POS) or min(sa) == POS else NONNEG
        if name in ("divi", "remi") and len(sa) == 2 and sa[0] >= NONNEG and sa[1] >= NONNEG:
            return NONNEG
        if name == "mini" and len(sa) == 2:
            return min(sa)
        if name == "maxi" and len(sa) == 2:
            return max(sa)
        if name == "select" and len(ops) == 3:
            return min(self.of(ops[1], depth + 1), self.of(ops[2], depth + 1))
        return UNKNOWN

    def _all(self, vals, depth: int) -> int:
        return min((self.of(x, depth + 1) for x in vals), default=UNKNOWN)


def _linear(v, depth: int = 0) -> tuple[object, int]:
    """v as (x, k) with v = x + k for an integer constant k, through addi/subi with constants."""
    n = v.node
    if n is None or depth > 4 or n.op.name not in ("addi", "subi") or len(n.operands) != 2:
        return v, 0
    a, b = n.operands
    kb, ka = int_literal(b), int_literal(a)
    if kb is not None:
        x, k = _linear(a, depth + 1)
        return x, k + (kb if n.op.name == "addi" else -kb)
    if ka is not None and n.op.name == "addi":
        x, k = _linear(b, depth + 1)
        return x, k + ka
    return v, 0


def _signedness(op) -> str:
    return "unsigned" if "unsigned" in op.flags else "signed"


def _yielded(region_nodes) -> object | None:
    """The single value a region yields, if the region does nothing else (constants aside)."""
    if not region_nodes:
        return None
    last = region_nodes[-1]
    if last.op.name != "yield" or len(last.operands) != 1:
        return None
    if any(ch.op.name not in ("constant", "yield") for ch in region_nodes):
        return None
    return last.operands[0]


_NEEDS_DIV = "the dividend >= 0 and the divisor >= 0 (dividing by 0 is undefined in both)"
_MIN_PREDS = {"less_than": "min", "less_than_or_equal": "min", "greater_than": "max", "greater_than_or_equal": "max"}
_SWAP = {"min": "max", "max": "min"}


def _pred(op) -> str | None:
    for k in op.attrs:
        if k in _MIN_PREDS or k in ("equal", "not_equal"):
            return k
    return None


def _clamp(cond, then_v, else_v) -> tuple[str, object, object] | None:
    """cond ? then : else as min/max of the compared values."""
    c = cond.node
    if c is None or c.op.name != "cmpi" or len(c.operands) != 2:
        return None
    pred = _pred(c.op)
    kind = _MIN_PREDS.get(pred or "")
    if kind is None:
        return None
    x, y = c.operands
    if then_v.hash == x.hash and else_v.hash == y.hash:
        return kind, x, y
    if then_v.hash == y.hash and else_v.hash == x.hash:
        return _SWAP[kind], x, y
    return None


def normalize(node, signs: Signs, h: Callable[..., str]) -> str | None:
    """The normalised hash of an integer form, setting `node.form` / `node.form_inputs` and marking the ops the
    form consumes internally transparent; None when the op is not one of the forms."""
    op = node.op
    name = op.name
    ops = node.operands
    rt = op.result_types[0] if op.result_types else "?"
    if name == "divi" and len(ops) == 2:
        a, b = ops
        rounding = op.attrs.get("rounding")
        unsigned = "unsigned" in op.flags
        kb = int_literal(b)
        if rounding == "positive_inf":
            return _set(node, h, "ceil-division", "divi rounding<positive_inf>", (a, b), rt)
        if unsigned or rounding not in (None, "negative_inf", "zero"):
            return None
        x, k = _linear(a)
        trunc = rounding in (None, "zero")
        how = "rounding toward zero" if trunc else "rounding<negative_inf>"
        if kb is not None and kb > 0 and k == kb - 1 and x is not a:
            written = f"(x + {kb} - 1) / {kb} ({how})"
            _absorb(node, stop={id(x), id(b)})
            if not trunc:
                return _set(node, h, "ceil-division", written, (x, b), rt)
            return _set(node, h, "ceil-division", written, (x, b), rt, "x >= 0", signs.of(x) >= NONNEG,
                        ("x", x))
        if not trunc:
            return _set(node, h, "floor-division", "divi rounding<negative_inf>", (a, b), rt)
        ok = signs.of(a) >= NONNEG and signs.of(b) >= NONNEG
        return _set(node, h, "floor-division", "divi (rounding toward zero)", (a, b), rt,
                    _NEEDS_DIV, ok, ("dividend", a), ("divisor", b))
    if name == "remi" and len(ops) == 2 and "unsigned" not in op.flags:
        a, b = ops
        ok = signs.of(a) >= NONNEG and signs.of(b) >= NONNEG
        return _set(node, h, "floor-mod", "remi (truncating: the sign follows the dividend)", (a, b), rt,
                    _NEEDS_DIV, ok, ("dividend", a), ("divisor", b))
    if name == "select" and len(ops) == 3:
        fm = _floor_mod_select(ops, signs)
        if fm is not None:
            r_node, a, b = fm
            _absorb(node, stop={id(a), id(b)})
            return _set(node, h, "floor-mod", "remi fixed up by select (floor-mod)", (a, b), rt)
        cl = _clamp(ops[0], ops[1], ops[2])
        if cl is not None:
            kind, x, y = cl
            _absorb_cond(ops[0])
            sg = _signedness(ops[0].node.op)
            return _set(node, h, kind, f"select on cmpi ({kind} {sg})", (x, y), rt, commutative=True, tag=sg)
        return None
    if name in ("mini", "maxi") and len(ops) == 2:
        sg = _signedness(op)
        return _set(node, h, name[:3], f"{name} {sg}", (ops[0], ops[1]), rt, commutative=True, tag=sg)
    if name == "if" and len(op.results) == 1 and len(ops) == 1 and len(node.children) == 2:
        tv, ev = _yielded(node.children[0]), _yielded(node.children[1])
        if tv is None or ev is None:
            return None
        cl = _clamp(ops[0], tv, ev)
        if cl is None:
            return None
        kind, x, y = cl
        for region in node.children:
            for ch in region:
                ch.transparent = True
        _absorb_cond(ops[0])
        sg = _signedness(ops[0].node.op)
        return _set(node, h, kind, f"if/yield clamp ({kind} via cmpi {sg})", (x, y), rt, commutative=True, tag=sg)
    if name == "cmpi" and len(ops) == 2 and signs.of(ops[0]) >= NONNEG and signs.of(ops[1]) >= NONNEG:
        pred = _pred(op) or "?"
        node.form = Form(f"compare {pred}", f"cmpi {pred} {_signedness(op)}",
                         "both operands >= 0", True)
        node.form_inputs = (ops[0], ops[1])
        return h("cmpi-nonneg", pred, ",".join(op.in_types), ops[0].hash, ops[1].hash)
    return None


def _set(node, h, computes: str, written: str, inputs: tuple, rtype: str, needs: str | None = None,
         proven: bool = True, *named, commutative: bool = False, tag: str = "") -> str:
    node.form = Form(computes, written, needs, proven, named)
    node.form_inputs = inputs
    hs = [v.hash for v in inputs]
    if commutative:
        hs.sort()
    return h("intform", computes, tag, rtype, ",".join(hs))


def _floor_mod_select(ops, signs: Signs) -> tuple[object, object, object] | None:
    """select(cond, r + b, r) with r = remi(a, b) and cond Python's fix-up test, `r != 0 and (r < 0) != (b < 0)`:
    Python's floor-mod. Returns (remi node, a, b). Any other condition is not floor-mod (a port whose test is
    inverted or always true computes something else: cutile-compiler 0.5.0 compiles `constant(false)` as true)."""
    cond, fixed, r = ops
    rn = r.node
    fn = fixed.node
    if rn is None or fn is None or rn.op.name != "remi" or fn.op.name != "addi" or len(rn.operands) != 2:
        return None
    a, b = rn.operands
    if {v.hash for v in fn.operands} != {r.hash, b.hash}:
        return None
    if not _floor_mod_test(cond, r, b, signs):
        return None
    return rn, a, b


def _bool_literal(v) -> bool | None:
    if v.splat is None:
        return None
    return {"true": True, "1": True, "-1": True, "false": False, "0": False}.get(str(v.splat[1]).strip().lower())


def _compares(v, pred: str, x, zero_right: bool = True) -> bool:
    """v is `cmpi pred x, 0` (or `0, x` for a symmetric predicate when zero_right is False)."""
    n = v.node
    if n is None or n.op.name != "cmpi" or len(n.operands) != 2 or _pred(n.op) != pred or "unsigned" in n.op.flags:
        return False
    p, q = n.operands
    if p.hash == x.hash and int_literal(q) == 0:
        return True
    return not zero_right and q.hash == x.hash and int_literal(p) == 0


def _floor_mod_test(cond, r, b, signs: Signs) -> bool:
    """cond is `(r != 0) & ((r < 0) ^ (b < 0))`, with `b < 0` written as a compare or as the constant it is; or
    `(r != 0) & (r < 0)` / `r < 0` where b is known non-negative."""
    b_nonneg = signs.of(b) >= NONNEG

    def sign_differs(p) -> bool:
        if _compares(p, "less_than", r):
            return b_nonneg
        n = p.node
        if n is None or n.op.name != "xori" or len(n.operands) != 2:
            return False
        for u, w in (n.operands, tuple(reversed(n.operands))):
            if _compares(u, "less_than", r):
                if _compares(w, "less_than", b):
                    return True
                lit = _bool_literal(w)
                return lit is False and b_nonneg
        return False

    c = cond.node
    if c is not None and c.op.name == "andi" and len(c.operands) == 2:
        for p, q in (c.operands, tuple(reversed(c.operands))):
            if _compares(q, "not_equal", r, zero_right=False) and sign_differs(p):
                return True
        return False
    return _compares(cond, "less_than", r) and b_nonneg


def _absorb_cond(cond) -> None:
    c = cond.node
    if c is not None and all(u.op.name in ("if", "select") for u in c.users):
        c.transparent = True


def _absorb(root, stop: set[int]) -> None:
    """Mark the ops feeding `root` that exist only for it (up to the form's inputs) transparent."""
    reach: dict[int, object] = {}
    stack = list(root.operands)
    seen: set[int] = set()
    while stack:
        v = stack.pop()
        if id(v) in stop or id(v) in seen:
            continue
        seen.add(id(v))
        n = v.node
        if n is None or n.op.name in ("get_tile_block_id", "get_num_tile_blocks") or id(n) in reach:
            continue
        reach[id(n)] = n
        stack.extend(n.operands)
    changed = True
    while changed:  # keep only ops every user of which is the root or another kept op
        changed = False
        for k, n in list(reach.items()):
            if any(u is not root and id(u) not in reach for u in n.users):
                del reach[k]
                changed = True
    for n in reach.values():
        n.transparent = True
