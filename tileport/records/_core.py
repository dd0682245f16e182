"""The typed records every layer shares: stage runs, commands, artifacts, approvals (verdicts: records.verdicts,
per-stage details: records.details).

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

from tileport.records.details import DETAILS, StageDetails, details_of
from tileport.records.verdicts import STAGE_VERDICTS, FailClass, Stage


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
    # How model-written code was confined (tileport.exec.sandbox): backend, profile, writable paths, limits;
    # None for trusted tools. backend "none" means it ran unconfined ([sandbox] require = false).
    sandbox: dict | None = None
    cached_from: str | None = None  # the output came from tileport's content-hash cache (this file), not a run


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

    @property
    def typed(self) -> StageDetails:
        """`details` as this stage's typed model (records.details)."""
        return details_of(self.stage, self.details)

    def with_details(self, **fields: Any) -> "StageResult":
        """A copy whose details also carry `fields`, checked as the stage's model checks a writer (a misspelt
        key or a wrong type raises); what the details held already is kept as it was."""
        return self.model_copy(update={"details": {**self.details, **DETAILS[self.stage](**fields).dump()}})


# Merge gates and human decisions ------------------------------------------------------------------
# What a merge gate records (GitHub checks, Gerrit submit requirements, merge queues): per gate its verdict, status,
# the commit it was evaluated on, attempt and cap, and its evidence pinned by sha256; decisions name who, when and why.


class GateStatus(str, Enum):
    """Whether one required gate lets a merge of the branch HEAD through."""

    SATISFIED = "satisfied"  # its newest run passed on a commit that still stands for HEAD
    UNSATISFIED = "unsatisfied"  # its newest run did not pass
    MISSING = "missing"  # no run at all
    STALE = "stale"  # it passed, but on a commit HEAD has moved away from
    ERROR = "error"  # its recorded evidence no longer matches the files (sha256 changed)
    OVERRIDDEN = "overridden"  # not satisfied, let through by a recorded human override (never a pass)


class GateEvidence(BaseModel):
    kind: str
    path: str
    sha256: str


class GateRecord(BaseModel):
    """One required gate as evaluated for one commit of a conversion branch."""

    name: str  # the stage letter (A, B, D, E)
    status: GateStatus
    required: list[str]  # verdicts that pass
    verdict: str | None = None
    stage_run_id: int | None = None
    commit: str | None = None  # the commit the run was evaluated on
    head: str  # the commit the gate was evaluated for
    attempt: int | None = None
    cap: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    model_id: str | None = None
    exit_codes: list[int] = Field(default_factory=list)
    evidence: list[GateEvidence] = Field(default_factory=list)
    evidence_sha256: str | None = None  # digest over the run's verdict, commit, details and evidence hashes
    reason: str = ""  # why it is not satisfied (one phrase), or the override's reason

    @property
    def passes(self) -> bool:
        return self.status is GateStatus.SATISFIED


class Decision(str, Enum):
    APPROVE = "approve"
    REJECT = "reject"
    OVERRIDE = "override"  # an approval that also lets named unsatisfied gates through, with a reason


class ApprovalRecord(BaseModel):
    """A human decision bound to one commit, with the gate results the person saw."""

    id: int | None = None
    conversion_id: int
    commit: str
    approver: str
    decision: Decision
    ts: str
    comment: str | None = None
    reason: str | None = None
    overrides: list[str] = Field(default_factory=list)  # gate names an override lets through
    gates: list[GateRecord] = Field(default_factory=list)


class MergeOutcome(BaseModel):
    """The merge rule's answer: merged (with the merge commit) or refused (with every reason, gate by gate)."""

    conversion_id: int
    merged: bool
    target: str
    head: str | None = None
    target_before: str | None = None
    merge_commit: str | None = None
    refusals: list[str] = Field(default_factory=list)  # one phrase each: "gate D missing (no D run)", ...
    gates: list[GateRecord] = Field(default_factory=list)
    approval: ApprovalRecord | None = None
    geomean: float | None = None
    hint: str = ""  # what to do next (rebase, re-run the gates, approve)
