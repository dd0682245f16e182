"""Routing as data: one declarative table from (stage, verdict, fail class) to what happens next, and a pure
function `next_action(state, result)` that applies it under the per-run caps.

Targets in the table:
- a stage letter ("B"): run that stage next (a new attempt, counted against its cap);
- `REPAIR`: the same stage once more, because its validator's output was missing or non-zero (once per stage
  per run, on top of the cap; a repair never sends the work to another stage);
- `OWNER`: the stage that owns the fix a diagnosis named (`details["owner"]`: kernel -> B, host -> D);
- `DONE`, `BLOCKED`, `FAILED`: stop. BLOCKED (the environment) always stops, whatever the stage.

The happy path is A -> B -> D -> E; E DONE is terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from tileport.records import STAGE_VERDICTS, FailClass, Stage

REPAIR, OWNER = "REPAIR", "OWNER"
DONE, BLOCKED, FAILED = "DONE", "BLOCKED", "FAILED"
STOPS = (DONE, BLOCKED, FAILED)
ANY = "*"  # any fail class
FIRST_STAGE = "A"
REPAIRS_PER_STAGE = 1
OWNERS = MappingProxyType({FailClass.KERNEL.value: "B", FailClass.HOST.value: "D"})

# (stage, verdict, fail class or ANY) -> target. Looked up with the exact fail class first, then ANY.
ROUTES: Mapping[tuple[str, str, str], str] = MappingProxyType({
    ("A", "PASS", ANY): "B",
    ("A", "FAIL_FIXABLE", ANY): REPAIR,
    ("A", "BLOCKED", ANY): BLOCKED,

    ("B", "COMPILED", ANY): "D",
    ("B", "FAIL_COMPILE", ANY): "B",  # the writer tries again with the diagnostics
    ("B", "FAIL_FIXABLE", ANY): "C",  # compiles, IR self-check failed (or no kernel): diagnose the translation
    ("B", "BLOCKED", ANY): BLOCKED,

    ("C", "PASS", ANY): OWNER,
    ("C", "PASS_WITH_NOTES", ANY): OWNER,
    ("C", "FAIL_FIXABLE", ANY): OWNER,
    ("C", "FAIL_COMPILER_BUG", ANY): FAILED,  # a human reports it upstream; no agent can fix the compiler
    ("C", "BLOCKED", ANY): BLOCKED,

    ("D", "ALL_PASS", ANY): "E",
    ("D", "FAIL", "host"): "D",  # wiring / FFI / launch: the host writer again
    ("D", "FAIL", "kernel"): "C",  # device math: diagnose, then the kernel writer
    ("D", "FAIL", "env"): BLOCKED,
    ("D", "FAIL", ANY): REPAIR,  # no class: the gate's own output was missing or unreadable
    ("D", "BLOCKED", ANY): BLOCKED,

    ("E", "DONE", ANY): DONE,
    ("E", "INVESTIGATE", ANY): "F",
    ("E", "BLOCKED", ANY): BLOCKED,

    ("F", "PASS", ANY): OWNER,
    ("F", "PASS_WITH_NOTES", ANY): OWNER,
    ("F", "FAIL_FIXABLE", ANY): OWNER,
    ("F", "BLOCKED", ANY): BLOCKED,
})


@dataclass(frozen=True)
class Outcome:
    """The structured fields of a stage result the router reads (never its free text)."""

    stage: str
    verdict: str
    fail_class: str | None = None
    owner: str | None = None  # C / F: "kernel" or "host"

    @classmethod
    def of(cls, result) -> "Outcome":
        fc = result.fail_class.value if result.fail_class else None
        return cls(result.stage.value, result.verdict, fc, getattr(result.typed, "owner", None))


@dataclass(frozen=True)
class Action:
    """What the runner does next: run `stage` (a repair when `repair`), or stop with `stop`."""

    stage: str | None = None
    stop: str | None = None
    repair: bool = False
    reason: str = ""

    @property
    def target(self) -> str:
        return self.stage or self.stop or ""


@dataclass(frozen=True)
class RunState:
    """What routing needs to know of a run: attempts and repairs used per stage, and the caps."""

    caps: Mapping[str, int]
    attempts: Mapping[str, int] = field(default_factory=dict)
    repairs: Mapping[str, int] = field(default_factory=dict)

    def used(self, stage: str) -> int:
        return self.attempts.get(stage, 0)

    def start(self, stage: str, repair: bool = False) -> "RunState":
        """The state once one more attempt of `stage` has begun."""
        attempts = {**self.attempts, stage: self.used(stage) + 1}
        repairs = {**self.repairs, stage: self.repairs.get(stage, 0) + 1} if repair else dict(self.repairs)
        return RunState(self.caps, attempts, repairs)

    def budget(self, stage: str) -> int:
        """Attempts allowed so far: the cap plus the repairs used."""
        return self.caps[stage] + self.repairs.get(stage, 0)


def route_for(stage: str, verdict: str, fail_class: str | None) -> str:
    """The table's target for this result; KeyError names a verdict word with no route (a bug)."""
    for key in ((stage, verdict, fail_class or ANY), (stage, verdict, ANY)):
        if key in ROUTES:
            return ROUTES[key]
    raise KeyError(f"no route for stage {stage} verdict {verdict} fail class {fail_class}")


