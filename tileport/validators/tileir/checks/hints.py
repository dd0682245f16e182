"""hints: optimisation hints of entries and ops."""

from __future__ import annotations

from tileport.validators.tileir.canon import Node
from tileport.validators.tileir.checks.context import Ctx
from tileport.validators.tileir.model import Finding, Severity
from tileport.validators.tileir.parse import parse_hints

def check_op_hints(ctx: Ctx, r: Node, p: Node) -> None:
    rh = parse_hints(r.op.attrs.get("optimization_hints", ""))
    ph = parse_hints(p.op.attrs.get("optimization_hints", ""))
    if rh == ph:
        return
    for target in sorted(set(rh) | set(ph)):
        a, b = rh.get(target, {}), ph.get(target, {})
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                sev = Severity.WARNING if key == "latency" else Severity.ERROR
                ctx.add("hints", key, sev,
                        f"{r.op.name} hint {key} ({target}) is {a.get(key, 'unset')} in the reference but "
                        f"{b.get(key, 'unset')} in the port", r, p, a.get(key, "unset"),
                        b.get(key, "unset"))


def check_entry_hints(ctx: Ctx) -> None:
    a_all = ctx.ref.entry.hints
    b_all = ctx.port.entry.hints
    for target in sorted(set(a_all) | set(b_all)):
        a, b = a_all.get(target, {}), b_all.get(target, {})
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                ctx.findings.append(Finding(
                    category="hints", check=f"hints.{key}", severity=Severity.ERROR, entry=ctx.entry,
                    message=f"entry hint {key} ({target}) is {a.get(key, 'unset')} in the reference but "
                            f"{b.get(key, 'unset')} in the port",
                    ref_line=ctx.ref.entry.line, port_line=ctx.port.entry.line,
                    ref=a.get(key, "unset"), port=b.get(key, "unset")))
