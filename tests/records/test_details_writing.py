"""Stages build their details as the stage's typed model: a misspelt key fails where it is written, and what each
stage records reads back through `details_of` (and through the store) exactly as it was written."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from tileport.records import DETAILS, STAGE_VERDICTS, CorrectnessDetails, Stage, StageResult, details_of

T = datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("stage", list(Stage), ids=lambda s: s.value)
def test_a_misspelt_key_fails_where_it_is_written(stage):
    cls = DETAILS[stage]
    with pytest.raises(ValidationError, match="has no field env_mising"):
        cls(env_mising="no GPU")
    d = cls(env_missing="no GPU")
    with pytest.raises(AttributeError, match="has no field 'eror'"):
        d.eror = "x"
    with pytest.raises(ValidationError, match="has no field sourse"):
        d.updated(sourse="gate ingest")
    with pytest.raises(ValidationError, match="has no field repiar"):
        StageResult(stage=stage, verdict=STAGE_VERDICTS[stage][0]).with_details(repiar=True)


def test_a_wrong_type_fails_where_it_is_written():
    with pytest.raises(ValidationError):
        CorrectnessDetails(cases="many")
    # a stored row is read leniently: the bad value is dropped, the rest kept (old stores keep reading)
    assert details_of("D", {"cases": "many", "failed": 1}).dump() == {"failed": 1}


def _every_stage_result() -> list[StageResult]:
    """What each stage's own result builders write (the paths that run without a GPU, a model or a build)."""
    from tileport.pipeline.stages import analyze, diagnose, host_correctness, performance, write_kernel
    from tileport.agents.writers import DiagnoseOutcome, Diagnosis
    from tileport.errors import EnvironmentBlocked, UserError
    from tileport.records import TokenUsage
    from tileport.validators.gpu.reports import Case, CorrectnessReport, PerfReport, PerfRow
    from tileport.validators.rust.build import RustBuildResult
    from tileport.validators.rust.diagnostics import Diagnostic
    from tileport.validators.rust.selfcheck import PairResult, SelfCheckReport

    writer = {"writer": "m", "prompt": "kernel", "model_requests": 2, "turns": 3, "tool_calls": ["build"],
              "stop": "verdict", "context": {"budget": 1000}}
    diag = Diagnosis(verdict="FAIL_FIXABLE", owner="host", next_edit="pass n", evidence="case 2")
    rows = [PerfRow("n=1024", 0.010, 0.0115, 1.15, [0.01] * 3, [0.0115] * 3, ["tiny?"], {"sm": 132}),
            PerfRow("n=4096", 0.020, 0.018, 0.90, [0.02] * 3, [0.018] * 3)]
    cases = [Case("f32 n=1024", "float32", {"n": 1024}, "PASS", 0.0),
             Case("f16 n=4096", "float16", {"n": 4096}, "FAIL", 0.5, "kernel", "max err 0.5")]
    err = Diagnostic(source="rustc", level="error", code="E0308", message="mismatched types")
    build = RustBuildResult(crate="/c", ok=False, stage="cargo", diagnostics=[err])
    compiled = RustBuildResult(crate="/c", ok=True, stage="done")
    report = SelfCheckReport(analysis="/none/analysis.json", op="op", crate="/c", verdict="FAIL_FIXABLE",
                             pairs=[PairResult(entry="k", variant="v", target="sm_90", verdict="FAIL_FIXABLE",
                                               ref_text="ref", port_text="port")])
    kw = dict(attempt=1, started_at=T)
    return [
        analyze.result_from_error(UserError("no kernel named k"), **kw),
        analyze.result_from_error(EnvironmentBlocked("cuda_tile is not installed"), **kw),
        write_kernel.result_from_blocked(RuntimeError("no cargo"), **kw),
        write_kernel.result_from_build(build, **kw),
        write_kernel.result_from_build(compiled, report, **kw),
        diagnose.result_from_diagnosis(DiagnoseOutcome(diagnosis=diag, details=writer, tokens=TokenUsage()),
                                       stage=Stage.DIAGNOSE_TRANSLATION, **kw),
        diagnose.result_from_diagnosis(DiagnoseOutcome(blocked="no model", details={**writer, "fault": "http"}),
                                       stage=Stage.DIAGNOSE_TRANSLATION, **kw),
        diagnose.result_from_diagnosis(DiagnoseOutcome(diagnosis=diag, details={"writer": "none (deterministic)"}),
                                       stage=Stage.DIAGNOSE_PERFORMANCE, **kw)
        .with_details(hints=[{"kernel": "k", "arch": "sm_90", "occupancy": 2}]),
        host_correctness.result_from_report(CorrectnessReport(env_missing="no GPU: run on one"), **kw),
        host_correctness.result_from_report(CorrectnessReport(cases=cases[:1]), **kw).with_details(repair=True),
        host_correctness.result_from_report(CorrectnessReport(cases=cases), **kw)
        .with_details(passed=1, env_missing=None, host_error=None, source="gate ingest"),
        performance.result_from_report(PerfReport(env_missing="no GPU"), geomean_max=1.1, **kw),
        performance.result_from_report(PerfReport(rows=rows, hw={"arch": "sm_90", "flush": {"verified": True}}),
                                       geomean_max=1.1, config_max=1.25, **kw).with_details(source="gate ingest"),
    ]


def test_what_every_stage_records_reads_back_unchanged(tmp_path):
    from tileport.store import Store, queries, record_run

    results = _every_stage_result()
    assert {r.stage for r in results} == set(Stage)
    for r in results:
        assert r.details, r
        assert details_of(r.stage, r.details).dump() == r.details, r.stage
        assert isinstance(r.typed, DETAILS[r.stage]) and not r.typed.model_extra  # every key is a field
    store = Store(tmp_path / "t.db")
    cid = store.add_conversion(str(tmp_path / "op.py"), None)
    for r in results:
        record_run(store, cid, r)
    runs = queries.stage_runs(store, cid)
    assert [run.raw_details for run in runs] == [r.details for r in results]
    assert [run.details.dump() for run in runs] == [r.details for r in results]


def test_the_details_an_older_tileport_stored_read_back_unchanged(tmp_path):
    import shutil
    from pathlib import Path

    from tileport.store import Store, queries

    db = tmp_path / "v3.db"
    shutil.copy(Path(__file__).resolve().parents[1] / "data" / "stores" / "v3-main.db", db)
    store = Store(db)
    runs = [run for c in store.conversions() for run in queries.stage_runs(store, c["id"])]
    assert {run.stage for run in runs} == {"A", "B", "D", "E"}
    for run in runs:
        assert run.raw_details and run.details.dump() == run.raw_details, run.stage
