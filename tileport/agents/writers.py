"""Writers: who writes the kernel (stage B) and who diagnoses (stages C, F).

`--model` picks one: a URL drives the vLLM client with tool calls, `scripted:TRANSCRIPT` replays a recorded
transcript through the very same loop (a named fake for tests and demos), `none` uses the deterministic draft
translator (`tileport.draft`) and deterministic diagnoses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, Field

from tileport.agents import budget as bd
from tileport.agents.feedback import FeedbackItem, items_from_diagnostics, items_from_self_check
from tileport.agents.holes import fill_hole, find_holes, search_replace
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


class ReplaceRegion(BaseModel):
    id: str = Field(description="the hole's id, e.g. h1")
    code: str = Field(description="the Rust statements that replace the hole's region (its marker lines included)")


class EditKernel(BaseModel):
    search: str = Field(description="lines copied exactly from the current kernel.rs (one place)")
    replace: str = Field(description="the lines that replace them")


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
    reused: bool = False  # the same sources as the previous call: the earlier result, no new build

    def items(self) -> list[FeedbackItem]:
        """Diagnostics with their source lines, then the IR self-check's findings for the failed entries."""
        out = items_from_diagnostics(self.build.diagnostics) if self.build is not None else []
        if self.build is not None and self.build.ok and self.report is not None:
            out += items_from_self_check(self.report)
        if not out:
            out = [FeedbackItem(kind="note", message=self.text.strip().splitlines()[-1] if self.text.strip()
                                else "no output")]
        return out

    def status(self) -> str:
        """The last line of the build's text: `OK: 0 error(s)` / `FAILED at rustc: 2 error(s)`."""
        for line in reversed(self.text.splitlines()):
            if line.startswith(("OK:", "FAILED", "BLOCKED")):
                return line
        return self.text.strip().splitlines()[0] if self.text.strip() else ""


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
    analysis: Any = None  # analysis.schema.Analysis
    hints: list[dict] = field(default_factory=list)  # stage F's structured optimisation hints (kernel, arch, occupancy)
    draft: str | None = None  # the deterministic draft's kernel.rs this attempt starts from (None: no draft)
    feedback_items: list[FeedbackItem] = field(default_factory=list)  # what to fix, typed (diagnostics, IR findings)
    attempt: int = 1


@dataclass
class WriteOutcome:
    wrote: bool = False
    no_writer: str | None = None  # why there is no writer
    fault: Any = None  # ModelFault
    tokens: TokenUsage = field(default_factory=TokenUsage)
    model_id: str | None = None
    details: dict = field(default_factory=dict)
    transcript: Any = None  # tileport.agents.loop.Transcript: every request and reply, kept as evidence


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
    transcript: Any = None


# ------------------------------------------------------------------------------------------ the loops


def _write_spec(task: KernelTask, text: str) -> str:
    """spec.json from the model, accepted only when it validates against the spec schema."""
    from tileport.validators.rust.spec import DumpSpec

    try:
        spec = DumpSpec.model_validate_json(text)
    except ValueError as e:
        first = str(e).splitlines()
        why = "; ".join(ln.strip() for ln in first[:4] if ln.strip())
        return f"spec NOT written (spec.json kept): it does not match the spec schema: {why}"
    task.spec_path.write_text(spec.to_json(), encoding="utf-8")
    return "wrote spec.json"


def _write(task: KernelTask, args: dict) -> str:
    task.kernel_path.parent.mkdir(parents=True, exist_ok=True)
    task.kernel_path.write_text(args["source"], encoding="utf-8")
    msg = f"wrote src/kernel.rs ({len(args['source'].splitlines())} lines)"
    if args.get("spec"):
        msg += "; " + _write_spec(task, args["spec"])
    return msg


def _edit(task: KernelTask, call: ToolCall) -> str:
    from tileport.errors import UserError

    text = task.kernel_path.read_text(encoding="utf-8") if task.kernel_path.is_file() else ""
    try:
        if call.name == "replace_region":
            new = fill_hole(text, call.arguments["id"], call.arguments["code"])
        else:
            new = search_replace(text, call.arguments["search"], call.arguments["replace"])
    except UserError as e:
        return f"NOT applied: {e}"
    task.kernel_path.write_text(new, encoding="utf-8")
    left = find_holes(new)
    return (f"applied; kernel.rs now has {len(new.splitlines())} lines and "
            + (f"{len(left)} unfilled hole(s): {', '.join(h.id for h in left)}" if left else "no unfilled holes"))


