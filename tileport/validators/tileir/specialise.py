"""A reference specialised on values the port takes at run time.

cuTile Python folds `ct.Constant` parameters: a persistent matmul compiled for M = N = 1024 has the tile count 64
as a constant where a port that takes `m`, `n` as parameters computes `ceil(m / 128) * ceil(n / 128)`. Every op
downstream of such a value hashes differently although the two kernels are the same for the shapes the reference
was built for. This finds those places, pairs of a reference integer constant with a port value computed only from
parameters and constants (no block id, loop index or load), at least one of them a parameter the reference does not
take (it folded it), and returns them as substitutions: the port is canonicalised again with each such value read
as the reference's constant, and the diff reports each one as an equation the host must satisfy.
"""

from __future__ import annotations

from tileport.validators.tileir.canon import CanonEntry, Node, Val, render

_PURE = frozenset({"addi", "subi", "muli", "divi", "remi", "mini", "maxi", "exti", "trunci", "assume", "reshape",
                   "broadcast", "select", "cmpi", "if", "yield"})

Subst = dict[tuple[int, int], tuple[str, str]]  # (port op line, result index) -> (elem, literal)


def _host_determined(v: Val, ce: CanonEntry, roles: set[str], depth: int = 0) -> bool:
    """v is computed from parameters and constants only; collects the parameter roles it reads."""
    if depth > 32:
        return False
    if v.splat is not None and (v.node is None or v.node.op.name == "constant"):
        return True
    n = v.node
    if n is None:
        if v.arg_index is None or v.arg_index in ce.ptr_ordinal:
            return False  # a loop index or region argument, or a pointer
        roles.add(ce.arg_roles.get(v.arg_index, f"arg{v.arg_index}"))
        return True
    if n.op.name not in _PURE:
        return False
    if n.op.name == "if":
        kids = [ch for region in n.children for ch in region]
        return all(_host_determined(o, ce, roles, depth + 1) for ch in kids for o in ch.operands) and all(
            _host_determined(o, ce, roles, depth + 1) for o in n.operands)
    return all(_host_determined(o, ce, roles, depth + 1) for o in n.operands)


def find(ref: CanonEntry, port: CanonEntry, r2p: dict[int, Node]) -> tuple[Subst, list[tuple[Node, str, str]]]:
    """Substitutions for the port and, per substitution, (port node, reference constant, port expression)."""
    ref_roles = {role for role in ref.arg_roles.values() if not role.startswith("unused")}
    subst: Subst = {}
    found: list[tuple[Node, str, str]] = []
    for r in ref.nodes:
        p = r2p.get(r.idx)
        if p is None or r.hash == p.hash:
            continue
        # normalised integer forms compare what they compute from (a floor-mod's dividend and divisor)
        same_form = r.form is not None and p.form is not None and r.form.computes == p.form.computes
        rops, pops = (r.form_inputs, p.form_inputs) if same_form else (r.operands, p.operands)
        if len(rops) != len(pops):
            continue
        for ro, po in zip(rops, pops):
            if ro.hash == po.hash or ro.splat is None or po.splat is not None or po.node is None:
                continue
            elem, lit = ro.splat
            if not elem.startswith("i") or elem == "i1" or len(po.node.results) != 1:
                continue
            roles: set[str] = set()
            if not _host_determined(po, port, roles, 0) or not (roles - ref_roles):
                continue
            key = (po.node.op.line, po.index)
            if key not in subst:
                subst[key] = (elem, lit)
                found.append((po.node, lit, render(po, port)))
    return subst, found
