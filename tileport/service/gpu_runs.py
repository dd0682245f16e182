"""Stages D and E on a GPU elsewhere (`tileport gpu pack|run|ingest`, the dashboard's `g` / `i`): pack a port into a
pack directory, run a pack on this machine, and record the results.json a GPU host wrote for it. Callers print
or render the typed results (PackedPort, IngestedResults, GpuRun); every refusal is a one-line UserError. The faces
reach these operations only through `tileport.service`.

- pack builds the port's cdylib (cargo: minutes cold, seconds from the shared target cache) and writes a
  self-contained pack directory; packed for a conversion, the pack names its ID and head commit, and a
  `gate.packed` event records where it went (the dashboard offers that dir's results.json to ingest).
- ingest records the results only when they were made for the conversion's current head (the branch itself, not
  the store's last note of it): the D run with one row per case, and the E run with every sample when D passed,
  through the stages' own rules (`pipeline.stages.host_correctness` / `performance.result_from_report`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from tileport.config import Config
from tileport.errors import UserError
from tileport.exec.proc import ToolScope, tool_scope  # noqa: F401 - a pack's tools (cargo), killed as one (the dashboard)
from tileport.service.conversions import open_store
from tileport.store import Store

PACKED_EVENT = "gate.packed"
INGEST = "gate ingest"  # the `source` of the D and E runs `tileport gpu ingest` records


class BuildFailed(UserError):
    """The port's cdylib did not build: the message is one line, `errors` the compiler's (the CLI prints them)."""

    def __init__(self, errors: list[str]):
        super().__init__(f"the port's cdylib did not build ({len(errors)} error(s)); fix kernel.rs and pack again")
        self.errors = list(errors)


@dataclass(frozen=True)
class PackedPort:
    dir: Path
    op: str
    dtypes: list[str]
    shapes: list[dict]
    entries: int
    bytes: int
    conversion_id: int | None = None
    commit: str | None = None
    sources: str = ""  # what D runs: "N dtype(s) x M shape(s)" and/or "K pytest test source(s)"
    carried: str | None = None  # the op's project in the pack: files and sizes by part
    perf_configs: int = 0  # captured configurations E replays
    left_out: int = 0

    @property
    def results(self) -> Path:
        from tileport.validators.gpu.hostpack import RESULTS_FILE

        return self.dir / RESULTS_FILE

    def text(self) -> str:
        """The one line `tileport gpu pack` prints."""
        what = self.sources or f"{len(self.dtypes)} dtype(s) x {len(self.shapes)} shape(s)"
        extra = (f"; carries {self.carried}" if self.carried else "") + \
            (f"; E replays {self.perf_configs} captured configuration(s), {self.left_out} left out"
             if self.perf_configs or self.left_out else "")
        return (f"gate {self.dir}: {self.op}, {what}, {self.entries} entr(y/ies), {self.bytes / 1e6:.1f} MB{extra}; "
                f"run it with `tileport gpu run {self.dir}`")

    def next_steps(self) -> str:
        """What to run with the pack: on the GPU host, then back here."""
        return f"on a GPU host: `tileport gpu run {self.dir}`, then `tileport gpu ingest {self.results}`"


@dataclass(frozen=True)
class RecordedGpuRun:
    stage: str
    verdict: str
    run_id: int
    attempt: int
    summary: str = ""


@dataclass(frozen=True)
class IngestedResults:
    conversion_id: int
    commit: str
    path: Path
    runs: list[RecordedGpuRun] = field(default_factory=list)
    next_step: str = ""  # the router's judgement over every recorded run, the ingested ones included

    @property
    def run_ids(self) -> list[int]:
        return [r.run_id for r in self.runs]

    def verdicts(self) -> str:
        return ", ".join(f"{r.stage} {r.verdict}" for r in self.runs)

    def text(self) -> str:
        """The one line `tileport gpu ingest` prints."""
        return (f"conversion {self.conversion_id} @ {self.commit[:12]}: recorded stage run(s) "
                f"{', '.join(map(str, self.run_ids))} ({self.verdicts()})" + (f"; {self.next_step}" if self.next_step
                                                                              else ""))


def current_head(store: Store, conversion_id: int) -> str | None:
    """The commit a gate for this conversion is judged against: its branch's tip when it has a branch (a commit
    the store has not seen moves it), else the store's head."""
    conv = store.conversion(conversion_id)
    if not conv.get("branch"):
        return conv.get("head_commit")
    from tileport.worktrees.approval import branch_head, conversion_repo

    _, repo, branch = conversion_repo(store, conversion_id)
    return branch_head(repo, conversion_id, branch)