WRITE_KERNEL = ToolSpec("write_kernel", "Replace src/kernel.rs with `source` (and spec.json with `spec` if given)",
                        WriteKernel)
CARGO_BUILD = ToolSpec("cargo_build", "Build the crate, dump Tile IR, run the IR self-check; diagnostics or OK",
                       CargoBuild)
REPLACE_REGION = ToolSpec("replace_region", "Fill hole `id` of kernel.rs with `code` (the region between its "
                          "TILEPORT-HOLE markers, markers included, is replaced)", ReplaceRegion)
EDIT_KERNEL = ToolSpec("edit_kernel", "Replace the one place of kernel.rs that reads `search` with `replace`",
                       EditKernel)


def _numbered(text: str) -> str:
    return "\n".join(f"{i:>4} | {ln}" for i, ln in enumerate(text.splitlines(), 1))


class KernelWriterLoop(AgentLoop):
    prompt = "kernel_writer"
    tools = [WRITE_KERNEL, CARGO_BUILD]
    verdict_schema = KernelWriterVerdict
    max_turns = 8
    max_builds = 3  # builds per attempt (a rebuild of unchanged sources does not count); then the verdict
    max_idle_builds = 2  # rebuilds of unchanged sources in a row before the loop stops: the model is not editing

    def __init__(self, *a: Any, **kw: Any):
        super().__init__(*a, **kw)
        self.builds = 0
        self.compiled = False
        self.build_calls = 0
        self.idle_builds = 0  # builds in a row of unchanged sources

    def tools_for(self, task: KernelTask) -> list[ToolSpec]:
        """Edits of the kernel.rs in place when there is one (the draft, or the attempt the diagnostics are
        about); the whole-file write always, as the fallback."""
        if not task.kernel_path.is_file():
            return [WRITE_KERNEL, CARGO_BUILD]
        holes = find_holes(task.kernel_path.read_text(encoding="utf-8"))
        return ([REPLACE_REGION] if holes else []) + [EDIT_KERNEL, WRITE_KERNEL, CARGO_BUILD]

    def user_message(self, task: KernelTask) -> str:
        from tileport.agents.reference.data import load_api, similar_ports

        current = task.kernel_path.read_text(encoding="utf-8") if task.kernel_path.is_file() else ""
        holes = find_holes(current)
        if holes:
            intro = (f"Port `{', '.join(task.kernels)}` from {task.op}.py to cutile-rs. The deterministic draft "
                     f"below is complete except for {len(holes)} hole(s): fill each with `replace_region` "
                     "(or `edit_kernel`), then call `cargo_build`.")
        elif current:
            intro = (f"Port `{', '.join(task.kernels)}` from {task.op}.py to cutile-rs. Fix src/kernel.rs (below) "
                     "where the findings point, with `edit_kernel` (or `write_kernel`), then call `cargo_build`.")
        else:
            intro = f"Port `{', '.join(task.kernels)}` from {task.op}.py to cutile-rs."
        parts = [bd.Part("task", 0, "", intro),
                 bd.Part("python", 0, "cuTile Python kernels (the op's @ct.kernel functions and constants)",
                         "```python\n" + kernel_source(task.op_source).strip() + "\n```")]
        if holes:
            parts.append(bd.Part("holes", 0, "Holes to fill", items=[h.render() for h in holes]))
        if current:
            parts.append(bd.Part("kernel", 0, "src/kernel.rs (current; line numbers are not part of the file)",
                                 "```rust\n" + _numbered(current) + "\n```"))
        if task.feedback_items:
            parts.append(bd.Part("feedback", 1, "What to fix (the previous attempt's diagnostics and findings)",
                                 items=[it.render() for it in task.feedback_items]))
        elif task.feedback:
            parts.append(bd.Part("feedback", 1, "What to fix from the previous attempt", task.feedback))
        api = load_api()
        names = list(dict.fromkeys(
            [n for ct in _ct_names(task.op_source) for n in api.ct_map.get(ct, [])]
            + api.names_in(current + "\n" + "\n".join(it.render() for it in task.feedback_items))))
        by_name = api.by_name()
        entries = [f.render() for n in names for f in by_name.get(n, [])]
        mapping = [f"ct.{ct} -> {', '.join(api.ct_map[ct])}" for ct in _ct_names(task.op_source) if api.ct_map.get(ct)]
        parts.append(bd.Part("api_map", 2, f"How the ct.* calls of this op are written in cutile {api.version}",
                             items=mapping))
        parts.append(bd.Part("api", 3, f"cutile {api.version} API entries in play (signatures from the crate)",
                             items=entries))
        parts.append(bd.Part("spec", 4, "spec.json (current)", "```json\n" + (
            task.spec_path.read_text(encoding="utf-8") if task.spec_path.is_file() else "{}") + "\n```"))
        if kernel_source(task.op_source).strip() != task.op_source.strip():
            parts.append(bd.Part("op_file", 4, f"The whole {task.op}.py (launch wrapper, inputs)",
                                 "```python\n" + task.op_source.strip() + "\n```"))
        examples = [f"### {p.name}\n```python\n{kernel_source(p.python).strip()}\n```\n```rust\n"
                    f"{p.kernel_rs.strip()}\n```"
                    for p in similar_ports(task.op_source, task.op)]
        parts.append(bd.Part("examples", 5, f"Worked ports (cutile {api.version}; each builds and passes its "
                                            "self-check)", items=examples))
        parts.append(bd.Part("reference_ir", 6, "Reference Tile IR (tileirdisasm)",
                             "```\n" + task.reference_ir.strip() + "\n```" if task.reference_ir.strip() else ""))
        text, taken, dropped = bd.fill(parts, self.prompt_budget)
        self.context = bd.ContextReport(max_model_len=self.max_model_len,
                                        reply_reserve=bd.reply_reserve(self.max_model_len),
                                        prompt_budget=self.prompt_budget, parts=taken, dropped=dropped)
        return text

    def handle(self, call: ToolCall, task: KernelTask, room: int) -> str:
        if call.name == "write_kernel":
            return _write(task, call.arguments)
        if call.name in ("replace_region", "edit_kernel"):
            return _edit(task, call)
        self.build_calls += 1
        check = task.build()
        self.compiled = check.ok
        if check.reused:
            self.idle_builds += 1
            first = check.build.errors[0].short() if check.build is not None and check.build.errors else ""
            return (f"kernel.rs and spec.json are unchanged since the last build, so its result stands: "
                    f"{check.status()}" + (f" (first: {first})" if first else "")
                    + ". Edit kernel.rs (replace_region / edit_kernel) before building again.")
        self.builds += 1
        self.idle_builds = 0
        if bd.estimate_tokens(check.text) <= room:
            return check.text
        # too long for what is left of the context: the items that fit, most important first
        status = check.status()
        text, _, dropped = bd.fill([bd.Part("items", 1, "", items=[it.render() for it in check.items()])],
                                   max(0, room - bd.estimate_tokens(status) - 16))
        more = f"\n({sum(dropped.values())} more item(s) left out: the context is full)" if dropped else ""
        return f"{text}{more}\n\n{status}"

    def done(self, call: ToolCall, output: str, task: KernelTask) -> bool:
        """Compiled (the IR self-check is the stage's to judge and route), or the build budget is spent."""
        return call.name == "cargo_build" and (self.compiled or self.builds >= self.max_builds
                                               or self.idle_builds >= self.max_idle_builds)

    def finish_reason(self) -> str:
        if self.compiled:
            return "compiled"
        if self.idle_builds >= self.max_idle_builds:
            return f"{self.idle_builds} rebuilds in a row of unchanged sources (the model is not editing)"
        return f"build budget spent ({self.builds} builds)"

    def stop_reason(self, turns: int) -> str:
        if not self.build_calls:
            return f"turn cap reached ({turns} turns) without a cargo_build"
        return f"turn cap reached ({turns} turns) after {self.builds} build(s)"


