"""The IR diff's report: verdicts, severities, findings grouped by category, aligned rows (JSON-serialisable;
the dashboard and the stage records read these)."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, Field, model_validator

from tileport.records.exits import EXIT_FAILED, EXIT_OK


class Verdict(str, Enum):
    PASS = "PASS"
    PASS_WITH_NOTES = "PASS_WITH_NOTES"
    FAIL_FIXABLE = "FAIL_FIXABLE"


class Severity(str, Enum):
    ERROR = "error"  # the port is structurally wrong: FAIL_FIXABLE
    WARNING = "warning"  # suspicious, a human should look: PASS_WITH_NOTES
    NOTE = "note"  # benign difference: PASS_WITH_NOTES


SEVERITY_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.NOTE: 2}

# category -> what it covers (also the order of groups in reports)
CATEGORIES: dict[str, str] = {
    "entries": "kernel entries and their parameters",
    "memory": "loads/stores/atomics: view vs pointer, counts, padding, masks, tile shapes, dim maps, tokens",
    "mma": "matrix multiply-accumulate operand and accumulator types and shapes",
    "reduction": "reduce/scan axis, identity and combiner",
    "math": "rounding modes, flush_to_zero, exp vs exp2, transcendental functions",
    "loops": "loop structure, bounds and loop-carried values",
    "assumptions": "div_by / bounded assumptions",
    "conversions": "dtype conversions",
    "hints": "optimisation hints (occupancy, num_cta_in_cga, latency, allow_tma)",
    "structure": "any other dataflow or control-flow difference",
    "benign": "differences that do not change the kernel (dead code, CSE, debug info)",
}


class Consequence(str, Enum):
    """What a difference can change: the severity follows it (values: error; speed: warning, unless the issue's
    list of consequential hints says error; host: equal when the host passes what it says, confirmed by the host
    stage's correctness tests; neither: note)."""

    VALUES = "values"
    SPEED = "speed"
    HOST = "host"
    NEITHER = "neither"


# checks whose consequence is not the default of their severity (error: values, warning: values, note: neither)
_CONSEQUENCE: dict[tuple[str, Severity | None], Consequence] = {
    ("hints", None): Consequence.SPEED,
    ("assumptions.div_by", Severity.ERROR): Consequence.SPEED,
    ("assumptions.div_by", Severity.WARNING): Consequence.HOST,
    ("assumptions.div_by_other_parameters", Severity.WARNING): Consequence.SPEED,
    ("memory.mask_bound", None): Consequence.HOST,
    ("memory.address_stride", None): Consequence.HOST,
    ("memory.index_grid", None): Consequence.HOST,
    ("memory.loop_tokens", None): Consequence.SPEED,
    ("memory.padding_host", None): Consequence.HOST,
    ("structure.specialised", None): Consequence.HOST,
    ("structure.runtime_check", None): Consequence.NEITHER,
}


def consequence_of(check: str, severity: Severity) -> Consequence:
    for key in ((check, severity), (check, None), (check.split(".")[0], None)):
        if key in _CONSEQUENCE:
            return _CONSEQUENCE[key]
    return Consequence.NEITHER if severity == Severity.NOTE else Consequence.VALUES


class Finding(BaseModel):
    category: str
    check: str  # e.g. "memory.padding"
    severity: Severity
    message: str
    entry: str | None = None  # reference entry name (port entry name when only the port has it)
    ref_line: int | None = None
    port_line: int | None = None
    ref: str | None = None  # the reference side's value of what differs
    port: str | None = None  # the port side's value
    consequence: Consequence | None = None  # what the difference can change; filled from the check when not given

    @model_validator(mode="after")
    def _fill_consequence(self) -> "Finding":
        if self.consequence is None:
            self.consequence = consequence_of(self.check, self.severity)
        return self


class FindingGroup(BaseModel):
    category: str
    description: str
    severity: Severity  # the worst in the group
    findings: list[Finding]


class EntryPair(BaseModel):
    ref: str | None
    port: str | None
    rule: str  # "name", "base_name", "only_entry", "position", "unmatched"
    identical: bool = False
    ref_line: int | None = None
    port_line: int | None = None


class RowStatus(str, Enum):
    SAME = "same"
    CHANGED = "changed"
    DOWNSTREAM = "downstream"
    REF_ONLY = "ref_only"
    PORT_ONLY = "port_only"
    BENIGN = "benign"


class AlignedRow(BaseModel):
    entry: str
    depth: int
    status: RowStatus
    ref_line: int | None = None
    ref_text: str | None = None
    port_line: int | None = None
    port_text: str | None = None
    category: str | None = None


class IRDiffReport(BaseModel):
    verdict: Verdict
    ref_path: str | None = None
    port_path: str | None = None
    target: str | None = None  # the GPU target hints were judged for (None: every target named)
    entries: list[EntryPair] = Field(default_factory=list)
    groups: list[FindingGroup] = Field(default_factory=list)
    rows: list[AlignedRow] = Field(default_factory=list)
    stats: dict[str, int] = Field(default_factory=dict)

    @property
    def findings(self) -> list[Finding]:
        return [f for g in self.groups for f in g.findings]

    def categories(self, severity: Severity | None = None) -> set[str]:
        return {f.category for f in self.findings if severity is None or f.severity == severity}

    def checks(self, severity: Severity | None = None) -> set[str]:
        return {f.check for f in self.findings if severity is None or f.severity == severity}

    @property
    def exit_code(self) -> int:
        return EXIT_FAILED if self.verdict == Verdict.FAIL_FIXABLE else EXIT_OK
