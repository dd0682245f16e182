"""reduction: axis, identity, direction, combiner and dtype of paired reduce/scan ops."""

from __future__ import annotations

from tileport.validators.tileir.canon import Node, identity_values
from tileport.validators.tileir.checks.context import Ctx, types_text
from tileport.validators.tileir.findings import Severity

def combiner(n: Node) -> str:
    return ", ".join(ch.op.name + (f"<{ch.op.attrs['rounding']}>" if "rounding" in ch.op.attrs else "")
                     for region in n.children for ch in region if ch.op.name != "yield") or "nothing"


def check_reduction(ctx: Ctx, r: Node, p: Node) -> None:
    ra, pa = r.op.attrs, p.op.attrs
    if r.op.name != p.op.name:
        ctx.add("reduction", "kind", Severity.ERROR, f"reference does a {r.op.name}, the port a {p.op.name}", r, p,
                r.op.name, p.op.name)
        return
    if ra.get("dim") != pa.get("dim"):
        ctx.add("reduction", "axis", Severity.ERROR,
                f"{r.op.name} runs over dim {ra.get('dim')} in the reference but dim {pa.get('dim')} in the port",
                r, p, ra.get("dim"), pa.get("dim"))
    if identity_values(ra.get("identities")) != identity_values(pa.get("identities")):
        ctx.add("reduction", "identity", Severity.ERROR,
                f"{r.op.name} identity is {ra.get('identities')} in the reference but {pa.get('identities')} in the "
                f"port", r, p, ra.get("identities"), pa.get("identities"))
    if ra.get("reverse") != pa.get("reverse"):
        ctx.add("reduction", "direction", Severity.ERROR,
                f"scan reverse={ra.get('reverse')} in the reference but {pa.get('reverse')} in the port", r, p,
                ra.get("reverse"), pa.get("reverse"))
    if r.region_hashes != p.region_hashes:
        rc, pc = combiner(r), combiner(p)
        if rc != pc:
            ctx.add("reduction", "combiner", Severity.ERROR,
                    f"{r.op.name} combines with {rc} in the reference but {pc} in the port", r, p, rc, pc)
    if r.op.in_types != p.op.in_types and ra.get("dim") == pa.get("dim"):
        ctx.add("reduction", "dtype", Severity.ERROR,
                f"{r.op.name} reduces {types_text(r.op.in_types)} in the reference but {types_text(p.op.in_types)} in "
                f"the port",
                r, p, types_text(r.op.in_types), types_text(p.op.in_types))
