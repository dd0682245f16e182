"""Stage B, Write kernel: a writer produces `kernel.rs`; the build and the IR self-check judge it.

Verdicts (the router reads only these fields):
- COMPILED: the crate built, every job produced Tile IR, and the IR self-check is PASS / PASS_WITH_NOTES;
- FAIL_COMPILE (owner kernel): rustc, the cutile JIT, tileiras or the source policy rejected kernel.rs;
- FAIL_FIXABLE (owner kernel): it compiles but the IR self-check failed (routed to Diagnose), or no writer
  produced a kernel;
- BLOCKED (env): the environment cannot build (crates missing, cargo failing outside rustc, time limit).

`gates` is the same judge (`judge`) without a writer: a person's edit of kernel.rs, recorded as a B run whose
details name its `source`.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from tileport.records import (ArtifactRecord, DiagnosisDetails, FailClass, FeedbackItem, Stage, StageResult,
                              WriteKernelDetails, utcnow)
from tileport.records.rounds import HUMAN_EDIT  # the `source` of a B run judging a person's edit (`gates`)
from tileport.validators.rust.build import RustBuildResult
from tileport.validators.rust.selfcheck import SelfCheckReport
from tileport.validators.tileir.diff import Severity, Verdict

STAGE = Stage.WRITE_KERNEL
ENV_CODES = frozenset({"TP-DEPS-MISSING", "TP-CARGO", "TP-TIMEOUT"})


def is_cargo_build(cmd) -> bool:
    """A recorded `cargo build` (possibly wrapped by the sandbox: `/bin/sh -c ... cargo build ...`)."""
    names = [Path(a).name for a in cmd.argv]
    return "cargo" in names and "build" in cmd.argv[names.index("cargo") + 1:]


def cargo_seconds(commands) -> float:
    return sum(c.seconds for c in commands if is_cargo_build(c))


def _build_verdict(build: RustBuildResult) -> tuple[str, FailClass | None]:
    if build.ok:
        return "COMPILED", None
    if any(d.code in ENV_CODES for d in build.errors):
        return "BLOCKED", FailClass.ENV
    return "FAIL_COMPILE", FailClass.KERNEL


def result_from_build(build: RustBuildResult, report: SelfCheckReport | None = None, *, attempt: int = 1,
                      started_at: datetime | None = None) -> StageResult:
    """The B record of one build (and its IR self-check when there is a reference)."""
    verdict, fail = _build_verdict(build)
    errors = build.errors
    details = WriteKernelDetails(build_stage=build.stage, errors=len(errors),
                                 warnings=sum(1 for d in build.diagnostics if d.level == "warning"),
                                 error_codes=sorted({d.code for d in errors if d.code})[:20], jobs=len(build.jobs))
    first = errors[0].short() if errors else ""
    summary = f"{len(build.jobs)} job(s), {len(errors)} error(s) at {build.stage}" + (f"; {first}" if first else "")
    artifacts: list[ArtifactRecord] = list(build.artifacts)
    if verdict == "COMPILED" and report is not None:
        bad = [p for p in report.pairs if p.failed]
        details = details.updated(self_check=report.verdict.value, pairs=len(report.pairs), pairs_failed=len(bad),
                       uncovered=len(report.uncovered),
                       # reference/port Tile IR text pairs: the dashboard's IR diff view reads these
                       ir_pairs=[{"label": f"{p.entry}/{p.variant}/{p.target}", "reference": p.ref_text,
                                  "port": p.port_text, "verdict": p.verdict}
                                 for p in report.pairs if p.ref_text and p.port_text][:64],
                       categories=sorted({f.category for p in bad for f in p.findings
                                          if f.severity == Severity.ERROR}))
        if report.verdict == Verdict.FAIL_FIXABLE:
            verdict, fail = "FAIL_FIXABLE", FailClass.KERNEL
            why = ""
            if bad:
                p = bad[0]
                errs = [f for f in p.findings if f.severity == Severity.ERROR]
                why = f"; first: {p.entry}/{p.variant}/{p.target} " + (
                    f"{errs[0].check}: {errs[0].message}" if errs else f"{p.verdict}: {p.reason}")
            summary = f"IR self-check FAIL_FIXABLE: {len(bad)} of {len(report.pairs)} pair(s) failed{why}"
        else:
            summary = f"compiled; IR self-check {report.verdict.value} on {len(report.pairs)} pair(s)"
            if report.uncovered:
                summary += f"; {len(report.uncovered)} reference instance(s) not covered"
        ap = Path(report.analysis)
        if ap.is_file():
            artifacts.append(ArtifactRecord.of("analysis", ap))
    return StageResult(stage=STAGE, attempt=attempt, verdict=verdict, fail_class=fail, commands=list(build.commands),
                       artifacts=artifacts, started_at=started_at or utcnow(), finished_at=utcnow(),
                       details=details.dump(), summary=summary)


def result_from_blocked(error: Exception, *, attempt: int = 1, started_at: datetime | None = None) -> StageResult:
    """A build that could not start: a toolchain part is missing (stop, never guess)."""
    return StageResult(stage=STAGE, attempt=attempt, verdict="BLOCKED", fail_class=FailClass.ENV,
                       started_at=started_at or utcnow(), finished_at=utcnow(),
                       details=WriteKernelDetails(error=str(error)).dump(),
                       summary=str(error))


# ------------------------------------------------------------------------------------------------- the stage


def _reference_ir(analysis, limit: int = 3) -> str:
    root = Path(analysis.out_dir)
    texts = []
    for v in analysis.variants:
        for inst in v.instances:
            for b in inst.builds[:1]:
                if b.text is not None and (root / b.text.path).is_file():
                    texts.append(f"// {v.kernel} [{v.name}] {inst.dtype} {b.target}\n"
                                 + (root / b.text.path).read_text(encoding="utf-8"))
            if len(texts) >= limit:
                return "\n".join(texts)
    return "\n".join(texts)


def _analysis_summary(analysis) -> str:
    lines = [f"kernels: {', '.join(k.name for k in analysis.kernels)}; targets {', '.join(analysis.targets)}"]
    for v in analysis.variants:
        lines.append(f"- {v.kernel} [{v.name or 'no constants'}] dtypes "
                     f"{', '.join(i.dtype for i in v.instances)}")
    return "\n".join(lines)


def _feedback(ctx) -> tuple[str, list[FeedbackItem]]:
    """What the writer must fix: the diagnoser's next edit, else the previous B attempt's diagnostics and IR
    findings (typed items). Nothing on a first attempt: stage A's summary is not a thing to fix."""
    from tileport.agents.feedback import items_from_record

    prev = ctx.latest()
    if prev is None or prev.stage not in ("B", "C", "F"):
        return "", []
    d = prev.details
    if isinstance(d, DiagnosisDetails) and d.next_edit:
        item = FeedbackItem(kind="diagnoser", where=f"stage {prev.stage}", message=d.next_edit,
                            source=d.evidence or "")
        before = ctx.last("B")
        return item.render(), [item] + (items_from_record(before.details) if before else [])
    if isinstance(d, WriteKernelDetails):
        return (d.feedback or prev.summary or ""), items_from_record(d)
    return prev.summary or "", []


