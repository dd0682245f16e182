"""Finding the GPU gates (tileport.validators.gpu). Until they are installed, D and E are BLOCKED(env) naming
what is missing: never a pass."""

from __future__ import annotations

from typing import Any, Callable

from tileport.records import FailClass, Stage, StageResult, utcnow


def gate(name: str) -> tuple[Callable[..., Any] | None, str | None]:
    """(the gate function, None) or (None, why it is missing)."""
    try:
        from tileport.validators import gpu  # type: ignore[attr-defined]
    except ImportError:
        return None, ("the GPU gates (tileport.validators.gpu) are not installed; stages D and E need them, torch "
                      "and a CUDA GPU")
    fn = getattr(gpu, name, None)
    if fn is None:
        return None, f"tileport.validators.gpu has no {name}(); update tileport"
    return fn, None


def inputs(ctx) -> tuple[Any, Any]:
    """(analysis, spec) of the conversion, as the gates take them."""
    from tileport.validators.rust.reference import load_analysis
    from tileport.validators.rust.spec import load_spec

    return load_analysis(ctx.paths.reference), load_spec(ctx.paths.spec_json)


def run_gate(ctx, stage: Stage, name: str, to_result: Callable[..., StageResult]) -> StageResult:
    """Stages D and E alike: find the gate (BLOCKED(env) naming what is missing when absent), run it on the
    conversion's crate under the GPU limit, and turn its report into the stage's result with `to_result`."""
    started = utcnow()
    fn, missing = gate(name)
    if fn is None:
        return StageResult(stage=stage, attempt=ctx.attempt, verdict="BLOCKED", fail_class=FailClass.ENV,
                           started_at=started, finished_at=utcnow(), details={"env_missing": missing},
                           summary=f"blocked: {missing}")
    from tileport.validators.gpu import preflight

    # before any build: a CPU-only machine answers BLOCKED(env) in milliseconds, naming the missing GPU first
    missing = preflight.missing(ctx.config, conversion_id=ctx.conversion_id,
                                tileiras=getattr(ctx.toolchain, "tileiras", None))
    if missing:
        ctx.log(f"#{ctx.conversion_id} {ctx.op} {stage.value}: blocked before building: {missing}")
        return StageResult(stage=stage, attempt=ctx.attempt, verdict="BLOCKED", fail_class=FailClass.ENV,
                           started_at=started, finished_at=utcnow(), details={"env_missing": missing},
                           summary=f"blocked: {missing}")
    analysis, spec = inputs(ctx)
    with ctx.limits.gpu:
        report = fn(ctx.paths.crate, analysis, spec, ctx.config)
    return to_result(report, attempt=ctx.attempt, started_at=started)
