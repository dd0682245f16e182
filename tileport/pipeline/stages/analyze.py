"""Stage A, Analyze (deterministic): the op's kernels, variants and reference Tile IR -> a StageResult.

PASS with every artifact; FAIL_FIXABLE with the one-line reason when the op or a tool run is wrong;
BLOCKED (fail class env) when a tool the analysis needs is missing.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from tileport.errors import EnvironmentBlocked, UserError
from tileport.records import AnalyzeDetails, ArtifactRecord, FailClass, Stage, StageResult, utcnow
from tileport.analysis.schema import Analysis

STAGE = Stage.ANALYZE


def result_from_analysis(a: Analysis, *, attempt: int = 1, started_at: datetime | None = None) -> StageResult:
    root = Path(a.out_dir)
    arts = [x.model_copy(update={"path": str(root / x.path)}) for x in a.artifacts()]
    analysis_json = root / "analysis.json"
    if analysis_json.is_file():
        arts.insert(0, ArtifactRecord.of("analysis", analysis_json))
    n_inst = sum(len(v.instances) for v in a.variants)
    return StageResult(
        stage=STAGE, attempt=attempt, verdict="PASS", commands=list(a.commands), artifacts=arts,
        started_at=started_at or a.created_at, finished_at=utcnow(),
        details=AnalyzeDetails(kernels=len(a.kernels), variants=len(a.variants), instances=n_inst,
                               targets=list(a.targets), out_dir=str(root),
                               **({"reference": a.reference.model_dump(mode="json"),
                                   "reference_summary": a.reference.summary()} if a.reference else {})).dump(),
        summary=(f"{a.op}: {len(a.kernels)} kernels, {len(a.variants)} variants, {n_inst} instances, "
                 f"targets {', '.join(a.targets)}" + (f"; {a.reference.summary()}" if a.reference else "")))


def result_from_error(error: UserError, *, attempt: int = 1, started_at: datetime | None = None) -> StageResult:
    blocked = isinstance(error, EnvironmentBlocked)
    return StageResult(stage=STAGE, attempt=attempt, verdict="BLOCKED" if blocked else "FAIL_FIXABLE",
                       fail_class=FailClass.ENV if blocked else None, started_at=started_at or utcnow(),
                       finished_at=utcnow(), details=AnalyzeDetails(error=str(error)).dump(), summary=str(error))


def analyze(op_path: str | Path, *, config, triton: str | Path | None = None, saved: str | Path | None = None,
            bench: dict | None = None, python: str | None = None, **kw) -> Analysis:
    """Stage A's analysis, wherever it runs (a conversion's attempt, `tileport analyze OP`): the op's kernels,
    variants and reference Tile IR (`analysis.pipeline.analyze_op`; kw: out_dir, kernel, targets,
    toolchain, workers, warm, run_tileiras, tests, discover_tests), then its Triton twin and the reference choice:
    the twin given now (`triton`; its failure raised), else the one saved with the conversion (`saved`), else one
    found by name (their failure noted, cuTile Python the reference). `bench`: the pair benchmark's timings."""
    from tileport.analysis.pipeline import analyze_op
    from tileport.analysis.triton.pairing import analyze_twin

    a = analyze_op(op_path, config=config, python=python, **kw)
    return analyze_twin(a, triton_path=triton, config=config, python=python, bench=bench, saved=saved)


def run(ctx) -> StageResult:
    """Analyse the worktree's copy of the op (`ctx.source`) into the worktree (`ctx.reference_dir`)."""
    started = utcnow()
    in_worktree = Path(ctx.source) != Path(ctx.op_path)  # else an op outside the repository: run it read-only
    try:
        a = analyze(ctx.source, out_dir=ctx.reference_dir, kernel=ctx.kernel, config=ctx.config,
                    toolchain=ctx.toolchain, workers=1, warm=True, saved=ctx.triton, confine=not in_worktree)
    except UserError as e:
        return result_from_error(e, attempt=ctx.attempt, started_at=started)
    return result_from_analysis(a, attempt=ctx.attempt, started_at=started)