def _hints(ctx) -> list[dict]:
    """Stage F's structured hints, when F is what sent the conversion back here."""
    prev = ctx.latest()
    if prev is None or prev.stage != "F" or not isinstance(prev.details, DiagnosisDetails):
        return []
    return list(prev.details.hints)


class _Builder:
    """Build + IR self-check of whatever kernel.rs/spec.json hold now; the tool the writer calls and the judge."""

    def __init__(self, ctx, analysis):
        self.ctx, self.analysis = ctx, analysis
        self.last = None
        self.last_key: str | None = None
        self.commands: list = []  # every command of every build this attempt ran (the writer's and the judge's)

    def _key(self) -> str:
        import hashlib

        h = hashlib.sha256()
        for f in (self.ctx.paths.kernel_rs, self.ctx.paths.spec_json, self.ctx.paths.host_rs):
            h.update(f.read_bytes() if f.is_file() else b"\0")
        return h.hexdigest()

    def __call__(self):
        """Build the current sources; the same sources as the last call give the last result (no rebuild)."""
        key = self._key()
        if self.last is not None and key == self.last_key:
            import dataclasses

            return dataclasses.replace(self.last, reused=True)
        self.last_key = key
        return self._build()

    def _build(self):
        from tileport.agents.writers import BuildCheck
        from tileport.errors import EnvironmentBlocked, UserError
        from tileport.validators.rust import diagnostics as dg
        from tileport.validators.rust.build import BuildOptions
        from tileport.validators.rust.crate import write_crate
        from tileport.validators.rust.policy import check_port_dir, read_plain
        from tileport.validators.rust.selfcheck import format_self_check
        from tileport.validators.rust.spec import load_spec

        p = self.ctx.paths
        refused = check_port_dir(p.port) if p.port.is_dir() else []
        if refused:  # links and special files are never followed or opened
            self.last = BuildCheck(False, "FAILED at policy:\n" + dg.render_text(refused))
            return self.last
        try:
            spec = load_spec(p.spec_json)
            host = read_plain(p.host_rs).decode("utf-8") if spec.host and p.host_rs.is_file() else None
            if spec.host and host is None:
                spec = spec.model_copy(update={"host": False})
            layout = write_crate(p.crate, spec, read_plain(p.kernel_rs).decode("utf-8"), host)
        except (UserError, OSError, UnicodeDecodeError) as e:
            self.last = BuildCheck(False, f"FAILED: {e}")
            return self.last
        from tileport.exec.settings import cpu_budget

        # the cargo semaphore is held around `cargo build` only (the IR dump and tileiras of one conversion run
        # beside another's cargo); the CPUs are split between the builds it lets run at once
        slots = getattr(self.ctx.limits.cargo, "_initial_value", 1) or 1
        opts = BuildOptions.of(self.ctx.config, toolchain=self.ctx.toolchain,
                               cargo_slot=self.ctx.limits.cargo, cargo_jobs=max(1, cpu_budget() // slots),
                               log=lambda msg: self.ctx.log(f"#{self.ctx.conversion_id} {self.ctx.op} B: {msg}"))
        try:
            build, report = build_and_check(layout, opts, self.analysis)
            self.commands.extend(build.commands)
        except EnvironmentBlocked as e:
            self.last = BuildCheck(False, f"BLOCKED: {e}", blocked=str(e))
            return self.last
        text = dg.render_text(build.diagnostics)
        errors = len(build.errors)
        status = "OK:" if build.ok else f"FAILED at {build.stage}:"
        text = (text + "\n\n" if text else "") + f"{status} {errors} error(s)"
        if build.ok:
            text += "\n\n" + format_self_check(report, notes=False)
        self.last = BuildCheck(build.ok, text, build, report)
        return self.last


def build_and_check(layout, opts, analysis, analysis_file: str | Path | None = None):
    """Stage B's judge, wherever it runs (an attempt, B's gates on a person's edit, `tileport build-rust DIR`):
    (the build of the crate, the IR self-check of every variant against the reference analysis; None without an
    analysis). Raises EnvironmentBlocked when a tool the build needs is missing."""
    from tileport.validators.rust.build import build_crate
    from tileport.validators.rust.selfcheck import no_build_report, self_check

    build = build_crate(layout, opts)
    if analysis is None:
        return build, None
    tileirdisasm = opts.toolchain.tileirdisasm if opts.toolchain else None
    report = (self_check(build, analysis, layout.spec, analysis_file=analysis_file, tileirdisasm=tileirdisasm)
              if build.jobs else no_build_report(build, analysis, analysis_file))
    return build, report


def run(ctx) -> StageResult:
    """One B attempt: the writer writes (its own build loop inside), then the build and self-check judge."""
    from tileport.agents.transcripts import keep_transcript
    from tileport.agents.writers import KernelTask
    from tileport.errors import UserError
    from tileport.validators.rust.reference import derive_spec, load_analysis

    started = utcnow()
    p = ctx.paths
    try:
        analysis = load_analysis(p.reference)
    except UserError as e:
        return _no_reference(ctx, e, started)
    p.port.mkdir(parents=True, exist_ok=True)
    draft = _draft(ctx, analysis) if getattr(ctx.writer, "starts_from_draft", False) else None
    if not p.spec_json.is_file():
        spec = derive_spec(analysis)
        p.spec_json.write_text(spec.to_json(), encoding="utf-8")
    builder = _Builder(ctx, analysis)
    feedback, items = _feedback(ctx)
    task = KernelTask(op=ctx.op, op_source=ctx.source.read_text(encoding="utf-8"),
                      kernels=sorted({v.kernel for v in analysis.variants}),
                      analysis_summary=_analysis_summary(analysis), reference_ir=_reference_ir(analysis),
                      kernel_path=p.kernel_rs, spec_path=p.spec_json, feedback=feedback, build=builder,
                      analysis=analysis, hints=_hints(ctx), draft=draft, feedback_items=items,
                      attempt=ctx.attempt)
    out = ctx.writer.write_kernel(ctx, task)
    base = WriteKernelDetails(**out.details)
    transcript = keep_transcript(p, f"B-{ctx.attempt}", out.transcript)
    if draft is not None:
        from tileport.agents.holes import find_holes

        base = base.updated(draft_holes=[h.id for h in find_holes(draft)])
    common = dict(stage=STAGE, attempt=ctx.attempt, started_at=started, tokens=out.tokens, model_id=out.model_id)
    if out.no_writer:
        return StageResult(**common, verdict="FAIL_FIXABLE", fail_class=FailClass.KERNEL, finished_at=utcnow(),
                           details=base.updated(no_writer=True).dump(), summary=out.no_writer)
    if out.fault is not None and not out.fault.is_model_fault:
        return StageResult(**common, verdict="BLOCKED", fail_class=FailClass.ENV, finished_at=utcnow(),
                           details=base.updated(fault=out.fault.kind.value).dump(), artifacts=transcript,
                           summary=f"model endpoint: {out.fault.message}")
    if not p.kernel_rs.is_file():
        why = out.fault.message if out.fault is not None else "the writer wrote no kernel.rs"
        return StageResult(**common, verdict="FAIL_FIXABLE", fail_class=FailClass.KERNEL, finished_at=utcnow(),
                           details=base.dump(), artifacts=transcript, summary=why)
    if out.fault is not None:
        base = base.updated(fault=out.fault.kind.value)
    return judge(ctx, builder, analysis, base, common, transcript)


def judge(ctx, builder: _Builder, analysis, base: WriteKernelDetails, common: dict, transcript: list,
          runs_dir: Path | None = None) -> StageResult:
    """The judge of a B attempt: the build and IR self-check of what kernel.rs/spec.json hold now (never a
    writer's own verdict), its diagnostics file, artifacts and details. `base`: details the attempt carries
    already; `common`: the StageResult fields it fixed (stage, attempt, started_at, tokens, model_id);
    `runs_dir`: where the diagnostics file goes (default: the port's committed runs dir)."""
    p = ctx.paths
    check = builder()
    if check.blocked:
        return StageResult(**common, verdict="BLOCKED", fail_class=FailClass.ENV, finished_at=utcnow(),
                           details=base.dump(), artifacts=transcript, summary=check.blocked)
    if check.build is None:
        return StageResult(**common, verdict="FAIL_COMPILE", fail_class=FailClass.KERNEL, finished_at=utcnow(),
                           details=base.updated(feedback=check.text, feedback_items=_items(check.items())).dump(),
                           artifacts=transcript, summary=check.status() or check.text.strip()[:300])
    r = result_from_build(check.build, check.report, attempt=ctx.attempt, started_at=common["started_at"])
    diag_file = (runs_dir or p.runs) / f"B-{ctx.attempt}.diagnostics.txt"
    diag_file.parent.mkdir(parents=True, exist_ok=True)
    diag_file.write_text(check.text + "\n", encoding="utf-8")
    details = base.updated(**r.details, feedback=check.text[-6000:])
    from tileport.analysis.triton.pairing import ir_gaps

    if gaps := ir_gaps(analysis):  # a Triton-referenced variant: an explicit gap, never a silent pass
        details = details.updated(ir_gaps=gaps)
        r = r.model_copy(update={"summary": f"{r.summary}; IR gate gap for {len(gaps)} variant(s): {gaps[0]}"})
    arts = list(r.artifacts) + [ArtifactRecord.of("diagnostics", diag_file)]
    for kind, f in (("kernel", p.kernel_rs), ("spec", p.spec_json)):
        if f.is_file():
            arts.append(ArtifactRecord.of(kind, f))
    details = details.updated(builds=sum(1 for c in builder.commands if is_cargo_build(c)),
                              feedback_items=_items(check.items()) if not check.ok or (
                                  check.report is not None and r.verdict != "COMPILED") else [])
    return r.model_copy(update={"tokens": common.get("tokens", r.tokens), "model_id": common.get("model_id"),
                                "details": details.dump(),
                                "artifacts": arts + transcript, "commands": list(builder.commands)})


def _items(items: list[FeedbackItem]) -> list[dict]:
    """Feedback items as B's details store them (every field, so the next attempt renders them whole)."""
    return [it.model_dump(mode="json") for it in items]


def judge_port(ctx, source: str = HUMAN_EDIT, runs_dir: Path | None = None) -> StageResult:
    """Stage B's gates alone on the port as it is now (a person's edit, no writer): the same judge as an
    attempt's (`judge`), its details saying who wrote the kernel (`source`)."""
    from tileport.errors import UserError
    from tileport.validators.rust.reference import load_analysis

    started = utcnow()
    try:
        analysis = load_analysis(ctx.paths.reference)
    except UserError as e:
        return _no_reference(ctx, e, started, source)
    common = dict(stage=STAGE, attempt=ctx.attempt, started_at=started)
    if not ctx.paths.kernel_rs.is_file():
        return StageResult(**common, verdict="FAIL_FIXABLE", fail_class=FailClass.KERNEL, finished_at=utcnow(),
                           details=WriteKernelDetails(source=source).dump(),
                           summary=f"no kernel.rs at {ctx.paths.kernel_rs}")
    return judge(ctx, _Builder(ctx, analysis), analysis, WriteKernelDetails(source=source), common, [], runs_dir)


def _no_reference(ctx, error: Exception, started, source: str | None = None) -> StageResult:
    return StageResult(stage=STAGE, attempt=ctx.attempt, verdict="FAIL_FIXABLE", fail_class=FailClass.KERNEL,
                       started_at=started, finished_at=utcnow(),
                       details=WriteKernelDetails(source=source).dump() if source else {},
                       summary=f"no reference analysis: {error}")


def _draft(ctx, analysis) -> str | None:
    """The deterministic draft this attempt starts from: drafted now when the port has no kernel.rs yet, else
    None (a later attempt keeps the kernel.rs the previous diagnostics point at)."""
    p = ctx.paths
    if p.kernel_rs.is_file():
        return None
    from tileport.draft import draft_port
    from tileport.errors import UserError

    try:
        d = draft_port(analysis, kernel=ctx.kernel)
    except UserError as e:
        ctx.log(f"no draft: {e}")
        return None
    d.write(p.port)
    return d.kernel_rs
