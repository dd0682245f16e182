"""mma: operand and accumulator types of paired matrix multiply-accumulates."""

from __future__ import annotations

from tileport.validators.tileir.canon import Node
from tileport.validators.tileir.checks.context import Ctx, types_text
from tileport.validators.tileir.findings import Severity
from tileport.validators.tileir.parse import type_info

def check_mma(ctx: Ctx, r: Node, p: Node) -> None:
    ri, pi = r.op.in_types, p.op.in_types
    if r.op.name != p.op.name:
        ctx.add("mma", "kind", Severity.ERROR, f"reference uses {r.op.name}, the port {p.op.name}", r, p,
                r.op.name, p.op.name)
    if len(ri) >= 3 and len(pi) >= 3:
        ra, pa = type_info(ri[2]), type_info(pi[2])
        if ri[2] != pi[2]:
            ctx.add("mma", "accumulator", Severity.ERROR,
                    f"MMA accumulates in {ri[2]} in the reference but {pi[2]} in the port"
                    f"{' (precision lost)' if ra.elem == 'f32' and pa.elem in ('f16', 'bf16') else ''}",
                    r, p, ri[2], pi[2])
        for k, label in ((0, "A"), (1, "B")):
            if ri[k] != pi[k]:
                ctx.add("mma", "operands", Severity.ERROR,
                        f"MMA operand {label} is {ri[k]} in the reference but {pi[k]} in the port", r, p,
                        ri[k], pi[k])
    elif ri != pi:
        ctx.add("mma", "operands", Severity.ERROR, f"MMA types {types_text(ri)} vs {types_text(pi)}", r, p,
                types_text(ri), types_text(pi))
    rf = [f for f in r.op.flags if f in ("signed", "unsigned")]
    pf = [f for f in p.op.flags if f in ("signed", "unsigned")]
    if rf != pf:
        ctx.add("mma", "signedness", Severity.ERROR, f"MMA signedness {' '.join(rf)} vs {' '.join(pf)}", r, p,
                " ".join(rf), " ".join(pf))
