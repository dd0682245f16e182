"""Stage B's IR self-check: every compiled port variant x target against the reference instance it names.

    build = build_crate(layout, opts)
    report = self_check(build, load_analysis("out/silu_and_mul"), layout.spec)
    report.verdict          # PASS | PASS_WITH_NOTES | FAIL_FIXABLE (the IR diff's words, over all pairs)

Pairing is explicit: each spec variant carries `reference: {kernel, constants, dtype[, params]}` (written by
`tileport build-rust --init-spec`); the job's target picks the reference build. Nothing is paired by guessing:

- a port variant without a `reference`, or naming an instance / target the analysis does not have, is an
  **unmatched** pair with the reason; it makes the self-check FAIL_FIXABLE (a variant that cannot be checked has
  not passed the gate: the fix is in the spec or the analysis);
- a job that did not compile is a FAIL_FIXABLE pair (no IR to compare);
- a reference instance (for a target the port builds) that no port variant names is listed as **uncovered**;
  it does not fail the check (a port may support fewer dtypes) but makes the verdict at least PASS_WITH_NOTES.

The verdict words: per pair and overall, the stage C words of `tileport ir-diff` (PASS / PASS_WITH_NOTES /
FAIL_FIXABLE). The stage record is stage B's, as the workflow puts the self-check inside "write kernel": COMPILED
when the build succeeded and the self-check is PASS or PASS_WITH_NOTES, FAIL_FIXABLE (owner: kernel) when it is
FAIL_FIXABLE; a failed build keeps the build's own verdict (FAIL_COMPILE / BLOCKED).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from tileport.errors import UserError
from tileport.records.exits import EXIT_FAILED, EXIT_OK
from tileport.analysis.schema import Analysis
from tileport.validators.rust.build import RustBuildResult
from tileport.validators.rust.reference import analysis_path, find_build, find_instance
from tileport.validators.rust.spec import DumpSpec, ReferenceKey
from tileport.validators.tileir.diff import Finding, FindingGroup, Severity, Verdict, diff_modules
from tileport.validators.tileir.report import load_module

UNMATCHED = "UNMATCHED"
NOT_COMPILED = "NOT_COMPILED"


class PairResult(BaseModel):
    entry: str
    variant: str
    target: str
    reference: str | None = None  # "kernel[CONST=v,...]/dtype"
    verdict: str  # PASS | PASS_WITH_NOTES | FAIL_FIXABLE | UNMATCHED | NOT_COMPILED
    reason: str = ""  # why unmatched / not compiled
    ref_text: str | None = None
    port_text: str | None = None
    groups: list[FindingGroup] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)  # error / warning / note

    @property
    def findings(self) -> list[Finding]:
        return [f for g in self.groups for f in g.findings]

    @property
    def failed(self) -> bool:
        return self.verdict not in (Verdict.PASS.value, Verdict.PASS_WITH_NOTES.value)

    def categories(self, severity: Severity | None = None) -> set[str]:
        return {f.category for f in self.findings if severity is None or f.severity == severity}

    def checks(self, severity: Severity | None = None) -> set[str]:
        return {f.check for f in self.findings if severity is None or f.severity == severity}


class SelfCheckReport(BaseModel):
    analysis: str
    op: str
    crate: str
    verdict: Verdict
    pairs: list[PairResult] = Field(default_factory=list)
    uncovered: list[str] = Field(default_factory=list)  # reference instances x targets no port variant names
    build_ok: bool = True

    @property
    def unmatched(self) -> list[PairResult]:
        return [p for p in self.pairs if p.verdict == UNMATCHED]

    @property
    def exit_code(self) -> int:
        return EXIT_FAILED if self.verdict == Verdict.FAIL_FIXABLE else EXIT_OK

    def pair(self, entry: str, variant: str, target: str | None = None) -> PairResult:
        for p in self.pairs:
            if p.entry == entry and p.variant == variant and (target is None or p.target == target):
                return p
        raise KeyError(f"{entry}/{variant}/{target or '*'}")


def _counts(groups: list[FindingGroup]) -> dict[str, int]:
    counts = {s.value: 0 for s in Severity}
    for g in groups:
        for f in g.findings:
            counts[f.severity.value] += 1
    return counts


def _resolve(base: Path, rel: str) -> Path:
    p = Path(rel)
    return p if p.is_absolute() else base / p


def self_check(build: RustBuildResult, analysis: Analysis, spec: DumpSpec, *,
               analysis_file: str | Path | None = None, tileirdisasm: str | Path | None = None) -> SelfCheckReport:
    """Pair every job of `build` with its reference instance and diff the two tileirdisasm texts."""
    afile = analysis_path(analysis_file) if analysis_file else Path(analysis.out_dir) / "analysis.json"
    base = afile.parent if afile.is_file() else Path(analysis.out_dir)
    refs: dict[tuple[str, str], ReferenceKey | None] = {
        (e.name, v.name): v.reference for e in spec.entries for v in e.variants}
    jobs = {(j.entry, j.variant, j.target): j for j in build.jobs}
    pairs: list[PairResult] = []
    covered: set[tuple[str, str, str, str]] = set()  # kernel, variant name, dtype, target
    for entry, variant, target in ((e.name, v.name, t) for e, v, t in spec.jobs()):
        pr = PairResult(entry=entry, variant=variant, target=target, verdict=UNMATCHED)
        pairs.append(pr)
        key = refs.get((entry, variant))
        if key is None:
            pr.reason = ("the spec names no reference for this variant (add \"reference\": {\"kernel\", "
                         "\"constants\", \"dtype\"}; `tileport build-rust --init-spec` writes them)")
            continue
        pr.reference = key.label()
        found = find_instance(analysis, key)
        if isinstance(found, str):
            pr.reason = found
            continue
        rv, inst = found
        tb = find_build(inst, target)
        if tb is None:
            have = ", ".join(b.target for b in inst.builds) or "none"
            pr.reason = f"the reference was not built for {target} (it has: {have})"
            continue
        covered.add((rv.kernel, rv.name, inst.dtype, target))
        ref_path = _resolve(base, tb.text.path if tb.text else tb.bytecode.path)
        pr.ref_text = str(ref_path)
        job = jobs.get((entry, variant, target))
        if job is None or not job.ok or not (job.tileir_text or job.bytecode):
            pr.verdict, pr.reason = NOT_COMPILED, "the port job produced no Tile IR (see the build diagnostics)"
            continue
        port_path = Path(job.tileir_text or job.bytecode or "")
        pr.port_text = str(port_path)
        try:
            rep = diff_modules(load_module(ref_path, tileirdisasm), load_module(port_path, tileirdisasm),
                               target=target)
        except UserError as e:
            pr.verdict, pr.reason = UNMATCHED, f"cannot read the Tile IR: {e}"
            continue
        pr.groups = rep.groups
        pr.verdict = rep.verdict.value
        pr.counts = _counts(rep.groups)
    port_targets = set(spec.targets)
    uncovered = [f"{rv.kernel}[{rv.name}]/{inst.dtype}/{b.target}" for rv in analysis.variants
                 for inst in rv.instances for b in inst.builds
                 if b.target in port_targets and (rv.kernel, rv.name, inst.dtype, b.target) not in covered]
    if any(p.failed for p in pairs) or not pairs:
        verdict = Verdict.FAIL_FIXABLE
    elif any(p.verdict == Verdict.PASS_WITH_NOTES.value for p in pairs) or uncovered:
        verdict = Verdict.PASS_WITH_NOTES
    else:
        verdict = Verdict.PASS
    return SelfCheckReport(analysis=str(afile), op=analysis.op, crate=build.crate, verdict=verdict, pairs=pairs,
                           uncovered=uncovered, build_ok=build.ok)


def no_build_report(build: RustBuildResult, analysis: Analysis, analysis_file: str | Path | None) -> SelfCheckReport:
    """The report when the build failed before any IR existed: nothing compared, the build's verdict stands."""
    afile = analysis_path(analysis_file) if analysis_file else Path(analysis.out_dir) / "analysis.json"
    return SelfCheckReport(analysis=str(afile), op=analysis.op, crate=build.crate, verdict=Verdict.FAIL_FIXABLE,
                           build_ok=False)


