"""What each stage records beside its verdict, typed per stage (the `details` of a StageResult).

Stages build these and dump them into `StageResult.details`; every reader (the router, the next stage, `status`,
the dashboard) decodes them with `details_of(stage, raw)` instead of guessing keys. Decoding is lenient, so stores
written by older tileports keep working: unknown keys are kept, old spellings are read (`hardware` for `hw`,
`self_check_pairs` for `ir_pairs`, `worst` as a `{config, ratio}` dict), and a key whose value has the wrong type
is dropped (a reader then sees the field's default) rather than failing the whole row.

Writing is strict: `AnalyzeDetails(kernelz=3)` raises (only a stored row, read through `details_of`, may carry
keys the model does not name), and so does setting an attribute the model has no field for; `updated(**fields)`
is the checked way to add fields to a stage's details.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import (AliasChoices, BaseModel, ConfigDict, Field, ValidationError, ValidationInfo,
                      model_validator)

from tileport.records.verdicts import Stage


_STORED = {"stored": True}  # the validation context of a row read back (lenient: unknown keys are kept)


class _Details(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    # Set by the runner / entry points on any stage's run.
    repair: bool = False  # the attempt was the stage's one repair (its validator's output was missing)
    model_requests: int = 0  # model requests this attempt made (a scripted transcript skips them on resume)
    writer: str | None = None
    fault: str | None = None  # the model endpoint's fault kind, when there was one
    error: str | None = None  # a one-line error that ended the stage
    env_missing: str | None = None  # BLOCKED(env): what is missing and its fix
    source: str | None = None  # who recorded it when not `tileport run` ("gate ingest", ...)
    # What a writer's loop reports (agents.writers): B, C and F attempts.
    prompt: str | None = None
    turns: int | None = None
    tool_calls: list[str] = Field(default_factory=list)
    stop: str | None = None  # why the tool loop ended
    context: dict[str, Any] = Field(default_factory=dict)  # the context budget the loop worked within
    model_skipped: str | None = None  # why the model was not asked (the draft was complete)
    model_verdict: str | None = None  # the writer's own verdict (never what the judge reads)
    model_summary: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any, info: ValidationInfo) -> Any:
        """A writer's misspelt key fails here; a stored row (`details_of`) may keep keys of other versions."""
        if isinstance(data, dict) and not (info.context or {}).get("stored"):
            unknown = sorted(str(k) for k in data if k not in cls.model_fields)
            if unknown:
                raise ValueError(f"{cls.__name__} has no field {', '.join(unknown)}")
        return data

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in type(self).model_fields:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        super().__setattr__(name, value)

    def updated(self, **fields: Any) -> Self:
        """A copy with `fields` set, each checked as at construction (a misspelt name or a wrong type raises);
        keys a stored row carried beyond the model are kept."""
        checked = type(self)(**fields).dump()
        return type(self).model_validate({**self.dump(), **checked}, context=_STORED)

    def dump(self) -> dict[str, Any]:
        """The JSON-ready dict a StageResult carries (only what was set, so rows stay as small as before)."""
        return self.model_dump(mode="json", exclude_unset=True, by_alias=False)


class ReferenceVariant(BaseModel):
    """One cuTile Python variant's reference side, as stage A recorded it (the analysis' `VariantChoice`)."""

    model_config = ConfigDict(extra="allow")
    variant: str = "?"
    reference: str | None = None  # "cutile" or "triton"


class ReferenceDetails(BaseModel):
    """The reference choice between an op and its Triton twin, as stage A recorded it (the analysis'
    `ReferenceChoice`: what status and the dashboard show without re-reading analysis.json)."""

    model_config = ConfigDict(extra="allow")
    status: str | None = None
    variants: list[ReferenceVariant] = Field(default_factory=list)
    tile_ir_gap: str | None = None  # the IR gate's gap when a Triton reference has no Tile IR

    @property
    def triton_referenced(self) -> bool:
        return any(v.reference == "triton" for v in self.variants)


