"""The typed records every layer shares: stage runs, verdicts, commands, artifacts, approvals.

Defined once (pydantic) so agents, router, store, CLI and dashboard agree on one contract.
Routing reads only structured fields; free text (`summary`) is for humans.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field


class Stage(str, Enum):
    """The anchor workflow's stages; the letter is the anchor's name for it."""

    ANALYZE = "A"
    WRITE_KERNEL = "B"
    DIAGNOSE_TRANSLATION = "C"
    HOST_CORRECTNESS = "D"
    PERFORMANCE = "E"
    DIAGNOSE_PERFORMANCE = "F"


# Verdict words per stage, exactly as the anchor spells them.
STAGE_VERDICTS: dict[Stage, tuple[str, ...]] = {
    Stage.ANALYZE: ("PASS", "FAIL_FIXABLE", "BLOCKED"),
    Stage.WRITE_KERNEL: ("COMPILED", "FAIL_COMPILE", "FAIL_FIXABLE", "BLOCKED"),
    Stage.DIAGNOSE_TRANSLATION: ("PASS", "PASS_WITH_NOTES", "FAIL_FIXABLE", "FAIL_COMPILER_BUG", "BLOCKED"),
    Stage.HOST_CORRECTNESS: ("ALL_PASS", "FAIL", "BLOCKED"),
    Stage.PERFORMANCE: ("DONE", "INVESTIGATE", "BLOCKED"),
    Stage.DIAGNOSE_PERFORMANCE: ("PASS", "PASS_WITH_NOTES", "FAIL_FIXABLE", "BLOCKED"),
}


class FailClass(str, Enum):
    """Who must act on a failure: the kernel writer, the host writer, or the environment (stop)."""

    KERNEL = "kernel"
    HOST = "host"
    ENV = "env"


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class CommandRecord(BaseModel):
    """One external command a stage ran, as evidence."""

    argv: list[str]
    cwd: str | None = None
    exit_code: int
    seconds: float
    timed_out: bool = False
    output_truncated: bool = False


class ArtifactRecord(BaseModel):
    """A file a stage produced, pinned by content hash so evidence cannot silently change."""

    kind: str  # e.g. "analysis", "tileir_bytecode", "tileir_text", "cubin", "diagnostics"
    path: str
    sha256: str
    bytes: int

    @classmethod
    def of(cls, kind: str, path: str | Path) -> "ArtifactRecord":
        p = Path(path)
        return cls(kind=kind, path=str(p), sha256=sha256_file(p), bytes=p.stat().st_size)


class TokenUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: "TokenUsage") -> "TokenUsage":
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class StageResult(BaseModel):
    """The structured verdict a stage returns; the router reads only these fields."""

    stage: Stage
    attempt: int = 1
    verdict: str
    fail_class: FailClass | None = None
    commands: list[CommandRecord] = Field(default_factory=list)
    artifacts: list[ArtifactRecord] = Field(default_factory=list)
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    model_id: str | None = None
    cap: int | None = None  # the attempt cap this run counted against
    # Stage-specific structured evidence the router or a reviewer reads (e.g. C: owner and next edit;
    # B: diagnostics counts and IR self-check verdict; E: geomean and worst configuration).
    details: dict[str, Any] = Field(default_factory=dict)
    summary: str = ""

    def model_post_init(self, __context: object) -> None:
        allowed = STAGE_VERDICTS[self.stage]
        if self.verdict not in allowed:
            raise ValueError(f"verdict {self.verdict!r} is not one of stage {self.stage.value}'s {allowed}")
