"""The one exit-code rule (records.exits), as a shell script calling tileport sees it: every way a run ends maps
to its status through it (B's judge of a person's edit, bad input; several conversions' ends:
tests/service/test_conversions.py)."""

from __future__ import annotations

import pytest

from tileport.pipeline.runner import EditJudged
from tileport.errors import EnvironmentBlocked, UserError
from tileport.records import exits


@pytest.mark.parametrize("verdict,code", [("COMPILED", 0), ("FAIL_COMPILE", 1), ("FAIL_FIXABLE", 1), ("BLOCKED", 3)])
def test_bs_gates_on_a_persons_edit_exit_by_the_same_rule(verdict, code):
    judged = EditJudged(1, "a" * 40, 7, 2, verdict, None, "", "D", "pending")
    assert judged.exit_code == code == exits.of_verdict(verdict)


def test_bad_input_is_2_and_the_codes_are_distinct():
    assert UserError("x").exit_code == EnvironmentBlocked("y").exit_code == exits.EXIT_USER == 2
    assert len({exits.EXIT_OK, exits.EXIT_FAILED, exits.EXIT_USER, exits.EXIT_BLOCKED}) == 4
