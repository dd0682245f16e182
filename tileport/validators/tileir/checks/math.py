"""math: rounding modes, flush_to_zero, the function computed (exp vs exp2, ...), fused multiply-adds."""

from __future__ import annotations

from tileport.validators.tileir.canon import Node
from tileport.validators.tileir.checks.context import Ctx
from tileport.validators.tileir.findings import RowStatus, Severity

TRANSCENDENTAL = frozenset({"exp", "exp2", "log", "log2", "rsqrt", "sqrt", "tanh", "tan", "sin", "cos", "sinh",
                            "cosh", "atan2", "fpowf", "fpowi"})
MODE_ATTRS = ("rounding", "flush_to_zero")
# statuses of ops that differ (paired but changed, or on one side only)
CANDIDATE = (RowStatus.CHANGED, RowStatus.REF_ONLY, RowStatus.PORT_ONLY)


def check_math_pair(ctx: Ctx, r: Node, p: Node) -> None:
    """Math modes on any paired op, and the function a transcendental computes."""
    name = r.op.name
    # math modes on any op
    same_form = r.form is not None and p.form is not None and r.form.computes == p.form.computes
    for attr in MODE_ATTRS:
        ra, pa = r.op.attrs.get(attr), p.op.attrs.get(attr)
        if attr == "rounding" and same_form:
            continue  # an integer division's rounding is part of its form (checks/equivalence judges it)
        if ra != pa:
            if attr == "flush_to_zero":
                msg = (f"{name} {'flushes denormals to zero' if ra is not None else 'keeps denormals'} in the "
                       f"reference but {'flushes' if pa is not None else 'does not flush'} in the port")
                rv, pv = ("flush_to_zero" if ra is not None else "none"), ("flush_to_zero" if pa is not None
                                                                           else "none")
            else:
                rv, pv = f"rounding<{ra}>" if ra else "default", f"rounding<{pa}>" if pa else "default"
                msg = f"{name} uses {rv} in the reference but {pv} in the port"
            ctx.add("math", attr, Severity.ERROR, msg, r, p, rv, pv)
    if r.op.name != p.op.name and (r.family in ("exp", "log", "rsqrt")):
        ctx.add("math", "function", Severity.ERROR,
                f"reference computes {r.op.name}, the port {p.op.name}", r, p, r.op.name, p.op.name)


def check_fusion(ctx: Ctx) -> None:
    """fma(a, b, c) on one side, addf(mulf(a, b), c) on the other: one rounding instead of two."""
    al = ctx.al

    def fmas(nodes: list[Node], status: dict[int, RowStatus]) -> list[Node]:
        return [n for n in nodes if n.op.name == "fma" and status[n.idx] in CANDIDATE]

    def mul_adds(nodes: list[Node], status: dict[int, RowStatus]) -> list[Node]:
        # a*b + c, and a*b - c (an fma with a negated addend)
        return [n for n in nodes if n.op.name in ("addf", "subf") and status[n.idx] in CANDIDATE and any(
            v.node is not None and v.node.op.name == "mulf" for v in n.operands[:1 if n.op.name == "subf" else 2])]

    for fused_side, split_side in (("reference", "port"), ("port", "reference")):
        if fused_side == "reference":
            fused, split = fmas(ctx.ref.nodes, al.status_r), mul_adds(ctx.port.nodes, al.status_p)
            nf, ns = max(1, len(ctx.ref.nodes)), max(1, len(ctx.port.nodes))
        else:
            fused, split = fmas(ctx.port.nodes, al.status_p), mul_adds(ctx.ref.nodes, al.status_r)
            nf, ns = max(1, len(ctx.port.nodes)), max(1, len(ctx.ref.nodes))
        for f in fused:
            if not split:
                break
            best = min(split, key=lambda a: abs(a.idx / ns - f.idx / nf))
            split.remove(best)
            r, p = (f, best) if fused_side == "reference" else (best, f)
            ctx.add("math", "fma", Severity.WARNING,
                    f"the {fused_side} fuses a multiply-add into one fma (one rounding); the {split_side} computes "
                    f"mulf then addf (two roundings): results may differ in the last bit", r, p,
                    "fma" if fused_side == "reference" else "mulf+addf",
                    "mulf+addf" if fused_side == "reference" else "fma")

