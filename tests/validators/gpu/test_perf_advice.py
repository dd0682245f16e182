"""Stage F's deterministic reading of stage E's launch attributes, on rows recorded on the H200 (ports/softmax and
ports/silu_and_mul before their occupancy hints; tests/data/gpu_results/h200_rows_before_hints.json)."""

from __future__ import annotations

import json
from pathlib import Path

from tileport.records import Stage, StageResult
from tileport.store.queries import StageRunRow
from tileport.validators.gpu.advice import advice, blocks_per_sm, row_advice

ROWS = json.loads((Path(__file__).resolve().parents[2] / "data" / "gpu_results" / "h200_rows_before_hints.json").read_text())["rows"]


def row(op: str, config: str) -> dict:
    return next(r for r in ROWS if r["op"] == op and r["config"] == config)


def test_register_bound_occupancy_is_computed_from_the_launch():
    assert blocks_per_sm(255, 256) == 1  # softmax's row kernel, both sides: one block per SM
    assert blocks_per_sm(128, 256) == 2
    assert blocks_per_sm(99, 128) == 5
    assert blocks_per_sm(None, 256) is None and blocks_per_sm(32, 32) == 32  # capped at the SM's block limit


def test_a_slow_latency_bound_row_gets_the_occupancy_hint_that_fixed_it():
    found = row_advice(row("softmax", "float16 [m=1024,n=1000]"), 1.05)
    assert len(found) == 1
    assert "255 registers x 256 threads" in found[0] and "1 block(s)" in found[0]
    assert "occupancy = 4" in found[0]  # what took these rows from 1.24x to 0.40x on the H200
    # same launch on both sides: no "launched differently" finding
    assert not any("launched differently" in f for f in found)


def test_a_slow_row_whose_sides_launched_differently_says_how():
    found = row_advice(row("silu_and_mul", "float16 [m=4096,n=11008]"), 1.05)
    assert len(found) == 1 and "registers per thread 99 vs the reference's 54" in found[0]
    assert "shared memory (B) 0 vs the reference's 8192" in found[0]
    assert "occupancy =" not in found[0]  # 5 blocks per SM: registers are not what bounds it


def test_fast_and_tiny_rows_give_nothing_and_the_slowest_come_first():
    assert row_advice(row("softmax", "bfloat16 [m=1024,n=1000]"), 1.05) == []  # 0.91x
    tiny = {**row("softmax", "float16 [m=1024,n=1000]"), "tiny": True}
    assert row_advice(tiny, 1.05) == []
    found = advice(ROWS, 1.05, limit=3)
    assert len(found) == 3 and found[0].startswith("float16 [m=1024,n=1000")  # 1.247x, the worst row
    assert advice([{"config": "x", "ratio": 1.5}], 1.05) == []  # no launch attributes: nothing to say


def test_stage_f_without_a_model_names_the_launch_finding_as_the_next_edit(tmp_path):
    """`--model none`: stage F reads stage E's stored rows and puts the occupancy finding first."""
    from types import SimpleNamespace

    from tileport.pipeline.stages import diagnose_perf
    from tileport.agents.writers import DraftWriter
    from tileport.config import Config

    (tmp_path / "ref").mkdir()
    (tmp_path / "crate" / "artifacts").mkdir(parents=True)
    rows = [r for r in ROWS if r["op"] == "softmax"]
    e = StageRunRow.of(StageResult(stage=Stage.PERFORMANCE, verdict="INVESTIGATE",
                                   details={"geomean": 1.037, "worst": rows[2], "rows": rows}))
    ctx = SimpleNamespace(last=lambda stage: e if stage == "E" else None, op="softmax.py", config=Config(),
                          writer=DraftWriter(), attempt=1,
                          paths=SimpleNamespace(reference=tmp_path / "ref", crate=tmp_path / "crate"))
    res = diagnose_perf.run(ctx)
    assert res.verdict == "FAIL_FIXABLE"
    assert "occupancy = 4" in res.details["next_edit"] and "float16 [m=1024,n=1000]" in res.details["next_edit"]
    assert "ref_samples" not in res.details["evidence"]  # ratios, never raw samples


def test_hints_for_a_writer_name_each_slow_register_bound_kernel_once_with_the_measured_arch():
    from tileport.validators.gpu.advice import occupancy_hints

    hints = occupancy_hints([r for r in ROWS if r["op"] == "softmax"], 1.05, "sm_90")
    # the row kernels (plain and scaled) at n=1000 were slow and held one block per SM; the chunked ones were not slow
    assert sorted((h["kernel"], h["occupancy"], h["arch"]) for h in hints) == [
        ("softmax_row_entry", 4, "sm_90"), ("softmax_row_scaled_entry", 4, "sm_90")]
    assert occupancy_hints([r for r in ROWS if r["op"] == "silu_and_mul"], 1.05) == []  # 5 blocks per SM


