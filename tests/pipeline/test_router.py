"""The routing table and next_action, by property (hypothesis): caps hold, BLOCKED stops, E DONE is terminal,
a repair stays in its stage, every verdict word has a route; plus the anchor's happy path and named routes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tileport.pipeline import router
from tileport.pipeline.router import Action, Outcome, RunState, next_action
from tileport.records import STAGE_VERDICTS, Stage

CAPS = {"A": 1, "B": 2, "C": 1, "D": 2, "E": 2, "F": 1}
FAIL_CLASSES = [None, "kernel", "host", "env"]
OWNERS = [None, "kernel", "host", "someone"]

caps_st = st.fixed_dictionaries({s: st.integers(1, 4) for s in CAPS})


def outcome_st(stage: str):
    return st.builds(Outcome, st.just(stage), st.sampled_from(STAGE_VERDICTS[Stage(stage)]),
                     st.sampled_from(FAIL_CLASSES), st.sampled_from(OWNERS))


def simulate(caps, pick):
    """Drive a run: `pick(stage)` draws each stage's outcome; returns (state, trace of (outcome, action))."""
    state, action, trace = RunState(caps), router.first_action(), []
    for _ in range(200):
        if action.stop:
            return state, trace
        state = state.start(action.stage, action.repair)
        outcome = pick(action.stage)
        action = next_action(state, outcome)
        trace.append((outcome, action))
    raise AssertionError("run did not stop within 200 steps")


@settings(max_examples=400, deadline=None)
@given(caps=caps_st, data=st.data())
def test_caps_are_never_exceeded_and_every_run_stops(caps, data):
    state, trace = simulate(caps, lambda s: data.draw(outcome_st(s)))
    for s in CAPS:
        assert state.repairs.get(s, 0) <= router.REPAIRS_PER_STAGE
        assert state.used(s) <= caps[s] + state.repairs.get(s, 0), (s, state, trace)
    assert trace[-1][1].stop in router.STOPS


@settings(max_examples=300, deadline=None)
@given(caps=caps_st, data=st.data())
def test_blocked_always_stops_and_done_is_terminal(caps, data):
    _, trace = simulate(caps, lambda s: data.draw(outcome_st(s)))
    for outcome, action in trace:
        if outcome.verdict == "BLOCKED" or (outcome.fail_class == "env" and outcome.verdict != "DONE"):
            assert action.stop == router.BLOCKED
        if outcome.stage == "E" and outcome.verdict == "DONE":
            assert action.stop == router.DONE
        if action.stop == router.DONE:
            assert (outcome.stage, outcome.verdict) == ("E", "DONE")


@settings(max_examples=300, deadline=None)
@given(caps=caps_st, data=st.data())
def test_a_repair_never_cascades_to_another_stage(caps, data):
    _, trace = simulate(caps, lambda s: data.draw(outcome_st(s)))
    for outcome, action in trace:
        if action.repair:
            assert action.stage == outcome.stage


@given(st.sampled_from(router.every_verdict()), st.sampled_from(FAIL_CLASSES), st.sampled_from(OWNERS))
def test_every_verdict_word_of_every_stage_has_a_route(sv, fail_class, owner):
    stage, verdict = sv
    router.route_for(stage, verdict, fail_class)  # KeyError would be a hole in the table
    action = next_action(RunState(CAPS).start(stage), Outcome(stage, verdict, fail_class, owner))
    assert (action.stage is None) != (action.stop is None)
    assert action.reason


def test_the_table_names_only_known_verdicts_and_targets():
    for (stage, verdict, fc), target in router.ROUTES.items():
        assert verdict in STAGE_VERDICTS[Stage(stage)]
        assert fc in ("*", "kernel", "host", "env")
        assert target in CAPS or target in router.STOPS or target in (router.REPAIR, router.OWNER)


def test_happy_path_is_a_b_d_e_done():
    seq = {"A": "PASS", "B": "COMPILED", "D": "ALL_PASS", "E": "DONE"}
    _, trace = simulate(CAPS, lambda s: Outcome(s, seq[s]))
    assert [o.stage for o, _ in trace] == ["A", "B", "D", "E"]
    assert trace[-1][1].stop == "DONE"


def test_self_check_failure_goes_to_diagnose_then_back_to_the_writer():
    state = RunState(CAPS).start("A").start("B")
    a = next_action(state, Outcome("B", "FAIL_FIXABLE", "kernel"))
    assert a.stage == "C"
    b = next_action(state.start("C"), Outcome("C", "FAIL_FIXABLE", None, "kernel"))
    assert b.stage == "B"
    assert next_action(state.start("C"), Outcome("C", "FAIL_FIXABLE", None, "host")).stage == "D"


def test_cap_reached_names_the_stage_and_the_count():
    state = RunState(CAPS).start("A").start("B").start("B")
    a = next_action(state, Outcome("B", "FAIL_COMPILE", "kernel"))
    assert a.stop == "FAILED" and a.reason.startswith("cap reached: B 2/2")


@pytest.mark.parametrize("outcome,expected", [
    (Outcome("D", "FAIL", "host"), "D"), (Outcome("D", "FAIL", "kernel"), "C"), (Outcome("E", "INVESTIGATE"), "F"),
    (Outcome("F", "FAIL_FIXABLE", None, "host"), "D"), (Outcome("A", "FAIL_FIXABLE"), "A"),
])
def test_named_routes(outcome, expected):
    state = RunState(CAPS).start("A")
    assert next_action(state.start(outcome.stage), outcome).stage == expected


def test_diagnosis_without_owner_stops():
    a = next_action(RunState(CAPS).start("C"), Outcome("C", "PASS"))
    assert a == Action(stop="FAILED", reason=a.reason) and "owner" in a.reason
