"""benign: dead code and values computed twice (CSE), notes only."""

from __future__ import annotations

from collections import defaultdict

from tileport.validators.tileir.checks.context import Ctx
from tileport.validators.tileir.findings import Severity

def check_benign(ctx: Ctx) -> None:
    al = ctx.al
    dead_r = [n for n in ctx.ref.nodes if not n.live and n.idx not in al.r2p]
    dead_p = [n for n in ctx.port.nodes if not n.live and n.idx not in al.p2r]
    for side, dead in (("reference", dead_r), ("port", dead_p)):
        if dead:
            kinds = defaultdict(int)
            for n in dead:
                kinds[n.op.name] += 1
            detail = ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items()))
            ctx.add("benign", "dead_code", Severity.NOTE, f"{side} has {len(dead)} unused op(s) the other side "
                    f"does not: {detail}", dead[0] if side == "reference" else None,
                    dead[0] if side == "port" else None)
    dup_r = [n for n in ctx.ref.nodes if n.live and n.idx not in al.r2p and n.hash in al.port_hashes
             and n.op.name != "assume" and not n.transparent]
    dup_p = [n for n in ctx.port.nodes if n.live and n.idx not in al.p2r and n.hash in al.ref_hashes
             and n.op.name != "assume" and not n.transparent]
    for side, dups in (("reference", dup_r), ("port", dup_p)):
        if dups:
            names = ", ".join(sorted({n.op.name for n in dups}))
            ctx.add("benign", "cse", Severity.NOTE, f"{side} computes {len(dups)} value(s) twice that the other "
                    f"side computes once ({names})", dups[0] if side == "reference" else None,
                    dups[0] if side == "port" else None)
