"""What the writer is told to fix, as typed items: compiler diagnostics with their source lines, the IR self-check's
findings for the entries that failed, the diagnoser's next edit. Stored in B's record (`details.feedback_items`) so
the next attempt renders them within its context budget instead of a text cut at a fixed length."""

from __future__ import annotations

from typing import Any

from tileport.records import FeedbackItem, StageDetails, WriteKernelDetails

__all__ = ["FeedbackItem", "items_from_diagnostics", "items_from_record", "items_from_self_check"]


def items_from_diagnostics(diags: Any) -> list[FeedbackItem]:
    """Errors first, then warnings; each with the compiler's rendered text (it shows the source lines)."""
    out = []
    for d in sorted(diags, key=lambda d: (not d.is_error,)):
        src = d.rendered or (f"{d.line:>5} | {d.snippet}" if d.snippet and d.line else d.snippet or "")
        out.append(FeedbackItem(kind="diagnostic", where=d.location(), code=d.code or d.source.value,
                                message=f"{d.level}: {d.message}", source=src))
    return out


def items_from_self_check(report: Any) -> list[FeedbackItem]:
    """The findings of the failed pairs only (the entries concerned), errors before warnings."""
    out = []
    for p in report.pairs:
        if not p.failed:
            continue
        where = f"{p.entry}/{p.variant}/{p.target}"
        if not p.findings:
            out.append(FeedbackItem(kind="ir_finding", where=where, code=p.verdict, message=p.reason or p.verdict))
        for f in sorted(p.findings, key=lambda f: f.severity.value != "error"):
            if f.severity.value == "note":
                continue
            vals = "\n".join(x for x in (f"reference: {f.ref}" if f.ref else "", f"port: {f.port}" if f.port else "")
                             if x)
            out.append(FeedbackItem(kind="ir_finding", where=where, code=f.check,
                                    message=f"{f.severity.value}: {f.message}", source=vals))
    return out


def items_from_record(details: StageDetails) -> list[FeedbackItem]:
    """The items a B record stored (typed by records.details: an item that no longer validates is dropped); [] for
    records written before they existed, and for any other stage's details."""
    return list(details.feedback_items) if isinstance(details, WriteKernelDetails) else []
