"""Stage E, Performance: device time of port vs reference per configuration (after correctness passed).
DONE when geomean(port / reference) <= [perf] geomean_max, else INVESTIGATE; BLOCKED(env) without a GPU."""

from __future__ import annotations

from tileport.agents.stages._gates import run_gate
from tileport.records import FailClass, Stage, StageResult, utcnow

STAGE = Stage.PERFORMANCE


def _row(r) -> dict:
    return r.model_dump(mode="json") if hasattr(r, "model_dump") else (dict(r) if isinstance(r, dict) else {"row": str(r)})


def result_from_report(report, *, attempt: int, started_at, geomean_max: float) -> StageResult:
    common = dict(stage=STAGE, attempt=attempt, started_at=started_at, finished_at=utcnow(),
                  commands=list(getattr(report, "commands", None) or []))
    if getattr(report, "env_missing", None):
        return StageResult(**common, verdict="BLOCKED", fail_class=FailClass.ENV,
                           details={"env_missing": report.env_missing}, summary=f"blocked: {report.env_missing}")
    rows = [_row(r) for r in (report.rows or [])]
    worst = _row(report.worst) if getattr(report, "worst", None) is not None else None
    details = {"geomean": report.geomean, "geomean_max": geomean_max, "rows": rows[:200], "worst": worst,
               "arch": (getattr(report, "hw", None) or {}).get("arch")}
    if report.geomean is not None and report.geomean <= geomean_max:
        return StageResult(**common, verdict="DONE", details=details,
                           summary=f"geomean {report.geomean:.3f} <= {geomean_max} over {len(rows)} configuration(s)")
    return StageResult(**common, verdict="INVESTIGATE", fail_class=FailClass.KERNEL, details=details,
                       summary=f"geomean {report.geomean} > {geomean_max}")


def run(ctx) -> StageResult:
    return run_gate(ctx, STAGE, "performance",
                    lambda report, **kw: result_from_report(report, geomean_max=ctx.config.perf.geomean_max, **kw))
