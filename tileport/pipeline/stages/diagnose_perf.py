"""Stage F, Diagnose performance: reads the perf rows and both IRs, names an owner and one next edit."""

from __future__ import annotations

from tileport.pipeline.stages.diagnose import _port_texts, _reference_texts, diagnose_with
from tileport.agents.writers import DiagnosisTask
from tileport.records import PerfDetails, Stage, StageResult, utcnow
from tileport.validators.gpu.advice import advice, occupancy_hints

STAGE = Stage.DIAGNOSE_PERFORMANCE


def run(ctx) -> StageResult:
    started = utcnow()
    perf = ctx.last("E")
    d = perf.details if perf is not None and isinstance(perf.details, PerfDetails) else PerfDetails()
    failure = (f"performance gate: {perf.summary if perf is not None else ''} (geomean {d.geomean}, gate "
               f"{ctx.config.perf.geomean_max}; worst configuration {d.worst} {d.worst_ratio}, "
               f"per-configuration bound {ctx.config.perf.config_max})")
    rows = [r.model_dump(mode="json") for r in d.rows]  # the advice reads the rows as the runner wrote them
    # what the launch attributes say first (the occupancy arithmetic, how the two sides launched), then the
    # ratios; never the raw samples
    arch = d.arch or (ctx.config.targets[0] if ctx.config.targets else "sm_90")
    gate = ctx.config.perf.geomean_max
    findings = advice(rows, gate, arch=arch) + [
        f"{r.config}: reference {r.ref_ms} ms, port {r.port_ms} ms, ratio {r.ratio}"
        + (f" [{'; '.join(r.flags)}]" if r.flags else "") for r in d.rows[:40]]
    task = DiagnosisTask(kind="performance", op=ctx.op, failure=failure, reference_ir=_reference_texts(ctx),
                         port_ir=_port_texts(ctx), findings="\n".join(findings))
    res = diagnose_with(ctx, task, STAGE, started)
    hints = occupancy_hints(rows, gate, arch)
    if hints and res.verdict != "BLOCKED":
        # structured, for a writer that applies edits itself (the draft writer); a model reads the findings
        res = res.with_details(hints=hints)
    return res