def test_the_draft_writer_edit_puts_the_hints_on_exactly_those_entries():
    """The hand-written softmax port without its hints + the hints F derives from its own H200 rows = the port as
    committed after that measurement."""
    import re

    from tileport.draft.hints import apply_hints
    from tileport.validators.gpu.advice import occupancy_hints

    committed = (Path(__file__).parents[3] / "ports" / "softmax" / "kernel.rs").read_text()
    bare = re.sub(r"#\[cutile::entry\(optimization_hints = \([^\n]*\)\]", "#[cutile::entry()]", committed)
    assert "optimization_hints" not in bare
    hints = occupancy_hints([r for r in ROWS if r["op"] == "softmax"], 1.05, "sm_90")
    out, applied, skipped = apply_hints(bare, hints)
    assert out == committed and sorted(applied) == ["softmax_row: occupancy 4 on sm_90",
                                                    "softmax_row_scaled: occupancy 4 on sm_90"] and skipped == []
    # an entry already carrying arguments is left as written; an unknown kernel and a bad arch are not applied
    again, applied2, skipped2 = apply_hints(out, hints + [{"kernel": "nope_entry", "arch": "sm_90", "occupancy": 2},
                                                          {"kernel": "softmax_chunked_entry", "arch": "x86",
                                                           "occupancy": 2}])
    assert again == out and applied2 == []
    assert any("already has arguments" in s for s in skipped2) and any("nope" in s for s in skipped2)


def test_stage_b_hands_stage_f_hints_to_the_writer_only_after_f():
    from types import SimpleNamespace

    from tileport.pipeline.stages.write_kernel import _hints

    hint = {"kernel": "k_entry", "arch": "sm_90", "occupancy": 4}
    def run(stage: str, hints: list) -> StageRunRow:
        return StageRunRow.of(StageResult(stage=Stage(stage), verdict="FAIL_FIXABLE", details={"hints": hints}))

    after_f = SimpleNamespace(latest=lambda: run("F", [hint, "junk"]))
    after_c = SimpleNamespace(latest=lambda: run("C", [hint]))
    assert _hints(after_f) == [hint] and _hints(after_c) == [] and _hints(SimpleNamespace(latest=lambda: None)) == []


def test_the_measured_gpu_names_the_arch_of_the_hint():
    from tileport.validators.gpu.reports import perf_from_results

    rep = perf_from_results({"env": {"device": "NVIDIA H200", "capability": [9, 0]},
                             "perf": {"rows": [], "hw": {"copy_gbps": 4262.3}}})
    assert rep.hw["arch"] == "sm_90" and rep.hw["copy_gbps"] == 4262.3


def _report(rows):
    from tileport.validators.gpu.reports import PerfReport, PerfRow

    return PerfReport(rows=[PerfRow(config=r["config"], ref_ms=r["ref_ms"], port_ms=r["port_ms"], ratio=r["ratio"],
                                    tiny=bool(r.get("tiny")), launch=r.get("launch") or {}) for r in rows],
                      hw={"flush": {"verified": True}, "arch": "sm_90"})


def test_stage_e_does_not_average_a_slow_configuration_away():
    """softmax before its hints: geomean 1.03 (inside 1.05) but m=1024 n=1000 ran 1.25x: INVESTIGATE, naming it;
    after the hints (the same gate, re-run): DONE."""
    from tileport.pipeline.stages.performance import result_from_report
    from tileport.records import utcnow

    before = _report([r for r in ROWS if r["op"] == "softmax"])
    assert before.geomean < 1.05 and before.worst.ratio > 1.2
    res = result_from_report(before, attempt=1, started_at=utcnow(), geomean_max=1.05, config_max=1.10)
    assert res.verdict == "INVESTIGATE" and "float16 [m=1024,n=1000]" in res.summary and "> 1.1" in res.summary
    assert res.details["arch"] == "sm_90" and all("ref_samples" not in r for r in res.details["rows"])
    # without the per-configuration bound the old rule would have passed it
    assert result_from_report(before, attempt=1, started_at=utcnow(), geomean_max=1.05).verdict == "DONE"
    after = _report(json.loads((Path(__file__).resolve().parents[2] / "data" / "gpu_results" / "h200_softmax_after_hints.json")
                               .read_text())["rows"])
    res = result_from_report(after, attempt=2, started_at=utcnow(), geomean_max=1.05, config_max=1.10)
    assert res.verdict == "DONE" and res.details["worst_ratio"] < 1.10
    # a missing measurement is never a pass
    after.rows[0].failed = True
    assert result_from_report(after, attempt=3, started_at=utcnow(), geomean_max=1.05,
                              config_max=1.10).verdict == "INVESTIGATE"