def same_port(store: Store, conversion_id: int, commit: str, head: str | None) -> bool:
    """The tree at `commit` is the tree at `head` but for stage records (the port's `.tileport/` evidence): stage D
    packs its gate on a machine without a GPU, then commits its BLOCKED run; any other change (the port, the op,
    its tests) makes the results stale."""
    conv = store.conversion(conversion_id)
    if not head or not conv.get("worktree") or not Path(conv["worktree"]).is_dir():
        return False
    from tileport.pipeline.context import EVIDENCE_DIR
    from tileport.worktrees.git import changed_between

    evidence = f"ports/{Path(conv['op_path']).stem}/{EVIDENCE_DIR}"
    changed = changed_between(conv["worktree"], commit, head, ".", ignore=evidence)
    return changed == []


def _pack(config: Config, target: str, *, store: Store | None = None, op_path: str | None = None,
         out: str | Path | None = None, commit: str | None = None, root: str | Path | None = None,
         log: Callable[[str], None] | None = None) -> PackedPort:
    """Build `target`'s cdylib and write its pack directory. target: a conversion ID (needs `store`) or a port dir /
    crate dir. Relative defaults (examples/<dir name>.py, gates/<op>) are under `root` (default: the working
    directory, as given). `log`: progress lines (a build takes minutes cold). Raises BuildFailed, UserError."""
    from tileport.validators.gpu import hostpack
    from tileport.validators.rust.build import BuildOptions, prepare_crate

    say = log or (lambda line: None)
    base = Path(root) if root is not None else Path()
    op_path_given = bool(op_path)
    conversion_id = None
    if target.isdigit():
        if store is None:
            raise UserError(f"conversion {target}: no store to read it from")
        conv = store.conversion(int(target))
        conversion_id = conv["id"]
        commit = commit or current_head(store, conversion_id)
        worktree = Path(conv.get("worktree") or base)
        if not op_path:
            op_path = conv["op_path"]
            if not Path(op_path).is_file() and (worktree / op_path).is_file():
                op_path = str(worktree / op_path)
        port_dir = worktree / "ports" / Path(conv["op_path"]).stem
        if not port_dir.is_dir():
            raise UserError(f"conversion {conversion_id}: no port at {port_dir}; pass the port dir instead of the ID")
        if conv.get("branch") and conv.get("worktree"):  # the gate is for a commit: build nothing no commit holds
            from tileport.worktrees.git import uncommitted

            changed = uncommitted(worktree, port_dir.relative_to(worktree))
            if changed:
                raise UserError(f"conversion {conversion_id}: {', '.join(changed[:3])} changed since {str(commit)[:10]}"
                                "; commit the edit first (the dashboard's e offers to) so the pack is for a commit")
        target = str(port_dir)
    analysis = Path(target) / ".tileport" / "reference" / "analysis.json"  # stage A's, committed with the port
    if analysis.is_file() and not op_path_given:
        op = hostpack.op_info(analysis)
    else:
        op_path = op_path or str(base / "examples" / f"{Path(target).resolve().name}.py")
        op = hostpack.op_info(op_path=op_path)
    layout = prepare_crate(target)
    dest = Path(out) if out else base / "gates" / op.op
    perf = {"warmup": config.perf.warmup, "repetitions": config.perf.repetitions, "flush_l2": config.perf.flush_l2}
    opts = BuildOptions.of(config, cubins=False, disasm=False, log=log)
    say(f"building the cdylib of {target} for {op.op} (cargo; minutes on a cold cache)")
    dest, built = hostpack.pack(layout, op, dest, commit=commit, conversion_id=conversion_id, perf=perf, build_opts=opts,
                            test_timeout_s=config.gpu.test_timeout_s)
    if not built.ok:
        raise BuildFailed(built.errors)
    size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())
    gj = hostpack.read_manifest(dest)
    packed = PackedPort(dest, op.op, list(op.dtypes), [dict(s) for s in op.shapes], len(built.bindings["entries"]),
                        size, conversion_id, commit, sources=op.sources,
                        carried=op.carry.size_report() if op.carry is not None else None,
                        perf_configs=len(gj.get("perf_configs") or []), left_out=len(gj.get("perf_left_out") or []))
    if store is not None and conversion_id is not None:
        store.log_event(PACKED_EVENT, conversion_id, dir=str(dest.resolve()), commit=commit)
    say(packed.text())
    return packed