class AnalyzeDetails(_Details):
    kernels: int | None = None
    variants: int | None = None
    instances: int | None = None
    targets: list[str] = Field(default_factory=list)
    out_dir: str | None = None
    reference: ReferenceDetails | None = None  # only for an op with a Triton twin
    reference_summary: str | None = None  # the choice in words


class FeedbackItem(BaseModel):
    """One thing the writer is told to fix (a compiler diagnostic, an IR finding, the diagnoser's next edit);
    stored in B's record so the next attempt renders them within its context budget (tileport.agents.feedback)."""

    kind: Literal["diagnostic", "ir_finding", "diagnoser", "note"]
    where: str = ""  # src/kernel.rs:13:39, or entry/variant/target of an IR pair
    code: str = ""  # E0308, JIT, memory.padding, ...
    message: str
    source: str = ""  # the compiler's rendering with the offending lines, or reference vs port values

    def render(self) -> str:
        head = " ".join(x for x in (f"[{self.kind}]", self.where, self.code) if x) + f": {self.message}"
        return head + (f"\n{self.source.rstrip()}" if self.source.strip() else "")


class IRPair(BaseModel):
    """One reference/port Tile IR text pair of a B run's IR self-check (the dashboard's IR diff view)."""

    model_config = ConfigDict(extra="allow")
    label: str = "?"
    reference: str = ""
    port: str = ""
    verdict: str | None = None


class WriteKernelDetails(_Details):
    build_stage: str | None = None
    errors: int = 0
    warnings: int = 0
    error_codes: list[str] = Field(default_factory=list)
    jobs: int = 0
    builds: int | None = None
    self_check: str | None = None  # the IR self-check's verdict (PASS, PASS_WITH_NOTES, FAIL_FIXABLE)
    pairs: int | None = None
    pairs_failed: int | None = None
    uncovered: int | None = None
    ir_pairs: list[IRPair] = Field(default_factory=list, validation_alias=AliasChoices("ir_pairs", "self_check_pairs"))
    categories: list[str] = Field(default_factory=list)  # IR diff categories with errors
    feedback: str | None = None  # what the writer gets back next time (diagnostics, self-check findings)
    feedback_items: list[FeedbackItem] = Field(default_factory=list)  # the same, typed (a bad item is dropped)
    no_writer: bool = False
    holes: list[Any] = Field(default_factory=list)
    applied_hints: list[str] = Field(default_factory=list)  # stage F's hints the draft writer applied
    skipped_hints: list[str] = Field(default_factory=list)  # ... and those it skipped, with why
    draft_holes: list[str] = Field(default_factory=list)  # the holes of the draft the attempt started from
    ir_gaps: list[str] = Field(default_factory=list)  # variants the IR gate could not judge (Triton reference)

    @model_validator(mode="before")
    @classmethod
    def _old_self_check(cls, data: Any) -> Any:
        sc = data.get("self_check") if isinstance(data, dict) else None
        if isinstance(sc, dict):  # a whole report was kept once: its verdict is what the gate reads
            data = {**data, "self_check": sc.get("verdict")}
        return data


class DiagnosisDetails(_Details):
    """Stages C and F: who owns the fix and the one next edit."""

    owner: Literal["kernel", "host"] | None = None
    next_edit: str | None = None
    evidence: str | None = None
    hints: list[dict[str, Any]] = Field(default_factory=list)  # F: structured edits a deterministic writer applies


class CorrectnessDetails(_Details):
    cases: int | None = None
    failed: int | None = None
    passed: int | None = None
    failed_cases: list[dict[str, Any]] = Field(default_factory=list)
    host_error: str | None = None
    evaluated: int | None = None  # cases that judged the port (the others: not evaluated, with why)
    not_evaluated: int | None = None
    # The op's own tests, one line each: id, reference verdict, port verdict/status, port launches, seconds
    tests: list[dict[str, Any]] = Field(default_factory=list)
    gate_dir: str | None = None  # where the gate for this run was packed (BLOCKED(env) on a machine without a GPU)