# ----------------------------------------------------------------------------------------------------- rendering

_MARK = {Severity.ERROR: "ERROR", Severity.WARNING: "WARN ", Severity.NOTE: "note "}


def format_self_check(rep: SelfCheckReport, notes: bool = True, stage_verdict: str | None = None) -> str:
    """The report for people; `stage_verdict` (stage B's word, decided by tileport.pipeline.stages) ends it."""
    out = [f"IR self-check against {rep.analysis} ({rep.op})"]
    if not rep.build_ok:
        out.append("  not run: the build failed (see the diagnostics above)")
    for p in rep.pairs:
        c = p.counts
        tally = f"  ({c.get('error', 0)} error(s), {c.get('warning', 0)} warning(s), {c.get('note', 0)} note(s))" \
            if c else ""
        ref = p.reference or "-"
        out.append(f"{p.verdict:<15} {p.entry}/{p.variant}/{p.target}  <->  {ref}{tally}")
        if p.reason:
            out.append(f"      {p.reason}")
    # findings grouped by category over all pairs; identical messages collapsed with the pairs they occur in
    grouped: dict[tuple[str, str], dict[tuple[str, str, str], list[str]]] = {}
    descr: dict[str, str] = {}
    for p in rep.pairs:
        for g in p.groups:
            descr[g.category] = g.description
            for f in g.findings:
                if f.severity == Severity.NOTE and not notes:
                    continue
                slot = grouped.setdefault((g.category, g.description), {})
                slot.setdefault((f.severity.value, f.check, f.message), []).append(f"{p.entry}/{p.variant}")
    order = {s.value: i for i, s in enumerate((Severity.ERROR, Severity.WARNING, Severity.NOTE))}
    for (cat, desc), items in grouped.items():
        worst = min((sev for sev, _, _ in items), key=lambda s: order[s])
        out.append("")
        out.append(f"{cat} ({worst}) - {desc}")
        for (sev, check, msg), where in sorted(items.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
            uniq = sorted(set(where))
            at = uniq[0] if len(uniq) == 1 else f"{len(uniq)} pairs"
            out.append(f"  {_MARK[Severity(sev)]} {check} [{at}]: {msg}")
    if rep.uncovered:
        out.append("")
        out.append(f"reference instances no port variant checks ({len(rep.uncovered)}):")
        out.extend(f"  {u}" for u in rep.uncovered)
    failed = sum(p.failed for p in rep.pairs)
    out.append("")
    out.append(f"self-check {rep.verdict.value}: {len(rep.pairs)} pair(s), {failed} failed, "
               f"{len(rep.unmatched)} unmatched, {len(rep.uncovered)} reference instance(s) uncovered"
               + (f" -> stage B {stage_verdict}" if stage_verdict else ""))
    return "\n".join(out)