def _ingest(store: Store, config: Config, path: str | Path, *, conversion_id: int | None = None) -> IngestedResults:
    """Record a results.json (or a pack dir holding one) for the conversion its pack names; refused (UserError, one
    line, nothing written) when it names none, another conversion than `conversion_id`, or a commit other than
    the conversion's current head."""
    from tileport.validators.gpu import hostpack

    path = Path(path)
    results = hostpack.load_results(path)
    if path.is_dir():
        path = path / hostpack.RESULTS_FILE
    meta = results.get("gate") or {}
    cid, commit = meta.get("conversion_id"), meta.get("commit")
    if cid is None:
        raise UserError(f"{path}: the port was packed without a conversion ID; pack it with `tileport gpu pack ID`")
    if conversion_id is not None and int(cid) != conversion_id:
        raise UserError(f"{path}: results are for conversion {cid}, not #{conversion_id}; ingest them there")
    head = current_head(store, int(cid))
    if not commit or (commit != head and not same_port(store, int(cid), commit, head)):
        raise UserError(f"{path}: results are for commit {str(commit)[:12] or '(none)'}, conversion {cid} is at "
                        f"{str(head)[:12] or '(none)'}; pack and run it again for the current commit")
    commit = head  # the port the results judged is the head's (only stage records were committed since)
    runs = _record(store, int(cid), commit, results, path, config)
    return IngestedResults(int(cid), commit, path, runs, next_step=_route_after(store, int(cid), config))


def _route_after(store: Store, cid: int, config: Config) -> str:
    """Judge the conversion by the router over every recorded run, the ingested ones included, and set its status
    as a run ending there would: done (E DONE), failed (a cap or a compiler bug), blocked (the environment), else
    stopped, resumable. Returns the line that says what happens next."""
    from tileport.pipeline import router
    from tileport.pipeline.runner import STOP_STATUS
    from tileport.store import queries

    _, action = router.replay_runs(router.caps_of(config), queries.stage_runs(store, cid))
    if action.stop:
        status = STOP_STATUS[action.stop]
        store.update_conversion(cid, status=status, error=None if status == "done" else action.reason)
        return f"conversion {cid} is {status} ({action.reason})"
    store.update_conversion(cid, status="stopped", error=None)
    return (f"next: stage {action.stage} ({action.reason}); `tileport run --resume {cid}` or s in the dashboard "
            "continues")


def _record(store: Store, cid: int, commit: str, results: dict, path: Path, config: Config) -> list[RecordedGpuRun]:
    """The D run with one row per case, and the E run with every sample when the results have perf rows: env ->
    BLOCKED, all pass -> ALL_PASS; E DONE only when every configuration was measured, the flush verified, the
    geomean within [perf] geomean_max and no configuration above [perf] config_max."""
    from tileport.pipeline.stages import host_correctness
    from tileport.records import ArtifactRecord, utcnow
    from tileport.store import record_run
    from tileport.validators.gpu.reports import correctness_from_results, perf_from_results

    corr = correctness_from_results(results)
    art = [ArtifactRecord.of("gate_results", path)]
    # attempts are numbered by record_run inside the run's own transaction (with its cases / perf rows)
    d = host_correctness.result_from_report(corr, attempt=1, started_at=utcnow())
    d = d.with_details(passed=sum(c.status == "PASS" for c in corr.cases), env_missing=corr.env_missing,
                       host_error=corr.host_error, source=INGEST).model_copy(update={"artifacts": art})
    rec = record_run(store, cid, d, commit=commit, cases=corr.cases)
    out = [RecordedGpuRun(d.stage.value, d.verdict, rec.run_id, rec.attempt, d.summary)]
    if d.verdict == "ALL_PASS" and (results.get("perf") or {}).get("rows"):  # E only after D passed
        from tileport.pipeline.stages.performance import result_from_report

        perf = perf_from_results(results)
        e = result_from_report(perf, attempt=1, started_at=utcnow(),
                               geomean_max=config.perf.geomean_max, config_max=config.perf.config_max)
        e = e.with_details(source=INGEST).model_copy(update={"artifacts": art})
        rec = record_run(store, cid, e, commit=commit, perf_rows=perf.rows)
        out.append(RecordedGpuRun(e.stage.value, e.verdict, rec.run_id, rec.attempt, e.summary))
    return out