class PerfRowDetails(BaseModel):
    """One timed configuration as stage F reads it (the raw samples are in the store's perf rows)."""

    model_config = ConfigDict(extra="allow")
    config: str
    ref_ms: float | None = None
    port_ms: float | None = None
    ratio: float | None = None
    flags: list[str] = Field(default_factory=list)
    tiny: bool | None = False  # None: older runners did not say
    failed: bool | None = False
    hw: dict[str, Any] = Field(default_factory=dict)
    launch: dict[str, Any] = Field(default_factory=dict)
    idle_gap_us: dict[str, Any] = Field(default_factory=dict)


class PerfDetails(_Details):
    geomean: float | None = None
    geomean_max: float | None = None  # the gate as it was when the run was judged
    config_max: float | None = None  # the per-configuration bound as it was when the run was judged
    rows: list[PerfRowDetails] = Field(default_factory=list)
    worst: str | None = None  # the slowest timed configuration's name
    worst_ratio: float | None = None
    band: str | None = None
    complete: bool = False
    hw: dict[str, Any] = Field(default_factory=dict, validation_alias=AliasChoices("hw", "hardware"))
    arch: str | None = None
    left_out: list[dict[str, Any]] = Field(default_factory=list)  # captured configurations not timed, with why
    host_us: dict[str, Any] = Field(default_factory=dict)  # side -> median over configurations of call_us

    @model_validator(mode="before")
    @classmethod
    def _old_worst(cls, data: Any) -> Any:
        w = data.get("worst") if isinstance(data, dict) else None
        if isinstance(w, dict):  # an older spelling: {"config": ..., "ratio": ...}
            data = {**data, "worst": w.get("config")}
            if data.get("worst_ratio") is None and isinstance(w.get("ratio"), (int, float)):
                data["worst_ratio"] = w["ratio"]
        return data

    def worst_text(self) -> str | None:
        if not self.worst:
            return None
        return f"{self.worst} ({self.worst_ratio:.3f})" if self.worst_ratio is not None else self.worst

    def over_config_max(self, current: float | None = None) -> bool | None:
        """Whether the slowest configuration broke the per-configuration bound recorded with this run (the bound
        of today's config only for a run recorded before tileport kept it); None when nothing was timed."""
        bound = self.config_max if self.config_max is not None else current
        if self.worst_ratio is None or bound is None:
            return None
        return self.worst_ratio > bound


DETAILS: dict[Stage, type[_Details]] = {
    Stage.ANALYZE: AnalyzeDetails,
    Stage.WRITE_KERNEL: WriteKernelDetails,
    Stage.DIAGNOSE_TRANSLATION: DiagnosisDetails,
    Stage.HOST_CORRECTNESS: CorrectnessDetails,
    Stage.PERFORMANCE: PerfDetails,
    Stage.DIAGNOSE_PERFORMANCE: DiagnosisDetails,
}
StageDetails = AnalyzeDetails | WriteKernelDetails | DiagnosisDetails | CorrectnessDetails | PerfDetails


def details_of(stage: Stage | str, raw: dict[str, Any] | None) -> StageDetails:
    """The stage's typed details from a stored dict; lenient for old rows (see the module docstring)."""
    cls = DETAILS[Stage(stage)]
    data = dict(raw) if isinstance(raw, dict) else {}
    for _ in range(len(data) + 1):
        try:
            return cls.model_validate(data, context=_STORED)
        except ValidationError as e:
            if not _drop_bad(data, e):
                break
    return cls()


def _drop_bad(data: dict[str, Any], e: ValidationError) -> bool:
    """Drop what failed validation: the bad element of a list (one damaged perf row loses that row, not all of
    them), else the top-level key. False when nothing could be dropped."""
    rows: set[tuple[str, int]] = set()
    keys: set[str] = set()
    for err in e.errors():
        loc = err["loc"]
        if not loc or loc[0] not in data:
            continue
        value = data[loc[0]]
        if len(loc) > 1 and isinstance(value, list) and isinstance(loc[1], int) and loc[1] < len(value):
            rows.add((str(loc[0]), loc[1]))
        else:
            keys.add(str(loc[0]))
    for key, i in sorted(rows, key=lambda r: -r[1]):
        if key not in keys:
            data[key] = data[key][:i] + data[key][i + 1:]
    for key in keys:
        data.pop(key)
    return bool(rows or keys)
