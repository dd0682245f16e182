"""Equivalent integer forms (`tileir.intforms`): ops the two sides write differently but that compute the same.

They hash alike, so they pair exactly and nothing downstream differs; this check says what was written on each side
and on what the equality rests. Proven from the IR: a note (neither values nor speed change). Resting on a sign
the IR does not establish: a warning naming it (a result changes only if the value is negative).
"""

from __future__ import annotations

import re

from tileport.validators.tileir.checks.context import Ctx
from tileport.validators.tileir.findings import Severity


_DIGITS = re.compile(r"\d+")


def check_equivalent_forms(ctx: Ctx) -> None:
    al = ctx.al
    seen: dict[tuple[str, str, str, bool], list] = {}  # one finding per kind of rewrite, with a count
    for r in ctx.ref.nodes:
        p = al.r2p.get(r.idx)
        if p is None or r.transparent or p.transparent or r.hash != p.hash or not r.live:
            continue
        rf, pf = r.form, p.form
        if rf is None or pf is None or rf.written == pf.written:
            continue
        proven = all(f.proven or not f.needs for f in (rf, pf))
        key = (rf.computes, _DIGITS.sub("N", rf.written), _DIGITS.sub("N", pf.written), proven)
        if key in seen:
            seen[key][0] += 1
            continue
        seen[key] = [0, len(ctx.findings)]
        needs = [f.needs_text(ce) for f, ce in ((rf, ctx.ref), (pf, ctx.port)) if f.needs]
        unproven = [f.needs_text(ce) for f, ce in ((rf, ctx.ref), (pf, ctx.port)) if f.needs and not f.proven]
        what = f"{rf.computes}: the reference writes `{rf.written}`, the port `{pf.written}`"
        if unproven:
            ctx.add("structure", "equivalent_form", Severity.WARNING,
                    f"{what}; equal only when {'; '.join(unproven)}, which the IR does not establish: the result "
                    f"differs when one of them is negative (check the values' range)", r, p, rf.written, pf.written)
        else:
            why = f" ({'; '.join(needs)}, proven from the IR)" if needs else ""
            ctx.add("structure", "equivalent_form", Severity.NOTE,
                    f"{what}: equal{why}; neither values nor speed change", r, p, rf.written, pf.written)
    for count, at in seen.values():
        if count and at < len(ctx.findings):
            f = ctx.findings[at]
            f.message += f" (and {count} more like it)"
