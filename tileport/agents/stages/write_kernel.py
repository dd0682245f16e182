"""Stage B, Write kernel: a writer produces `kernel.rs`; the build and the IR self-check judge it.

Verdicts (the router reads only these fields):
- COMPILED: the crate built, every job produced Tile IR, and the IR self-check is PASS / PASS_WITH_NOTES;
- FAIL_COMPILE (owner kernel): rustc, the cutile JIT, tileiras or the source policy rejected kernel.rs;
- FAIL_FIXABLE (owner kernel): it compiles but the IR self-check failed (routed to Diagnose), or no writer
  produced a kernel;
- BLOCKED (env): the environment cannot build (crates missing, cargo failing outside rustc, time limit).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from tileport.records import ArtifactRecord, FailClass, Stage, StageResult, utcnow
from tileport.validators.rust.build import RustBuildResult
from tileport.validators.rust.selfcheck import SelfCheckReport
from tileport.validators.tileir.diff import Severity, Verdict

STAGE = Stage.WRITE_KERNEL
ENV_CODES = frozenset({"TP-DEPS-MISSING", "TP-CARGO", "TP-TIMEOUT"})


def _build_verdict(build: RustBuildResult) -> tuple[str, FailClass | None]:
    if build.ok:
        return "COMPILED", None
    if any(d.code in ENV_CODES for d in build.errors):
        return "BLOCKED", FailClass.ENV
    return "FAIL_COMPILE", FailClass.KERNEL


def result_from_build(build: RustBuildResult, report: SelfCheckReport | None = None, *, attempt: int = 1,
                      started_at: datetime | None = None) -> StageResult:
    """The B record of one build (and its IR self-check when there is a reference)."""
    verdict, fail = _build_verdict(build)
    errors = build.errors
    details: dict = {"build_stage": build.stage, "errors": len(errors),
                     "warnings": sum(1 for d in build.diagnostics if d.level == "warning"),
                     "error_codes": sorted({d.code for d in errors if d.code})[:20], "jobs": len(build.jobs)}
    first = errors[0].short() if errors else ""
    summary = f"{len(build.jobs)} job(s), {len(errors)} error(s) at {build.stage}" + (f"; {first}" if first else "")
    artifacts: list[ArtifactRecord] = list(build.artifacts)
    if verdict == "COMPILED" and report is not None:
        bad = [p for p in report.pairs if p.failed]
        details.update(self_check=report.verdict.value, pairs=len(report.pairs), pairs_failed=len(bad),
                       uncovered=len(report.uncovered),
                       categories=sorted({f.category for p in bad for f in p.findings
                                          if f.severity == Severity.ERROR}))
        if report.verdict == Verdict.FAIL_FIXABLE:
            verdict, fail = "FAIL_FIXABLE", FailClass.KERNEL
            why = ""
            if bad:
                p = bad[0]
                errs = [f for f in p.findings if f.severity == Severity.ERROR]
                why = f"; first: {p.entry}/{p.variant}/{p.target} " + (
                    f"{errs[0].check}: {errs[0].message}" if errs else f"{p.verdict}: {p.reason}")
            summary = f"IR self-check FAIL_FIXABLE: {len(bad)} of {len(report.pairs)} pair(s) failed{why}"
        else:
            summary = f"compiled; IR self-check {report.verdict.value} on {len(report.pairs)} pair(s)"
            if report.uncovered:
                summary += f"; {len(report.uncovered)} reference instance(s) not covered"
        ap = Path(report.analysis)
        if ap.is_file():
            artifacts.append(ArtifactRecord.of("analysis", ap))
    return StageResult(stage=STAGE, attempt=attempt, verdict=verdict, fail_class=fail, commands=list(build.commands),
                       artifacts=artifacts, started_at=started_at or utcnow(), finished_at=utcnow(),
                       details=details, summary=summary)


def result_from_blocked(error: Exception, *, attempt: int = 1, started_at: datetime | None = None) -> StageResult:
    """A build that could not start: a toolchain part is missing (stop, never guess)."""
    return StageResult(stage=STAGE, attempt=attempt, verdict="BLOCKED", fail_class=FailClass.ENV,
                       started_at=started_at or utcnow(), finished_at=utcnow(), details={"error": str(error)},
                       summary=str(error))
