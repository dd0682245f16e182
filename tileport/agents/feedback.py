"""What the writer is told to fix, as typed items: compiler diagnostics with their source lines, the IR self-check's
findings for the entries that failed, the diagnoser's next edit. Stored in B's record (`details.feedback_items`) so
the next attempt renders them within its context budget instead of a text cut at a fixed length."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel


class FeedbackItem(BaseModel):
    kind: Literal["diagnostic", "ir_finding", "diagnoser", "note"]
    where: str = ""  # src/kernel.rs:13:39, or entry/variant/target of an IR pair
    code: str = ""  # E0308, JIT, memory.padding, ...
    message: str
    source: str = ""  # the compiler's rendering with the offending lines, or reference vs port values

    def render(self) -> str:
        head = " ".join(x for x in (f"[{self.kind}]", self.where, self.code) if x) + f": {self.message}"
        return head + (f"\n{self.source.rstrip()}" if self.source.strip() else "")


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


def items_from_record(details: dict) -> list[FeedbackItem]:
    """The items a B record stored; [] for records written before they existed."""
    raw = details.get("feedback_items")
    if not isinstance(raw, list):
        return []
    out = []
    for r in raw:
        try:
            out.append(FeedbackItem.model_validate(r))
        except ValueError:
            continue
    return out
