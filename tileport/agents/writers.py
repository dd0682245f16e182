"""Writers: who writes the kernel (stage B) and who diagnoses (stages C, F).

`--model` picks one: a URL drives the vLLM client with tool calls, `scripted:TRANSCRIPT` replays a recorded
transcript through the very same loop (a named fake for tests and demos), `none` uses the deterministic draft
translator (`tileport.agents.draft`) when it is installed and deterministic diagnoses; without the draft
translator, B with `none` says "no writer: configure a model".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, Field

from tileport.agents.loop import AgentLoop, LoopResult
from tileport.config import Config
from tileport.errors import UserError
from tileport.local_models.client import ModelClient
from tileport.local_models.protocol import ToolCall
from tileport.local_models.structured import ToolSpec
from tileport.records import TokenUsage, verdicts

# The words a model may answer with, from the one verdict list (records.verdicts); a diagnosis is never BLOCKED
# (that is the environment, which the stage decides).
WriterVerdictWord = verdicts.literal(verdicts.WriteKernelVerdict)
DiagnosisVerdictWord = verdicts.literal(verdicts.DiagnosisVerdict, without=(verdicts.BLOCKED,))

# ------------------------------------------------------------------------------------------ the model's words


class WriteKernel(BaseModel):
    source: str = Field(description="the whole src/kernel.rs")
    spec: str | None = Field(None, description="optional JSON text of spec.json; empty keeps the current one")


class CargoBuild(BaseModel):
    pass


class KernelWriterVerdict(BaseModel):
    verdict: WriterVerdictWord
    summary: str
    build_attempts: int


class Diagnosis(BaseModel):
    verdict: DiagnosisVerdictWord
    owner: Literal["kernel", "host"]
    next_edit: str = Field(description="one concrete edit the owner's stage makes next")
    evidence: str = Field("", description="the IR lines or cases that show it")


# ------------------------------------------------------------------------------------------ tasks and outcomes


@dataclass
class BuildCheck:
    """What one `cargo_build` tool call reports: the text the model reads and whether the build was OK."""

    ok: bool
    text: str
    build: Any = None  # RustBuildResult | None
    report: Any = None  # SelfCheckReport | None
    blocked: str | None = None  # the environment cannot build (a missing tool)


@dataclass
class KernelTask:
    op: str
    op_source: str
    kernels: list[str]
    analysis_summary: str
    reference_ir: str
    kernel_path: Path
    spec_path: Path
    feedback: str  # previous attempt's diagnostics or the diagnoser's next edit ("" on a first attempt)
    build: Callable[[], BuildCheck]
    analysis: Any = None  # validators.analysis.schema.Analysis
    examples: dict[str, str] = field(default_factory=dict)  # worked ports: name -> kernel.rs
    hints: list[dict] = field(default_factory=list)  # stage F's structured optimisation hints (kernel, arch, occupancy)


@dataclass
class WriteOutcome:
    wrote: bool = False
    no_writer: str | None = None  # why there is no writer
    fault: Any = None  # ModelFault
    tokens: TokenUsage = field(default_factory=TokenUsage)
    model_id: str | None = None
    details: dict = field(default_factory=dict)


@dataclass
class DiagnosisTask:
    kind: Literal["translation", "performance"]
    op: str
    failure: str  # what failed, structured fields rendered
    reference_ir: str
    port_ir: str
    findings: str
    default_owner: str = "kernel"


@dataclass
class DiagnoseOutcome:
    diagnosis: Diagnosis | None = None
    fault: Any = None
    tokens: TokenUsage = field(default_factory=TokenUsage)
    model_id: str | None = None
    details: dict = field(default_factory=dict)
    blocked: str | None = None


# ------------------------------------------------------------------------------------------ the loops


def _write(task: KernelTask, args: dict) -> str:
    task.kernel_path.parent.mkdir(parents=True, exist_ok=True)
    task.kernel_path.write_text(args["source"], encoding="utf-8")
    msg = f"wrote src/kernel.rs ({len(args['source'].splitlines())} lines)"
    if args.get("spec"):
        try:
            json.loads(args["spec"])
        except json.JSONDecodeError as e:
            return msg + f"; spec NOT written: not JSON ({e})"
        task.spec_path.write_text(args["spec"], encoding="utf-8")
        msg += "; wrote spec.json"
    return msg


class KernelWriterLoop(AgentLoop):
    prompt = "kernel_writer"
    tools = [ToolSpec("write_kernel", "Replace src/kernel.rs with `source` (and spec.json with `spec` if given)",
                      WriteKernel),
             ToolSpec("cargo_build", "Build the crate, dump Tile IR, run the IR self-check; diagnostics or OK",
                      CargoBuild)]
    verdict_schema = KernelWriterVerdict
    max_turns = 8
    max_builds = 3  # builds per attempt; then the verdict is asked for

    def __init__(self, *a: Any, **kw: Any):
        super().__init__(*a, **kw)
        self.builds = 0
        self.compiled = False

    def user_message(self, task: KernelTask) -> str:
        parts = [f"Port `{', '.join(task.kernels)}` from {task.op}.py to cutile-rs.",
                 "## cuTile Python source\n```python\n" + task.op_source.strip() + "\n```",
                 "## Reference analysis\n" + task.analysis_summary,
                 "## Reference Tile IR (tileirdisasm)\n```\n" + task.reference_ir.strip()[:6000] + "\n```",
                 "## spec.json (current)\n```json\n" + (task.spec_path.read_text(encoding="utf-8")
                                                       if task.spec_path.is_file() else "{}")[:4000] + "\n```"]
        for name, src in task.examples.items():
            parts.append(f"## A worked port ({name}, cutile 0.5.0; it builds and passes its self-check)\n```rust\n"
                         + src.strip()[:4000] + "\n```")
        if task.feedback:
            parts.append("## What to fix from the previous attempt\n" + task.feedback[:6000])
        return "\n\n".join(parts)

    def handle(self, call: ToolCall, task: KernelTask) -> str:
        if call.name == "write_kernel":
            return _write(task, call.arguments)
        self.builds += 1
        check = task.build()
        self.compiled = check.ok
        return check.text

    def done(self, call: ToolCall, output: str, task: KernelTask) -> bool:
        """Compiled (the IR self-check is the stage's to judge and route), or the build budget is spent."""
        return call.name == "cargo_build" and (self.compiled or self.builds >= self.max_builds)


class DiagnoserLoop(AgentLoop):
    prompt = "translation_diagnoser"
    tools: list[ToolSpec] = []  # reads what it is given; never edits
    verdict_schema = Diagnosis

    def user_message(self, task: DiagnosisTask) -> str:
        return "\n\n".join([
            f"Op: {task.op}. What failed:\n{task.failure}",
            "## Structural IR diff findings\n" + (task.findings or "(none)")[:6000],
            "## Reference Tile IR\n```\n" + task.reference_ir[:6000] + "\n```",
            "## Port Tile IR\n```\n" + task.port_ir[:6000] + "\n```"])


class PerfDiagnoserLoop(DiagnoserLoop):
    prompt = "perf_diagnoser"


# ------------------------------------------------------------------------------------------ writers


class ModelWriter:
    """A model behind the OpenAI-compatible client (a vLLM URL, or a scripted transcript)."""

    def __init__(self, client: ModelClient, name: str):
        self.client = client
        self.name = name

    def _details(self, r: LoopResult) -> dict:
        return {"writer": self.name, "prompt": r.prompt, "model_requests": r.requests, "turns": r.turns,
                "tool_calls": r.tool_calls}

    def write_kernel(self, ctx: Any, task: KernelTask) -> WriteOutcome:
        loop = KernelWriterLoop(self.client, ctx.cancel, ctx.limits.model)
        r = loop.run(task)
        details = self._details(r)
        if r.verdict is not None:
            details.update(model_verdict=r.verdict.verdict, model_summary=r.verdict.summary)
        return WriteOutcome(wrote=task.kernel_path.is_file(), fault=r.fault, tokens=r.tokens, model_id=r.model_id,
                            details=details)

    def diagnose(self, ctx: Any, task: DiagnosisTask) -> DiagnoseOutcome:
        cls = PerfDiagnoserLoop if task.kind == "performance" else DiagnoserLoop
        r = cls(self.client, ctx.cancel, ctx.limits.model).run(task)
        return DiagnoseOutcome(diagnosis=r.verdict, fault=r.fault, tokens=r.tokens, model_id=r.model_id,
                               details=self._details(r))


class DraftWriter:
    """`--model none`: the deterministic draft translator, and deterministic diagnoses (no model anywhere)."""

    name = "none"

    def write_kernel(self, ctx: Any, task: KernelTask) -> WriteOutcome:
        from tileport.agents.draft import draft_port
        d = draft_port(task.analysis, kernel=ctx.kernel)
        d.write(task.kernel_path.parent)
        holes = [str(h) for h in (d.holes or [])]
        details: dict = {"writer": "none (draft)", "holes": holes[:20]}
        if task.hints and task.kernel_path.is_file():
            from tileport.agents.draft.hints import apply_hints

            src, applied, skipped = apply_hints(task.kernel_path.read_text(encoding="utf-8"), task.hints)
            task.kernel_path.write_text(src, encoding="utf-8")
            details.update(applied_hints=applied, skipped_hints=skipped)
        return WriteOutcome(wrote=task.kernel_path.is_file(), details=details)

    def diagnose(self, ctx: Any, task: DiagnosisTask) -> DiagnoseOutcome:
        first = task.findings.strip().splitlines()[0] if task.findings.strip() else task.failure.splitlines()[0]
        edit = (f"speed up the port where the measurement says: {first}" if task.kind == "performance"
                else f"make the port match the reference where the check failed: {first}")
        return DiagnoseOutcome(
            diagnosis=Diagnosis(verdict="FAIL_FIXABLE", owner=task.default_owner,
                                next_edit=edit,
                                evidence=task.findings[:2000]),
            details={"writer": "none (deterministic)"})


SCRIPTED = "scripted:"


def make_writer(spec: str | None, config: Config, *, skip_requests: int = 0) -> ModelWriter | DraftWriter:
    """The writer `--model` names (default: the [model] endpoint of tileport.toml)."""
    spec = spec or config.model.base_url
    if spec == "none":
        return DraftWriter()
    if spec.startswith(SCRIPTED):
        from tileport.local_models.scripted import ScriptedModel, load_transcript

        name = spec[len(SCRIPTED):]
        try:
            transcript = load_transcript(name)
        except (OSError, json.JSONDecodeError) as e:
            raise UserError(f"--model {spec}: cannot read the transcript ({e}); pass scripted:NAME of a file in "
                            "tileport/local_models/transcripts/ or scripted:PATH.json") from None
        model = ScriptedModel(transcript)
        model.transport.position = min(skip_requests, len(model.transport.exchanges))
        return ModelWriter(model, spec)
    if spec.startswith(("http://", "https://")):
        endpoint = config.model.model_copy(update={"base_url": spec.rstrip("/")})
        return ModelWriter(ModelClient.from_endpoint(endpoint), spec)
    raise UserError(f"--model {spec!r}: use a URL (http://host:port/v1), scripted:TRANSCRIPT or none")
