"""The contract: one verdict list every reader derives from, and per-stage details that read old rows."""

from __future__ import annotations

import typing

from tileport.records import (GATE_PASSES, PASSING, STAGE_VERDICTS, VERDICTS, PerfDetails, Stage, StageResult,
                              WriteKernelDetails, details_of)


def test_every_verdict_list_is_derived_from_the_enums():
    from tileport.pipeline import router
    from tileport.agents.writers import Diagnosis, KernelWriterVerdict
    from tileport.worktrees.gates import REQUIRED_GATES

    assert {s: tuple(v.value for v in VERDICTS[s]) for s in Stage} == dict(STAGE_VERDICTS)
    # the writer's structured reply may say exactly B's words; a diagnosis every C word but BLOCKED
    assert set(typing.get_args(KernelWriterVerdict.model_fields["verdict"].annotation)) == set(STAGE_VERDICTS[Stage.WRITE_KERNEL])
    assert set(typing.get_args(Diagnosis.model_fields["verdict"].annotation)) == \
        set(STAGE_VERDICTS[Stage.DIAGNOSE_TRANSLATION]) - {"BLOCKED"}
    for spec in REQUIRED_GATES:
        assert spec.passes == GATE_PASSES[spec.stage] and set(spec.passes) <= PASSING
    # every verdict of every stage has a route, and the router knows no other words
    for stage, verdict in router.every_verdict():
        router.route_for(stage, verdict, None)
    assert {(k[0], k[1]) for k in router.ROUTES} == set(router.every_verdict())


def test_a_word_outside_the_list_is_refused():
    import pytest

    with pytest.raises(ValueError, match="not one of stage E"):
        StageResult(stage=Stage.PERFORMANCE, verdict="PASS")


def test_old_spellings_of_details_are_read():
    e = details_of("E", {"worst": {"config": "n=4096", "ratio": 1.3}, "hardware": {"name": "H200"}, "geomean": 1.01})
    assert isinstance(e, PerfDetails) and e.worst == "n=4096" and e.worst_ratio == 1.3 and e.hw == {"name": "H200"}
    assert e.worst_text() == "n=4096 (1.300)"
    b = details_of("B", {"self_check_pairs": [{"label": "k/v/sm_90", "reference": "r", "port": "p"}]})
    assert isinstance(b, WriteKernelDetails) and b.ir_pairs[0].label == "k/v/sm_90"


def test_a_damaged_value_costs_that_value_not_the_row():
    e = details_of("E", {"geomean": "fast", "rows": [{"config": "a", "ratio": "x"}, {"config": "b", "ratio": 0.9}],
                         "config_max": 1.25, "unknown_key": 7})
    assert e.geomean is None and [r.config for r in e.rows] == ["b"] and e.config_max == 1.25
    assert e.model_extra == {"unknown_key": 7}  # kept, not guessed at


def test_config_max_is_the_one_recorded_with_the_run():
    e = details_of("E", {"worst": "n=1", "worst_ratio": 1.15, "config_max": 1.25})
    assert e.over_config_max(current=1.10) is False  # recorded bound wins over today's config
    assert details_of("E", {"worst": "n=1", "worst_ratio": 1.15}).over_config_max(current=1.10) is True  # old row
