"""The stage vocabulary: stages, fail classes and each stage's verdict words, as enums.

This is the one list. The router's table, the writers' structured replies, the merge gates and the dashboard's
colours all derive from it: a verdict added here reaches every reader, a typo anywhere fails at import or
validation time instead of routing nowhere.
"""

from __future__ import annotations

from enum import Enum
from types import MappingProxyType
from typing import Literal, Mapping


class Stage(str, Enum):
    """The anchor workflow's stages; the letter is the anchor's name for it."""

    ANALYZE = "A"
    WRITE_KERNEL = "B"
    DIAGNOSE_TRANSLATION = "C"
    HOST_CORRECTNESS = "D"
    PERFORMANCE = "E"
    DIAGNOSE_PERFORMANCE = "F"


class FailClass(str, Enum):
    """Who must act on a failure: the kernel writer, the host writer, or the environment (stop)."""

    KERNEL = "kernel"
    HOST = "host"
    ENV = "env"


def _words(name: str, words: str, doc: str = "") -> type[Enum]:
    """A str enum whose members are the words themselves (`X.PASS == "PASS"`)."""
    e = Enum(name, {w: w for w in words.split()}, type=str, module=__name__)
    e.__doc__ = doc or f"{name}: {words}"
    return e


AnalyzeVerdict = _words("AnalyzeVerdict", "PASS FAIL_FIXABLE BLOCKED")
# FAIL_FIXABLE: it compiles, but the IR self-check failed (or no kernel was written)
WriteKernelVerdict = _words("WriteKernelVerdict", "COMPILED FAIL_COMPILE FAIL_FIXABLE BLOCKED")
DiagnosisVerdict = _words("DiagnosisVerdict", "PASS PASS_WITH_NOTES FAIL_FIXABLE FAIL_COMPILER_BUG BLOCKED",
                          "Stage C (a translation fault).")
PerfDiagnosisVerdict = _words("PerfDiagnosisVerdict", "PASS PASS_WITH_NOTES FAIL_FIXABLE BLOCKED",
                              "Stage F (a performance fault): no compiler-bug verdict.")
CorrectnessVerdict = _words("CorrectnessVerdict", "ALL_PASS FAIL BLOCKED")
PerfVerdict = _words("PerfVerdict", "DONE INVESTIGATE BLOCKED")


VERDICTS: Mapping[Stage, type[Enum]] = MappingProxyType({
    Stage.ANALYZE: AnalyzeVerdict,
    Stage.WRITE_KERNEL: WriteKernelVerdict,
    Stage.DIAGNOSE_TRANSLATION: DiagnosisVerdict,
    Stage.HOST_CORRECTNESS: CorrectnessVerdict,
    Stage.PERFORMANCE: PerfVerdict,
    Stage.DIAGNOSE_PERFORMANCE: PerfDiagnosisVerdict,
})

# Verdict words per stage, exactly as the anchor spells them (derived: never edit a copy).
STAGE_VERDICTS: Mapping[Stage, tuple[str, ...]] = MappingProxyType(
    {s: tuple(v.value for v in e) for s, e in VERDICTS.items()})

BLOCKED = "BLOCKED"
# The verdicts that let the work go on as passed (the dashboard shows them green).
PASSING: frozenset[str] = frozenset({AnalyzeVerdict.PASS.value, DiagnosisVerdict.PASS_WITH_NOTES.value,
                                     WriteKernelVerdict.COMPILED.value, CorrectnessVerdict.ALL_PASS.value,
                                     PerfVerdict.DONE.value})
# What each required merge gate accepts.
GATE_PASSES: Mapping[Stage, tuple[str, ...]] = MappingProxyType({
    Stage.ANALYZE: (AnalyzeVerdict.PASS.value,),
    Stage.WRITE_KERNEL: (WriteKernelVerdict.COMPILED.value,),
    Stage.HOST_CORRECTNESS: (CorrectnessVerdict.ALL_PASS.value,),
    Stage.PERFORMANCE: (PerfVerdict.DONE.value,),
})
# What the IR self-check of a B run must say for the B gate.
SELF_CHECK_PASSES: tuple[str, ...] = (DiagnosisVerdict.PASS.value, DiagnosisVerdict.PASS_WITH_NOTES.value)


def words(enum: type[Enum], *, without: tuple[str, ...] = ()) -> tuple[str, ...]:
    return tuple(v.value for v in enum if v.value not in without)


def literal(enum: type[Enum], *, without: tuple[str, ...] = ()):
    """A `Literal[...]` of the enum's words (for a model's structured reply: the JSON schema stays a plain enum of
    strings), optionally without some (a model never says BLOCKED in a diagnosis)."""
    return Literal[words(enum, without=without)]  # type: ignore[valid-type]


def is_verdict(stage: Stage | str, verdict: str) -> bool:
    return verdict in STAGE_VERDICTS[Stage(stage)]