def kernel_source(python: str) -> str:
    """The parts of an op file a kernel port needs: imports, module-level constants and the `@ct.kernel`
    functions (whole, by the syntax tree, never cut mid-text); the whole file when it has none or does not parse."""
    import ast

    try:
        tree = ast.parse(python)
    except SyntaxError:
        return python
    lines = python.splitlines()

    def is_kernel(fn: ast.AST) -> bool:
        return isinstance(fn, ast.FunctionDef) and any(
            "kernel" in ast.unparse(d) for d in fn.decorator_list)

    keep = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign))
            or is_kernel(n)]
    if not any(is_kernel(n) for n in keep):
        return python
    out = []
    for n in keep:
        start = min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])])
        out.append("\n".join(lines[start - 1:n.end_lineno]))
    return "\n\n".join(out)


def _ct_names(python: str) -> list[str]:
    from tileport.agents.reference.data import ct_functions

    return ct_functions(python)


class DiagnoserLoop(AgentLoop):
    prompt = "translation_diagnoser"
    tools: list[ToolSpec] = []  # reads what it is given; never edits
    verdict_schema = Diagnosis

    def user_message(self, task: DiagnosisTask) -> str:
        parts = [bd.Part("failure", 0, "", f"Op: {task.op}. What failed:\n{task.failure}"),
                 bd.Part("findings", 1, "Structural IR diff findings", items=(task.findings or "(none)").splitlines()),
                 bd.Part("reference_ir", 2, "Reference Tile IR", "```\n" + task.reference_ir + "\n```"),
                 bd.Part("port_ir", 2, "Port Tile IR", "```\n" + task.port_ir + "\n```")]
        text, taken, dropped = bd.fill(parts, self.prompt_budget)
        self.context = bd.ContextReport(max_model_len=self.max_model_len,
                                        reply_reserve=bd.reply_reserve(self.max_model_len),
                                        prompt_budget=self.prompt_budget, parts=taken, dropped=dropped)
        return text


