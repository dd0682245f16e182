"""Stages D and E alike: run `tileport.validators.gpu` (a GPU run) on the conversion's crate under the GPU limit
and turn its report into the stage's result. Without a GPU the GPU run itself reports BLOCKED(env) naming what is
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


def _packed_for_elsewhere(ctx, missing: str) -> tuple[str, dict]:
    """No GPU here and the op has its own tests: pack it (the cdylib, the op's project and tests) for a GPU
    host, and say where, in the BLOCKED(env) line. An op without tests keeps the one-line hint (nothing built)."""
    from tileport.errors import EnvironmentBlocked, UserError
    from tileport.validators.gpu.carry import has_sources

    try:
        analysis, spec = inputs(ctx)
    except UserError:  # no readable analysis: nothing to pack; the preflight's line is the whole answer
        analysis = spec = None
    if analysis is None or not has_sources(analysis):
        ctx.log(f"#{ctx.conversion_id} {ctx.op} D: blocked before building: {missing}")
        return missing, {}
    from tileport.validators.gpu import pack_crate

    gpu = missing.split(";", 1)[0]
    ctx.log(f"#{ctx.conversion_id} {ctx.op} D: {gpu}; packing the port for a GPU host (the port's cdylib, the op's "
            f"project and tests)")
    try:
        head = ctx.worktree.head()
    except Exception:  # noqa: BLE001 - a worktree without a commit: the pack names none
        head = None
    try:
        with ctx.limits.cargo:
            dest, built = pack_crate(ctx.paths.crate, analysis, spec, ctx.config, commit=head,
                                     conversion_id=ctx.conversion_id)
    except (EnvironmentBlocked, UserError) as e:
        return f"{gpu}; the port could not be packed: {e}", {}
    if not built.ok:
        return f"{gpu}; the port could not be packed: the port's cdylib did not build ({'; '.join(built.errors[:2])})", \
            {"commands": list(built.commands)}
    size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())
    line = (f"{gpu}; packed for a GPU host at {dest} ({size / 1e6:.1f} MB): copy it to a GPU host, run "
            f"`tileport gpu run DIR` there (or `python DIR/runner.py DIR`), then `tileport gpu ingest "
            f"DIR/results.json` here")
    ctx.log(f"#{ctx.conversion_id} {ctx.op} D: {line}")
    return line, {"commands": list(built.commands)}


def run_on_gpu(ctx, stage: Stage, gate: Gate, to_result: Callable[..., StageResult]) -> StageResult:
    started = utcnow()
    from tileport.validators.gpu import preflight

    # before any build: a CPU-only machine answers BLOCKED(env) in milliseconds, naming the missing GPU first
    missing = preflight.missing(ctx.config, conversion_id=ctx.conversion_id,
                                tileiras=getattr(ctx.toolchain, "tileiras", None))
    if missing:
        fields: dict[str, Any] = {}
        if stage is Stage.HOST_CORRECTNESS:
            missing, fields = _packed_for_elsewhere(ctx, missing)
        else:
            ctx.log(f"#{ctx.conversion_id} {ctx.op} {stage.value}: blocked before building: {missing}")
        return env_blocked(missing, stage=stage, attempt=ctx.attempt, started_at=started, finished_at=utcnow(),
                           **fields)
    analysis, spec = inputs(ctx)
    with ctx.limits.gpu:
        report = gate(ctx.paths.crate, analysis, spec, ctx.config)
    return to_result(report, attempt=ctx.attempt, started_at=started)
