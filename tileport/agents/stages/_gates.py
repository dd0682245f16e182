"""Stages D and E alike: run a GPU gate of `tileport.validators.gpu` on the conversion's crate under the GPU limit
and turn its report into the stage's result. Without a GPU the gate itself reports BLOCKED(env) naming what is
missing: never a pass."""

from __future__ import annotations

from typing import Any, Callable

from tileport.records import DETAILS, FailClass, Stage, StageResult, utcnow

Gate = Callable[[Any, Any, Any, Any], Any]  # (crate_dir, analysis, spec, config) -> report


def inputs(ctx) -> tuple[Any, Any]:
    """(analysis, spec) of the conversion, as the gates take them."""
    from tileport.validators.rust.reference import load_analysis
    from tileport.validators.rust.spec import load_spec

    return load_analysis(ctx.paths.reference), load_spec(ctx.paths.spec_json)


def env_blocked(missing: str, *, stage: Stage, **fields: Any) -> StageResult:
    """BLOCKED(env): what is missing and its fix, in the details (`env_missing`) and the summary."""
    return StageResult(stage=stage, verdict="BLOCKED", fail_class=FailClass.ENV,
                       details=DETAILS[stage](env_missing=missing).dump(), summary=f"blocked: {missing}", **fields)


def run_gate(ctx, stage: Stage, gate: Gate, to_result: Callable[..., StageResult]) -> StageResult:
    started = utcnow()
    from tileport.validators.gpu import preflight

    # before any build: a CPU-only machine answers BLOCKED(env) in milliseconds, naming the missing GPU first
    missing = preflight.missing(ctx.config, conversion_id=ctx.conversion_id,
                                tileiras=getattr(ctx.toolchain, "tileiras", None))
    if missing:
        ctx.log(f"#{ctx.conversion_id} {ctx.op} {stage.value}: blocked before building: {missing}")
        return env_blocked(missing, stage=stage, attempt=ctx.attempt, started_at=started, finished_at=utcnow())
    analysis, spec = inputs(ctx)
    with ctx.limits.gpu:
        report = gate(ctx.paths.crate, analysis, spec, ctx.config)
    return to_result(report, attempt=ctx.attempt, started_at=started)