class PerfDiagnoserLoop(DiagnoserLoop):
    prompt = "perf_diagnoser"


# ------------------------------------------------------------------------------------------ writers


class ModelWriter:
    """A model behind the OpenAI-compatible client (a vLLM URL, or a scripted transcript).

    `starts_from_draft`: stage B drafts kernel.rs deterministically first and the model fills the draft's holes
    (a complete draft needs no model on a first attempt). A scripted transcript recorded without a draft says
    `"start": "empty"` and replays as recorded."""

    def __init__(self, client: ModelClient, name: str, *, starts_from_draft: bool = True):
        self.client = client
        self.name = name
        self.starts_from_draft = starts_from_draft
        self._max_model_len: int | None = None

    def max_model_len(self) -> int:
        """The server's context length (GET /v1/models), asked once; the default when it does not say."""
        if self._max_model_len is None:
            info = self.client.probe()
            self._max_model_len = info.max_model_len or bd.DEFAULT_CONTEXT
        return self._max_model_len

    def _details(self, r: LoopResult, loop: AgentLoop) -> dict:
        d: dict = {"writer": self.name, "prompt": r.prompt, "model_requests": r.requests, "turns": r.turns,
                   "tool_calls": r.tool_calls, "stop": r.stop}
        if loop.context is not None:
            d["context"] = loop.context.model_dump(mode="json")
        return d

    def write_kernel(self, ctx: Any, task: KernelTask) -> WriteOutcome:
        if (self.starts_from_draft and task.draft is not None and not find_holes(task.draft)
                and not task.feedback and not task.feedback_items and not task.hints):
            return WriteOutcome(wrote=task.kernel_path.is_file(),
                                details={"writer": self.name, "model_skipped": "the draft is complete"})
        loop = KernelWriterLoop(self.client, ctx.cancel, ctx.limits.model, max_model_len=self.max_model_len())
        r = loop.run(task)
        details = self._details(r, loop)
        if r.verdict is not None:
            details.update(model_verdict=r.verdict.verdict, model_summary=r.verdict.summary)
        return WriteOutcome(wrote=task.kernel_path.is_file(), fault=r.fault, tokens=r.tokens, model_id=r.model_id,
                            details=details, transcript=r.transcript)

    def diagnose(self, ctx: Any, task: DiagnosisTask) -> DiagnoseOutcome:
        cls = PerfDiagnoserLoop if task.kind == "performance" else DiagnoserLoop
        loop = cls(self.client, ctx.cancel, ctx.limits.model, max_model_len=self.max_model_len())
        r = loop.run(task)
        return DiagnoseOutcome(diagnosis=r.verdict, fault=r.fault, tokens=r.tokens, model_id=r.model_id,
                               details=self._details(r, loop), transcript=r.transcript)


class DraftWriter:
    """`--model none`: the deterministic draft translator, and deterministic diagnoses (no model anywhere)."""

    name = "none"

    def write_kernel(self, ctx: Any, task: KernelTask) -> WriteOutcome:
        from tileport.draft import draft_port
        d = draft_port(task.analysis, kernel=ctx.kernel)
        d.write(task.kernel_path.parent)
        holes = [str(h) for h in (d.holes or [])]
        details: dict = {"writer": "none (draft)", "holes": holes[:20]}
        if task.hints and task.kernel_path.is_file():
            from tileport.draft.hints import apply_hints

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
        return ModelWriter(model, spec, starts_from_draft=transcript.get("start", "empty") == "draft")
    if spec.startswith(("http://", "https://")):
        endpoint = config.model.model_copy(update={"base_url": spec.rstrip("/")})
        return ModelWriter(ModelClient.from_endpoint(endpoint), spec)
    raise UserError(f"--model {spec!r}: use a URL (http://host:port/v1), scripted:TRANSCRIPT or none")
