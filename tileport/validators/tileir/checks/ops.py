"""Per-op checks on paired ops (dispatching to mma, reduction, math, loops, conversions) and the categories
of ops only one side has."""

from __future__ import annotations

from tileport.validators.tileir.canon import CONVERSIONS, LOOPS, MMA, REDUCTIONS, Node
from tileport.validators.tileir.checks.context import Ctx, types_text
from tileport.validators.tileir.checks.loops import check_loop
from tileport.validators.tileir.checks.math import TRANSCENDENTAL, check_math_pair
from tileport.validators.tileir.checks.mma import check_mma
from tileport.validators.tileir.checks.reduction import check_reduction, combiner
from tileport.validators.tileir.findings import RowStatus, Severity


def check_pairs(ctx: Ctx) -> None:
    al = ctx.al
    for r in ctx.ref.nodes:
        p = al.partner(r)
        if p is None:
            _unpaired(ctx, r, None)
            continue
        if r.hash == p.hash:
            continue
        name = r.op.name
        check_math_pair(ctx, r, p)
        if name in MMA or p.op.name in MMA:
            check_mma(ctx, r, p)
        elif name in REDUCTIONS:
            check_reduction(ctx, r, p)
        elif name in LOOPS:
            check_loop(ctx, r, p)
        elif name in CONVERSIONS and r.local != p.local and not (r.address_only and p.address_only):
            rt = f"{types_text(r.op.in_types)} -> {types_text(r.op.out_types)}"
            pt = f"{types_text(p.op.in_types)} -> {types_text(p.op.out_types)}"
            ctx.add("conversions", "type", Severity.ERROR,
                    f"{name} converts {rt} in the reference but {pt} in the port", r, p, rt, pt)
    for p in ctx.port.nodes:
        if p.idx not in al.p2r:
            _unpaired(ctx, None, p)


def _unpaired(ctx: Ctx, r: Node | None, p: Node | None) -> None:
    n = r if r is not None else p
    st = ctx.al.status_r[n.idx] if r is not None else ctx.al.status_p[n.idx]
    if st == RowStatus.BENIGN or n.address_only:
        return  # address arithmetic is judged through the memory op it feeds
    side, other = ("reference", "port") if r is not None else ("port", "reference")
    name = n.op.name
    val = (name, "missing") if r is not None else ("missing", name)
    if name in MMA:
        ctx.add("mma", "count", Severity.ERROR, f"{side} has an MMA ({name} {types_text(n.op.in_types)}) the {other} "
                f"lacks", r, p, *val)
    elif name in REDUCTIONS:
        ctx.add("reduction", "count", Severity.ERROR,
                f"{side} has a {name} over dim {n.op.attrs.get('dim', '?')} ({combiner(n)}) the {other} lacks",
                r, p, *val)
    elif name in LOOPS:
        ctx.add("loops", "count", Severity.ERROR, f"{side} has a {name} loop the {other} lacks", r, p, *val)
    elif name in CONVERSIONS:
        ctx.add("conversions", "count", Severity.ERROR,
                f"{side} converts {types_text(n.op.in_types)} -> {types_text(n.op.out_types)} ({name}); the "
                f"{other} has no such conversion", r, p, *val)
    elif name in TRANSCENDENTAL:
        ctx.add("math", "function", Severity.ERROR, f"{side} computes {name} {types_text(n.op.in_types)}; the {other} "
                f"does not", r, p, *val)
    elif name == "assert":
        msg = n.op.attrs.get("string", "").strip('"')
        if r is None:
            ctx.add("structure", "runtime_check", Severity.NOTE,
                    f"port adds a runtime check the reference does not have: {msg!r}", r, p, *val)
        else:
            ctx.add("structure", "runtime_check", Severity.WARNING,
                    f"reference checks {msg!r} at run time; the port does not", r, p, *val)
    elif name == "if":
        ctx.add("structure", "control", Severity.ERROR, f"{side} has an 'if' the {other} lacks", r, p, *val)
    elif name in ("print_tko", "print"):
        ctx.add("structure", "print", Severity.NOTE, f"{side} prints something the {other} does not", r, p, *val)