def next_action(state: RunState, outcome: Outcome) -> Action:
    """Pure: the next step after `outcome`, given the attempts already used in `state` (this one included)."""
    s = outcome.stage
    target = route_for(s, outcome.verdict, outcome.fail_class)
    if target == DONE:  # E DONE is terminal, whatever else the record says
        return Action(stop=DONE, reason=f"{s} {outcome.verdict}")
    if outcome.verdict == "BLOCKED" or outcome.fail_class == FailClass.ENV.value:
        return Action(stop=BLOCKED, reason=f"{s} {outcome.verdict}: the environment must be fixed first")
    if target in STOPS:
        return Action(stop=target, reason=f"{s} {outcome.verdict}")
    if target == REPAIR:
        if state.repairs.get(s, 0) >= REPAIRS_PER_STAGE:
            return Action(stop=FAILED, reason=f"{s} {outcome.verdict} again after its one repair")
        return Action(stage=s, repair=True, reason=f"{s} {outcome.verdict}: repair by the same stage (once)")
    if target == OWNER:
        owner = outcome.owner
        if owner not in OWNERS:
            return Action(stop=FAILED, reason=f"{s} {outcome.verdict} named no owner (kernel or host)")
        target = OWNERS[owner]
        why = f"{s} {outcome.verdict}: owner {owner} -> {target}"
    else:
        why = f"{s} {outcome.verdict}" + (f" ({outcome.fail_class})" if outcome.fail_class else "") + f" -> {target}"
    if state.used(target) >= state.budget(target):
        return Action(stop=FAILED, reason=f"cap reached: {target} {state.used(target)}/{state.caps[target]} "
                                          f"attempts used ({s} {outcome.verdict})")
    return Action(stage=target, reason=why)


def first_action() -> Action:
    return Action(stage=FIRST_STAGE, reason="start")


def replay(caps: Mapping[str, int], outcomes: "list[tuple[Outcome, bool]]") -> tuple[RunState, Action]:
    """Pure: the state after the recorded outcomes (each with whether it was a repair) and the next action. The
    runner resumes from it; an ingested GPU result is judged by it (so its status is the router's, not a guess)."""
    state, action = RunState(caps), first_action()
    for outcome, repair in outcomes:
        state = state.start(outcome.stage, repair)
        action = next_action(state, outcome)
    return state, action


def replay_runs(caps: Mapping[str, int], runs) -> tuple[RunState, Action]:
    """`replay` over a conversion's recorded stage runs (typed rows: stage, verdict, fail_class, details), from the
    start of the current round (a person's edit starts a new one: the caps count from its gates)."""
    from tileport.records.rounds import round_start

    runs = list(runs)[round_start([r.details.source for r in runs]):]
    return replay(caps, [(Outcome(r.stage, r.verdict, r.fail_class, getattr(r.details, "owner", None)),
                          bool(r.details.repair)) for r in runs])


def every_verdict() -> list[tuple[str, str]]:
    return [(s.value, v) for s in Stage for v in STAGE_VERDICTS[s]]


def caps_of(config) -> dict[str, int]:
    return dict(config.caps.model_dump())
