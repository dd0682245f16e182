"""Stage D, Host + correctness: the launcher and the port against the reference on the GPU, every declared
shape x dtype. ALL_PASS; FAIL with fail class host (wiring / FFI / launch) or kernel (device math);
BLOCKED(env) when the GPU, the driver or the gates themselves are missing."""

from __future__ import annotations

from tileport.pipeline.stages._gpu_run import env_blocked, run_gate
from tileport.records import CorrectnessDetails, FailClass, Stage, StageResult, utcnow

STAGE = Stage.HOST_CORRECTNESS


def _case(c) -> dict:
    if hasattr(c, "model_dump"):
        return c.model_dump(mode="json")
    return dict(c) if isinstance(c, dict) else {"case": str(c)}


def result_from_report(report, *, attempt: int, started_at) -> StageResult:
    cases = [_case(c) for c in (getattr(report, "cases", None) or [])]
    common = dict(stage=STAGE, attempt=attempt, started_at=started_at, finished_at=utcnow(),
                  commands=list(getattr(report, "commands", None) or []))
    if getattr(report, "env_missing", None):
        return env_blocked(report.env_missing, **common)
    evaluated = [c for c in cases if c.get("status") != "NOT_EVALUATED"]
    failed = [c for c in evaluated if str(c.get("status", "")).lower() not in ("pass", "ok", "passed")]
    tests = [{k: c.get(k) for k in ("name", "status", "reference", "port_launches", "seconds", "fail_class",
                                    "message")} for c in cases if c.get("source") == "tests"]
    counts = dict(cases=len(cases), evaluated=len(evaluated), not_evaluated=len(cases) - len(evaluated),
                  passed=len(evaluated) - len(failed), tests=tests[:500])
    said = report.summary() if hasattr(report, "summary") else f"{len(evaluated) - len(failed)} of {len(evaluated)} pass"
    if report.all_pass:
        return StageResult(**common, verdict="ALL_PASS", details=CorrectnessDetails(**counts).dump(),
                           summary=said)
    fc = getattr(report, "fail_class", None)
    fc = FailClass(fc.value if hasattr(fc, "value") else fc) if fc else None
    details = CorrectnessDetails(**counts, failed=len(failed), failed_cases=failed[:20])
    if not evaluated:
        said = "no case evaluated the port: " + said
    return StageResult(**common, verdict="FAIL", fail_class=fc, details=details.dump(),
                       summary=f"{said} ({fc.value if fc else 'unclassified'})")


def run(ctx) -> StageResult:
    from tileport.validators.gpu import host_and_correctness

    return run_gate(ctx, STAGE, host_and_correctness,
                    lambda report, **kw: result_from_report(report, **kw))
