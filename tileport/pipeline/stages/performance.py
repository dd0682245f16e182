"""Stage E, Performance: device time of port vs reference per configuration (after correctness passed).
DONE when every configuration was measured, geomean(port / reference) <= [perf] geomean_max and no timed
configuration is above [perf] config_max; else INVESTIGATE; BLOCKED(env) without a GPU. `tileport gpu ingest`
records E through the same rule."""

from __future__ import annotations

from tileport.pipeline.stages._gpu_run import env_blocked, run_on_gpu
from tileport.records import FailClass, PerfDetails, Stage, StageResult, utcnow

STAGE = Stage.PERFORMANCE


ROW_KEYS = ("config", "ref_ms", "port_ms", "ratio", "flags", "tiny", "failed", "hw", "launch", "idle_gap_us",
            "ir_diff", "host_us", "source")


def _row(r) -> dict:
    """A row as stage F reads it: everything but the raw samples (those are in the store's perf_rows)."""
    d = r.model_dump(mode="json") if hasattr(r, "model_dump") else (dict(r) if isinstance(r, dict) else {"row": str(r)})
    return {k: d[k] for k in ROW_KEYS if k in d} if "config" in d else d


def result_from_report(report, *, attempt: int, started_at, geomean_max: float,
                       config_max: float | None = None) -> StageResult:
    common = dict(stage=STAGE, attempt=attempt, started_at=started_at, finished_at=utcnow(),
                  commands=list(getattr(report, "commands", None) or []))
    if getattr(report, "env_missing", None):
        return env_blocked(report.env_missing, **common)
    rows = [_row(r) for r in (report.rows or [])]
    worst = report.worst if getattr(report, "worst", None) is not None else None
    gm = report.geomean
    hw = getattr(report, "hw", None) or {}
    details = PerfDetails(geomean=gm, geomean_max=geomean_max, config_max=config_max, rows=rows[:200],
                          worst=worst.config if worst else None, worst_ratio=worst.ratio if worst else None,
                          band=getattr(report, "band", None), complete=getattr(report, "complete", gm is not None),
                          hw=hw, arch=hw.get("arch"), left_out=list(getattr(report, "left_out", None) or [])[:200],
                          host_us={side: report.host_median(side) for side in ("ref", "port")}
                          if hasattr(report, "host_median") else {}).dump()
    n = len(rows)
    if gm is None:
        return StageResult(**common, verdict="INVESTIGATE", fail_class=FailClass.KERNEL, details=details,
                           summary="no complete measurement: a configuration was not measured or the L2 flush was "
                                   "not verified (a missing measurement is a failure)")
    if gm > geomean_max:
        return StageResult(**common, verdict="INVESTIGATE", fail_class=FailClass.KERNEL, details=details,
                           summary=f"geomean {gm:.3f} > {geomean_max} over {n} configuration(s)")
    if config_max is not None and worst is not None and worst.ratio > config_max:
        return StageResult(**common, verdict="INVESTIGATE", fail_class=FailClass.KERNEL, details=details,
                           summary=f"geomean {gm:.3f} <= {geomean_max}, but {worst.config} runs "
                                   f"{worst.ratio:.3f}x the reference (> {config_max} per configuration)")
    return StageResult(**common, verdict="DONE", details=details,
                       summary=f"geomean {gm:.3f} <= {geomean_max} over {n} configuration(s); worst "
                               f"{worst.ratio:.3f}" if worst else f"geomean {gm:.3f} <= {geomean_max}")


def run(ctx) -> StageResult:
    from tileport.validators.gpu import performance

    return run_on_gpu(ctx, STAGE, performance,
                    lambda report, **kw: result_from_report(report, geomean_max=ctx.config.perf.geomean_max,
                                                            config_max=ctx.config.perf.config_max, **kw))
