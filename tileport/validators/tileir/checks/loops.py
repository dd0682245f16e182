"""loops: kind, bounds and loop-carried values of paired loops."""

from __future__ import annotations

from tileport.validators.tileir.canon import Node, render
from tileport.validators.tileir.checks.context import Ctx, types_text
from tileport.validators.tileir.findings import Severity

def check_loop(ctx: Ctx, r: Node, p: Node) -> None:
    if r.op.name != p.op.name:
        ctx.add("loops", "kind", Severity.ERROR,
                f"reference uses a '{r.op.name}' loop, the port a '{p.op.name}' loop", r, p, r.op.name, p.op.name)
        return
    if r.op.name == "for":
        for k, label in ((0, "lower bound"), (1, "upper bound"), (2, "step")):
            if k < len(r.operands) and k < len(p.operands) and r.operands[k].hash != p.operands[k].hash:
                rv, pv = render(r.operands[k], ctx.ref), render(p.operands[k], ctx.port)
                if r.operands[k].splat is not None and p.operands[k].splat is None:
                    # the reference was specialised (the value folded at compile time); the port computes it
                    ctx.add("loops", "specialised", Severity.NOTE,
                            f"for loop {label} is the constant {rv} in the reference (specialised) and computed at "
                            f"run time as {pv} in the port: equal for the shapes the reference was built for, and "
                            f"the port stays general", r, p, rv, pv)
                    continue
                ctx.add("loops", "bounds", Severity.ERROR,
                        f"for loop {label} is {rv} in the reference but {pv} in the port", r, p, rv, pv)
        rc, pc = r.operands[3:], p.operands[3:]
    else:
        rc, pc = r.operands, p.operands
    if len(rc) != len(pc):
        ctx.add("loops", "carried", Severity.ERROR,
                f"{r.op.name} loop carries {len(rc)} value(s) in the reference but {len(pc)} in the port", r, p,
                len(rc), len(pc))
    else:
        rt = [v.type for v in rc]
        pt = [v.type for v in pc]
        if rt != pt:
            ctx.add("loops", "carried_types", Severity.ERROR,
                    f"{r.op.name} loop-carried values are {types_text(rt)} in the reference but {types_text(pt)} in "
                    f"the port",
                    r, p, types_text(rt), types_text(pt))