def gpu_busy(store: Store, conversion_id: int) -> str | None:
    """Why no GPU pack can be made or ingested for this conversion now (a process drives one of its stages), or
    None. Also refuses, as one line, a conversion that is not in the store."""
    from tileport.pipeline.control import conversion_holder

    pid = conversion_holder(store.conversion(conversion_id))
    if pid is not None:
        return (f"conversion {conversion_id} is running a stage (process {pid}); stop it (x) or wait for it to "
                "end")
    return None


def likely_results(store: Store, conversion_id: int, roots: Iterable[str | Path] = ()) -> Path:
    """The results.json a person most likely means to ingest for this conversion: in the pack dir its newest pack
    wrote, else gates/<op>/results.json under each of `roots` and the conversion's repository; the first that
    exists, else the first of them."""
    from tileport.validators.gpu.hostpack import RESULTS_FILE

    conv = store.conversion(conversion_id)
    packed = [(ev["payload"] or {}).get("dir") for ev in store.events(conversion_id) if ev["kind"] == PACKED_EVENT]
    op = Path(conv["op_path"]).stem
    cands = [Path(d) / RESULTS_FILE for d in reversed(packed) if d]
    cands += [Path(r) / "gates" / op / RESULTS_FILE for r in [*roots, conv.get("repo")] if r]
    return next((c for c in cands if c.is_file()), cands[0] if cands else Path("gates") / op / RESULTS_FILE)


def pack_port(config: Config, target: str, *, repo: str | Path | None = None, store: str | Path | None = None,
              op_path: str | None = None, out: str | Path | None = None, commit: str | None = None,
              root: str | Path | None = None, log=None) -> PackedPort:
    """`tileport gpu pack TARGET`: a conversion ID (read from the repository's store) or a port / crate dir."""
    if not target.isdigit():
        return _pack(config, target, store=None, op_path=op_path, out=out, commit=commit, root=root,
                                 log=log)
    with open_store(config, repo, store) as s:
        return _pack(config, target, store=s, op_path=op_path, out=out, commit=commit, root=root, log=log)


def ingest_results(config: Config, path: str | Path, *, repo: str | Path | None = None,
                   store: str | Path | None = None, conversion_id: int | None = None) -> IngestedResults:
    """`tileport gpu ingest results.json`: record D (and E) for the conversion the pack names, only for its
    current head commit (else a one-line UserError and nothing recorded)."""
    with open_store(config, repo, store) as s:
        return _ingest(s, config, path, conversion_id=conversion_id)


@dataclass(frozen=True)
class GpuRun:
    """`tileport gpu run DIR` on this machine (a GPU host): the results, read as D's cases and E's rows."""

    results: dict[str, Any]
    correctness: Any  # validators.gpu.reports: the cases, env_missing, all_pass
    perf: Any  # validators.gpu.reports: the rows, geomean, band, complete
    results_file: Path


def run_here(config: Config, pack_dir: str | Path, *, timeout: float | None = None, perf: bool = True,
             project: str | None = None) -> GpuRun:
    """Run a pack on this machine (`tileport gpu run DIR`); nothing recorded (ingest does that). `project`:
    the op's project checked out here, run instead of the pack's copy."""
    from tileport.validators.gpu import hostpack
    from tileport.validators.gpu.reports import correctness_from_results, perf_from_results

    results, _cmd = hostpack.run_local(Path(pack_dir), timeout=timeout or config.gpu.timeout_s, perf=perf, project=project)
    return GpuRun(results, correctness_from_results(results), perf_from_results(results),
                   Path(pack_dir) / hostpack.RESULTS_FILE)
