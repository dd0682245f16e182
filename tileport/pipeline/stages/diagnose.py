"""Stage C, Diagnose a translation fault: reads both IRs and the failing case, names an owner (kernel or host)
and one concrete next edit. Never edits code; the owner's stage reruns with the edit as its feedback."""

from __future__ import annotations

from pathlib import Path

from tileport.agents.writers import DiagnoseOutcome, DiagnosisTask
from tileport.records import DiagnosisDetails, FailClass, Stage, StageResult, WriteKernelDetails, utcnow

STAGE = Stage.DIAGNOSE_TRANSLATION


def _read_all(paths: list[Path], limit: int = 3) -> str:
    out = []
    for p in sorted(paths)[:limit]:
        out.append(f"// {p.name}\n" + p.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(out)


def _reference_texts(ctx) -> str:
    return _read_all(list(ctx.paths.reference.rglob("*.tileir")))


def _port_texts(ctx) -> str:
    return _read_all(list((ctx.paths.crate / "artifacts").glob("*.tileir")))


def result_from_diagnosis(out: DiagnoseOutcome, *, stage: Stage, attempt: int, started_at) -> StageResult:
    common = dict(stage=stage, attempt=attempt, started_at=started_at, finished_at=utcnow(), tokens=out.tokens,
                  model_id=out.model_id)
    if out.blocked:
        return StageResult(**common, verdict="BLOCKED", fail_class=FailClass.ENV,
                           details=DiagnosisDetails(**out.details).dump(), summary=out.blocked)
    d = out.diagnosis
    assert d is not None
    return StageResult(**common, verdict=d.verdict, fail_class=FailClass(d.owner),
                       details=DiagnosisDetails(**out.details, owner=d.owner, next_edit=d.next_edit,
                                                evidence=d.evidence).dump(),
                       summary=f"owner {d.owner}: {d.next_edit}")


def diagnose_with(ctx, task: DiagnosisTask, stage: Stage, started) -> StageResult:
    from tileport.agents.transcripts import keep_transcript
    from tileport.agents.writers import DraftWriter

    out = ctx.writer.diagnose(ctx, task)
    kept = keep_transcript(ctx.paths, f"{stage.value}-{ctx.attempt}", out.transcript)
    if out.fault is not None:
        if not out.fault.is_model_fault:
            return StageResult(stage=stage, attempt=ctx.attempt, verdict="BLOCKED", fail_class=FailClass.ENV,
                               started_at=started, finished_at=utcnow(), tokens=out.tokens, artifacts=kept,
                               details=DiagnosisDetails(**{**out.details, "fault": out.fault.kind.value}).dump(),
                               summary=f"model endpoint: {out.fault.message}")
        fallback = DraftWriter().diagnose(ctx, task)  # the model gave nothing usable: the deterministic reading
        fallback.tokens, fallback.model_id = out.tokens, out.model_id
        fallback.details = {**out.details, **fallback.details, "fault": out.fault.kind.value}
        out = fallback
    r = result_from_diagnosis(out, stage=stage, attempt=ctx.attempt, started_at=started)
    return r.model_copy(update={"artifacts": list(r.artifacts) + kept}) if kept else r


def run(ctx) -> StageResult:
    started = utcnow()
    failed = ctx.latest()  # the run that sent the conversion here
    details = failed.details if failed is not None else None
    b = details if isinstance(details, WriteKernelDetails) else None
    if b is not None and b.no_writer:
        return StageResult(stage=STAGE, attempt=ctx.attempt, verdict="BLOCKED", fail_class=FailClass.ENV,
                           started_at=started, finished_at=utcnow(),
                           summary=failed.summary or "no writer: configure a model")
    failure = (f"stage {failed.stage} attempt {failed.attempt}: {failed.verdict} ({failed.fail_class or '-'}) "
               f"{failed.summary}" if failed is not None else "no failed stage run recorded")
    if b is not None and b.categories:
        failure += f"\nfailing IR categories: {', '.join(b.categories)}"
    fail_class = failed.fail_class if failed is not None else None
    task = DiagnosisTask(kind="translation", op=ctx.op, failure=failure, reference_ir=_reference_texts(ctx),
                         port_ir=_port_texts(ctx), findings=_findings(b),
                         default_owner=fail_class if fail_class in ("kernel", "host") else "kernel")
    return diagnose_with(ctx, task, STAGE, started)


def _findings(details: WriteKernelDetails | None) -> str:
    text = (details.feedback if details is not None else None) or ""
    keep = [ln for ln in text.splitlines() if ln.strip().startswith(("ERROR", "WARN", "FAIL", "UNMATCHED"))
            or "error" in ln.lower()]
    return "\n".join(keep) or text[-3000:]
