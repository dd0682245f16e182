"""What every check shares: the findings of one entry pair and small rendering helpers."""

from __future__ import annotations

import re

from tileport.validators.tileir.align import Alignment
from tileport.validators.tileir.canon import CanonEntry, Node, Val, render
from tileport.validators.tileir.findings import Finding, Severity

class Ctx:
    """Findings for one entry pair."""

    def __init__(self, entry: str, ref: CanonEntry, port: CanonEntry, al: Alignment, target: str | None = None):
        self.entry = entry
        self.ref = ref
        self.port = port
        self.al = al
        self.target = target  # the GPU target the modules were compiled for, when known
        self.findings: list[Finding] = []

    def add(self, category: str, check: str, severity: Severity, message: str, r: Node | None = None,
            p: Node | None = None, ref: object = None, port: object = None) -> None:
        self.findings.append(Finding(
            category=category, check=f"{category}.{check}", severity=severity, message=message, entry=self.entry,
            ref_line=r.op.line if r is not None else None, port_line=p.op.line if p is not None else None,
            ref=None if ref is None else str(ref), port=None if port is None else str(port)))

    def rdesc(self, v: Val, side: CanonEntry) -> str:
        return render(v, side)


def types_text(types: list[str]) -> str:
    return ", ".join(types) or "?"


NAME_RE = re.compile(r"%[A-Za-z0-9_$.-]+(?:#[0-9]+)?")


def strip_names(text: str) -> str:
    return NAME_RE.sub("%", text)[:200]


def int_or_none(s: str) -> int | None:
    try:
        return int(s.strip())
    except ValueError:
        return None
