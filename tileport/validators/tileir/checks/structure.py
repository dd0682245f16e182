"""structure: every difference must be accounted for; differing ops no other check explains are errors."""

from __future__ import annotations

from tileport.validators.tileir.canon import TOKEN_OPS, Node, render
from tileport.validators.tileir.checks.context import Ctx, strip_names
from tileport.validators.tileir.checks.math import CANDIDATE
from tileport.validators.tileir.findings import RowStatus, Severity

_EXPLAINING = (Severity.ERROR, Severity.WARNING)
# notes that account for a difference (an equivalent form, a port at least as defined, a specialisation)
EXPLAINING_NOTES = frozenset({"memory.padding", "structure.equivalent_form", "loops.specialised"})


def _unexplained(nodes: list[Node], status: dict[int, RowStatus], mentioned: set[int],
                 partner: dict[int, Node]) -> list[Node]:
    """Differing ops no finding accounts for. A finding explains the op it names, what that op
    consumes if it exists only for it (upstream), and type changes that merely follow (downstream)."""

    def candidate(n: Node) -> bool:
        return (status[n.idx] in CANDIDATE and n.live and not n.address_only and n.op.name != "assume"
                and n.op.name not in TOKEN_OPS)

    def types_only(n: Node) -> bool:
        q = partner.get(n.idx)
        return q is not None and q.attrs_key == n.attrs_key

    if not any(status[n.idx] in CANDIDATE for n in nodes):
        return []
    # identical ops neither need nor pass on an explanation: walk only the others
    nodes = [n for n in nodes if status[n.idx] != RowStatus.SAME]
    expl: set[int] = set()
    for _ in range(4):
        before = len(expl)
        for n in nodes:  # downstream
            if n.idx in expl:
                continue
            st = status[n.idx]
            if n.op.line in mentioned:
                expl.add(n.idx)
            elif (st == RowStatus.DOWNSTREAM or n.transparent or (st == RowStatus.CHANGED and types_only(n))) and any(
                    v.node is not None and v.node.idx in expl for v in n.operands):
                expl.add(n.idx)
            elif n.parent is not None and n.parent.idx in expl and st == RowStatus.CHANGED and types_only(n):
                expl.add(n.idx)
        for n in reversed(nodes):  # upstream
            if n.idx in expl or status[n.idx] not in CANDIDATE:
                continue
            users = [u for u in n.users if u.live]
            if users and all(u.idx in expl or (status[u.idx] == RowStatus.BENIGN and not u.transparent) for u in users):
                expl.add(n.idx)
        if len(expl) == before:
            break
    left = [n for n in nodes if candidate(n) and n.idx not in expl]
    # report the last op of an unexplained chain: an input used only by other reported ops is part
    # of their message
    left_ids = {n.idx for n in left}
    return [n for n in left if not (n.users and all(u.idx in left_ids for u in n.users if u.live))]


def _report(ctx: Ctx, r, p) -> None:
    """One unexplained op: a pair of ops that differ, or an op only one side computes (the other is None)."""
    rt, pt = (strip_names(n.op.text) if n is not None else "missing" for n in (r, p))
    if r is not None and p is not None:
        ctx.add("structure", "changed", Severity.ERROR, f"{r.op.name} differs: reference `{rt}` vs port `{pt}`",
                r, p, rt, pt)
    elif r is not None:
        ctx.add("structure", "ref_only", Severity.ERROR, f"reference computes `{rt}`; the port has nothing like it",
                r, None, rt, pt)
    else:
        ctx.add("structure", "port_only", Severity.ERROR, f"port computes `{pt}`; the reference has nothing like it",
                None, p, rt, pt)


def check_structure(ctx: Ctx) -> None:
    """Every difference must be accounted for: differing ops that no check explains are errors."""
    if ctx.ref.hash == ctx.port.hash:
        return
    al = ctx.al
    ment_r = {f.ref_line for f in ctx.findings if f.ref_line is not None}
    ment_p = {f.port_line for f in ctx.findings if f.port_line is not None}
    un_r = _unexplained(ctx.ref.nodes, al.status_r, ment_r, al.r2p)
    un_p = _unexplained(ctx.port.nodes, al.status_p, ment_p, al.p2r)
    reported = 0
    seen_pairs: set[int] = set()
    for n in un_r:
        if reported >= 10:
            break
        p = al.r2p.get(n.idx)
        if p is not None:
            seen_pairs.add(p.idx)
        _report(ctx, n, p)
        reported += 1
    for n in un_p:
        if reported >= 10:
            break
        if n.idx in seen_pairs:
            continue
        _report(ctx, al.p2r.get(n.idx), n)
        reported += 1
    left = len(un_r) + len(un_p) - reported - len(seen_pairs)
    if left > 0:
        ctx.add("structure", "more", Severity.ERROR, f"and {left} more differing op(s) (see the side-by-side view)")
    if reported or any((f.severity in _EXPLAINING or f.check in EXPLAINING_NOTES)
                       and f.category not in ("assumptions", "hints", "benign")
                       for f in ctx.findings):
        return
    # nothing differs locally, yet the graphs differ: operands are wired differently
    bad = []
    for r in ctx.ref.nodes:
        if al.status_r[r.idx] == RowStatus.DOWNSTREAM and not r.address_only:
            ups = [v for v, w in zip(r.operands, al.r2p[r.idx].operands) if v.hash != w.hash]
            if ups and all(v.node is None or al.status_r.get(v.node.idx) == RowStatus.SAME for v in ups):
                bad.append(r)
    for r in bad[:5]:
        p = al.r2p[r.idx]
        rv = f"{r.op.name}({', '.join(render(v, ctx.ref) for v in r.operands)})"
        pv = f"{p.op.name}({', '.join(render(v, ctx.port) for v in p.operands)})"
        ctx.add("structure", "dataflow", Severity.ERROR,
                f"{r.op.name} takes different inputs: reference computes {rv}, the port {pv} (operands swapped "
                f"or wired to other values)", r, p, rv, pv)
    if not bad:
        ctx.add("structure", "dataflow", Severity.ERROR, "the entries' dataflow graphs differ (see the side-by-side "
                "view)")
