"""The required merge gates as data, and their evaluation for one commit of a conversion branch.

A gate is the newest stored run of its stage. It is satisfied only when that run passed and was evaluated on the
branch HEAD itself, or on an ancestor of HEAD from which every later commit is a tileport stage commit of this
conversion by a stage that cannot change what the gate judged (its `survives` set), and none of those commits
touches a file the gate's own commit wrote. A person's edit of the port (`Tileport-Human` of this conversion,
files of one `ports/<op>/` outside its evidence) counts as a kernel writer's commit (B): it leaves A standing and
makes B, D and E stale until they run on it. Any other commit (a rebase, another conversion's commit, a hand commit
without the trailer, a writer re-writing the kernel) makes the gate stale. Recorded evidence files that still exist must keep their
sha256; a changed file is an error, not a pass.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from tileport.records import (DETAILS, GATE_PASSES, SELF_CHECK_PASSES, GateEvidence, GateRecord, GateStatus, Stage,
                              StageDetails, sha256_file)
from tileport.store import Store, queries
from tileport.worktrees import _gitcli as g


@dataclass(frozen=True)
class GateSpec:
    """One required gate: the stage whose newest run decides it and the verdicts that pass."""

    stage: Stage
    passes: tuple[str, ...]
    # a field of the stage's typed details (records.details) -> the values that pass
    detail_passes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # later stage commits (by their Tileport-Stage trailer) that do not change what this gate judged
    survives: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        fields = DETAILS[self.stage].model_fields
        for key, _ in self.detail_passes:
            if key not in fields:
                raise TypeError(f"gate {self.name}: {DETAILS[self.stage].__name__} has no field {key!r}")

    @property
    def name(self) -> str:
        return self.stage.value

    def detail_verdict(self, details: StageDetails, key: str) -> str | None:
        value = getattr(details, key, None) if isinstance(details, DETAILS[self.stage]) else None
        return value if isinstance(value, str) else None


# The one place that says what a merge needs. A (analysis of the Python op) is not changed by anything the writers
# commit; B (the kernel compiles and its IR matches the reference) survives the host writer, the diagnoses and the
# perf run; D (host + correctness) survives diagnoses and the perf run; E (device time) only diagnoses.
REQUIRED_GATES: tuple[GateSpec, ...] = (
    GateSpec(Stage.ANALYZE, GATE_PASSES[Stage.ANALYZE], survives=frozenset("BCDEF")),
    GateSpec(Stage.WRITE_KERNEL, GATE_PASSES[Stage.WRITE_KERNEL], (("self_check", SELF_CHECK_PASSES),),
             survives=frozenset("CDEF")),
    GateSpec(Stage.HOST_CORRECTNESS, GATE_PASSES[Stage.HOST_CORRECTNESS], survives=frozenset("CEF")),
    GateSpec(Stage.PERFORMANCE, GATE_PASSES[Stage.PERFORMANCE], survives=frozenset("CF")),
)
GATE_NAMES = tuple(s.name for s in REQUIRED_GATES)


def _stage_letter(value: str) -> str:
    value = value.strip()
    if value in {s.value for s in Stage}:
        return value
    try:
        return Stage[value.upper()].value
    except KeyError:
        return value


@dataclass(frozen=True)
class _Commit:
    sha: str
    parents: tuple[str, ...]
    stage: str | None  # Tileport-Stage letter (B for a person's edit of the port); None for any other commit
    conversion: str | None
    attempt: str | None
    files: frozenset[str]  # paths it changed
    human: bool = False  # a person's edit of the port, judged as stage B's commit


_LOG_FORMAT = ("%x1e%H%x1f%P%x1f%(trailers:key=Tileport-Stage,valueonly,separator=%x2C)%x1f"
               "%(trailers:key=Tileport-Conversion,valueonly,separator=%x2C)%x1f"
               "%(trailers:key=Tileport-Attempt,valueonly,separator=%x2C)%x1f"
               "%(trailers:key=Tileport-Human,valueonly,separator=%x2C)%x1f")
HUMAN_AS = "B"  # the stage a person's edit of the port stands in for: it rewrote the kernel


def _port_edit(files: frozenset[str]) -> bool:
    """Files of one port directory (`ports/<op>/...`), none of them its recorded evidence (`.tileport/`)."""
    dirs = {tuple(f.split("/")[:2]) for f in files}
    return len(dirs) == 1 and next(iter(dirs))[0] == "ports" and all(
        len(f.split("/")) > 2 and ".tileport" not in f.split("/") for f in files)


def _log(repo: str | Path, *revs: str, limit: int = 5000) -> list[_Commit] | None:
    """`git log` of revs as commits with their trailers and changed paths, oldest first (None if git refuses)."""
    res = g.git(repo, "log", "--reverse", "--topo-order", "--no-renames", "--name-only", f"--format={_LOG_FORMAT}",
                f"--max-count={limit}", *revs, check=False)
    if not res.ok:
        return None
    commits = []
    for rec in res.stdout.split("\x1e"):
        if not rec.strip():
            continue
        sha, parents, stage, conv, attempt, human, files = (rec.split("\x1f") + [""] * 6)[:7]
        changed = frozenset(f for f in files.split("\n") if f)
        letter = _stage_letter(stage) if stage.strip() and "," not in stage else None
        person = letter is None and bool(human.strip()) and _port_edit(changed)
        commits.append(_Commit(sha.strip(), tuple(parents.split()), HUMAN_AS if person else letter,
                               conv.strip() or None, attempt.strip() or None, changed, person))
    return commits


def _judge(conversion_id: int, spec: GateSpec, commit: str, attempt: int | None, own: _Commit | None,
           later: list[_Commit]) -> tuple[bool, str]:
    """The freshness rule over the commits after the judged one (see the module docstring)."""
    touched: set[str] = set()
    for c in later:
        if c.stage is None or c.conversion != str(conversion_id):
            return False, f"passed on {commit[:10]}; {c.sha[:10]} since is not a tileport stage commit of this conversion"
        if c.stage == spec.name and attempt is not None and c.attempt == str(attempt):
            continue  # the run's own record (its evidence commit), not a change
        if c.stage not in spec.survives:
            who = "a human edit of the port" if c.human else f"stage {c.stage}"
            return False, f"passed on {commit[:10]}; {who} committed {c.sha[:10]} since"
        touched |= c.files
    if own is not None and own.stage == spec.name and touched & own.files:
        return False, f"passed on {commit[:10]}; later commits changed its files ({', '.join(sorted(touched & own.files)[:3])})"
    return True, ""


def stands_for(repo: str | Path, conversion_id: int, spec: GateSpec, commit: str, head: str,
               attempt: int | None = None) -> tuple[bool, str]:
    """Whether a run evaluated on `commit` still judges `head`, and why not (asks git directly)."""
    if commit == head:
        return True, ""
    if g.rev(repo, commit) is None:
        return False, f"its commit {commit[:10]} is not in the repository"
    if not g.is_ancestor(repo, commit, head):
        return False, f"passed on {commit[:10]}, which HEAD {head[:10]} no longer contains"
    own = _log(repo, "-1", commit)
    return _judge(conversion_id, spec, commit, attempt, own[0] if own else None, _log(repo, f"{commit}..{head}") or [])


class BranchHistory:
    """The branch's commits since its base, read with one `git log`, so freshness of every gate is decided without
    a git call per gate. Only a linear history is read this way; anything else (a merge on the branch, a run on a
    commit outside it) falls back to `stands_for`, which asks git directly."""

    LIMIT = 5000

    def __init__(self, repo: str | Path, base: str, head: str):
        self.repo, self.head = repo, head
        self.commits = _log(repo, f"{base}..{head}", limit=self.LIMIT) or []
        self.index = {c.sha: i for i, c in enumerate(self.commits)}
        self.linear = bool(self.commits) and self.commits[-1].sha == head and len(self.commits) < self.LIMIT and all(
            c.parents == ((self.commits[i - 1].sha,) if i else (base,)) for i, c in enumerate(self.commits))

    def stands_for(self, conversion_id: int, spec: GateSpec, commit: str, attempt: int | None) -> tuple[bool, str]:
        if commit == self.head:
            return True, ""
        if not self.linear or commit not in self.index:
            return stands_for(self.repo, conversion_id, spec, commit, self.head, attempt)
        i = self.index[commit]
        return _judge(conversion_id, spec, commit, attempt, self.commits[i], self.commits[i + 1:])


def _evidence(store: Store, run_id: int) -> list[GateEvidence]:
    return [GateEvidence(kind=a.kind or "", path=a.path, sha256=a.sha256) for a in queries.artifacts(store, run_id)]


def _evidence_digest(run: queries.StageRunRow, evidence: list[GateEvidence]) -> str:
    """Over the details as stored (not as read back typed), so a digest recorded earlier stays comparable."""
    body = {"stage_run_id": run.id, "stage": run.stage, "verdict": run.verdict, "commit": run.commit,
            "details": run.raw_details, "evidence": sorted((e.path, e.sha256) for e in evidence)}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def _changed_evidence(evidence: list[GateEvidence], roots: list[Path]) -> str | None:
    """The first recorded evidence file that still exists but no longer has its recorded sha256."""
    for e in evidence:
        p = Path(e.path)
        for cand in ([p] if p.is_absolute() else [r / p for r in roots]):
            if cand.is_file():
                if sha256_file(cand) != e.sha256:
                    return e.path
                break
    return None


def evaluate_gates(store: Store, repo: str | Path, conversion_id: int, head: str,
                   evidence_roots: list[Path] | None = None, base: str | None = None) -> list[GateRecord]:
    """Every required gate's status for `head`, in REQUIRED_GATES order (`base`: where the branch started, so its
    history is read once)."""
    runs = queries.stage_runs(store, conversion_id)
    roots = evidence_roots or [Path(repo)]
    records = []
    history = BranchHistory(repo, base, head) if base else None
    for spec in REQUIRED_GATES:
        mine = [r for r in runs if r.stage == spec.name]
        base = dict(name=spec.name, required=list(spec.passes), head=head)
        if not mine:
            records.append(GateRecord(status=GateStatus.MISSING, reason=f"no {spec.name} run", **base))
            continue
        run = max(mine, key=lambda r: r.id)
        evidence = _evidence(store, run.id)
        rec = dict(
            verdict=run.verdict, stage_run_id=run.id, commit=run.commit, attempt=run.attempt,
            cap=run.cap, started_at=run.started_at, finished_at=run.finished_at,
            model_id=run.model_id, evidence=evidence, evidence_sha256=_evidence_digest(run, evidence),
            exit_codes=[c.exit_code for c in queries.commands(store, run.id)], **base,
        )
        status, reason = GateStatus.SATISFIED, ""
        if run.verdict not in spec.passes:
            status, reason = GateStatus.UNSATISFIED, f"newest {spec.name} run #{run.id} is {run.verdict}"
        for key, ok in spec.detail_passes:
            got = spec.detail_verdict(run.details, key)
            if status is GateStatus.SATISFIED and got not in ok:
                status, reason = GateStatus.UNSATISFIED, f"{spec.name} run #{run.id} {key} is {got or 'not recorded'}"
        if status is GateStatus.SATISFIED:
            if not run.commit:
                status, reason = GateStatus.STALE, f"{spec.name} run #{run.id} recorded no commit"
            else:
                fresh, why = (history.stands_for(conversion_id, spec, run.commit, run.attempt) if history
                              else stands_for(repo, conversion_id, spec, run.commit, head, run.attempt))
                if not fresh:
                    status, reason = GateStatus.STALE, why
        if status is GateStatus.SATISFIED:
            changed = _changed_evidence(evidence, roots)
            if changed:
                status, reason = GateStatus.ERROR, f"evidence {changed} changed since run #{run.id}"
        records.append(GateRecord(status=status, reason=reason, **rec))
    return records


def geomean_of(store: Store, gates: list[GateRecord]) -> float | None:
    """The perf gate's geomean (port / reference device time): its run's details, else its per-config rows."""
    e = next((gr for gr in gates if gr.name == Stage.PERFORMANCE.value and gr.stage_run_id), None)
    if e is None:
        return None
    return queries.perf_geomean(store, e.stage_run_id)
