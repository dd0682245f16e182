"""entries: the array parameters of a matched entry pair."""

from __future__ import annotations

from tileport.validators.tileir.canon import CanonEntry
from tileport.validators.tileir.checks.context import Ctx, types_text
from tileport.validators.tileir.findings import Finding, Severity

def check_signature(ctx: Ctx) -> None:
    def ptr_types(ce: CanonEntry) -> list[str]:
        return [ce.args[k].type for k, _ in sorted(ce.ptr_ordinal.items(), key=lambda kv: kv[1])]

    rp, pp = ptr_types(ctx.ref), ptr_types(ctx.port)
    if rp != pp:
        ctx.findings.append(Finding(
            category="entries", check="entries.signature", severity=Severity.ERROR, entry=ctx.entry,
            message=f"array parameters are ({types_text(rp)}) in the reference but ({types_text(pp)}) in the port",
            ref_line=ctx.ref.entry.line, port_line=ctx.port.entry.line, ref=types_text(rp), port=types_text(pp)))
