"""The merge gates read a stage's details through its typed model (records.details): a gate naming a field the
model does not have fails when it is defined, not by silently finding nothing; old spellings read as before."""

from __future__ import annotations

import pytest

from tileport.records import SELF_CHECK_PASSES, Stage, details_of
from tileport.worktrees.gates import REQUIRED_GATES, GateSpec


def test_a_gate_on_a_detail_the_model_lacks_is_refused_when_defined():
    with pytest.raises(TypeError, match="WriteKernelDetails has no field 'selfcheck'"):
        GateSpec(Stage.WRITE_KERNEL, ("COMPILED",), (("selfcheck", SELF_CHECK_PASSES),))


@pytest.mark.parametrize("stored, verdict", [
    ({"self_check": "PASS"}, "PASS"),
    ({"self_check": {"verdict": "FAIL_FIXABLE", "pairs": []}}, "FAIL_FIXABLE"),  # a whole report, kept once
    ({"self_check": 3}, None),  # damaged: not recorded, never a pass
    ({}, None)])
def test_the_b_gate_reads_the_self_check_verdict_typed(stored, verdict):
    b = next(s for s in REQUIRED_GATES if s.stage is Stage.WRITE_KERNEL)
    assert b.detail_verdict(details_of("B", stored), "self_check") == verdict
    assert b.detail_verdict(details_of("E", stored), "self_check") is None  # another stage's details: nothing
