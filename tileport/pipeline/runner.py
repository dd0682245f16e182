"""The runner: worktree -> stage -> commit -> store -> events, routed by the table, for one or many conversions.

Plain functions for the CLI and the dashboard: `start`, `drive` (run until the router stops), `resume`,
`stop`, `rerun_stage`, `run_many`. Each stage attempt is: log `stage.started` -> run the stage -> check every
command it ran stayed in the conversion's worktree (and the parent checkout did not move) -> route -> write the
result as JSON in the worktree -> commit with trailers -> record in the store (with where it was routed).
A kill -9 anywhere loses nothing finished and repeats nothing recorded: on resume, commits the store missed are
recorded from their JSON, a half-done attempt's files are discarded and the attempt is run again under the
same number, and the next step is recomputed from the recorded runs with the same pure router.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator, Mapping

from tileport.pipeline import control, router
from tileport.pipeline.context import ConversionPaths, Limits, StageContext
from tileport.pipeline.router import Action, Outcome, RunState, replay_runs
from tileport.pipeline.stages import StageFn, default_stages
from tileport.agents.writers import make_writer
from tileport.config import Config
from tileport.errors import UserError
from tileport.pipeline.stages.write_kernel import cargo_seconds
from tileport.exec.proc import Interrupted, ToolScope, tool_scope
from tileport.exec.toolchain import from_config
from tileport.local_models.protocol import CancelToken
from tileport.records import StageResult, exits
from tileport.records.rounds import HUMAN_EDIT
from tileport.store import Store, queries, record_run
from tileport.worktrees import git as wgit
from tileport.worktrees.conversion import (ConversionWorktree, WorktreeEscape, branch_name, check_commands_inside,
                                           check_repo, commit_stage, create_conversion_worktree, discard_uncommitted,
                                           open_conversion_worktree, restore_outside, stage_commits, ungated_edit)

STOP_STATUS = {router.DONE: "done", router.BLOCKED: "blocked", router.FAILED: "failed"}
# The named points of one attempt a `checkpoint` is called at (a test kills the process there).
POINTS = ("started", "ran", "committed", "recorded")
Checkpoint = Callable[[str, str, int], None]  # (point, stage, attempt)


class EditInterrupted(UserError):
    """A stop request killed the gates on a person's edit; nothing of them is kept (HEAD stays ungated)."""


class StageInterrupted(Exception):
    """A stop request killed the running attempt; nothing of it is kept (it runs again, same number, on resume)."""

    def __init__(self, stage: str, attempt: int, seconds: float, why: str) -> None:
        super().__init__(f"stage {stage} attempt {attempt} interrupted after {seconds:.1f} s ({why})")
        self.stage, self.attempt, self.seconds, self.why = stage, attempt, seconds, why


@dataclass
class Finished:
    conversion_id: int
    status: str  # done | blocked | failed | stopped | error
    reason: str = ""
    gated: "EditJudged | None" = None  # B's gates a resume ran first on a person's ungated edit at HEAD

    @property
    def exit_code(self) -> int:
        return exits.of_status(self.status)


@dataclass
class EditJudged:
    """Stage B's gates on a person's committed edit, as recorded: the B run on that commit and where the router
    goes from it (what a resume runs next, or how the conversion stops)."""

    conversion_id: int
    commit: str
    run_id: int
    attempt: int
    verdict: str
    fail_class: str | None
    summary: str
    next: str
    status: str

    @property
    def exit_code(self) -> int:
        return exits.of_verdict(self.verdict)

    @property
    def reason(self) -> str:
        return f"B {self.verdict} on {self.commit[:10]} (human edit) -> {self.next}"

    @property
    def text(self) -> str:
        fc = f" ({self.fail_class})" if self.fail_class else ""
        return (f"#{self.conversion_id} B attempt {self.attempt} on {self.commit[:10]} (human edit): {self.verdict}{fc}"
                f" -> {self.next}; {self.summary[:200]}")


Printer = Callable[[str], None]


def _attempt(ctx) -> str:
    """The attempt as the log shows it: "2/3"; a repair by the same stage (at most once, beyond the cap) says so:
    "2/1 (repair)"."""
    return f"{ctx.attempt}/{ctx.cap}" + (" (repair)" if ctx.repair else "")


@dataclass
class ConversionRunner:
    config: Config
    model: str | None = None  # --model: URL | scripted:TRANSCRIPT | none (default: the config's endpoint)
    limits: Limits = field(default_factory=Limits)
    out: Printer = print
    timing: dict = field(default_factory=dict)  # per-stage wall vs stage time (the benchmark reads it)
    stages: Mapping[str, StageFn] | None = None  # stage letter -> its function (default: the real stages)
    checkpoint: Checkpoint | None = None  # called at each of POINTS of every attempt (tests: kill -9 there)
    examples_dir: Path | None = None  # worked ports for the kernel writer (the service says where they are)
    edit_judge: Callable[..., StageResult] | None = None  # B's judge of a person's edit (write_kernel.judge_port)
    _cancels: dict[int, CancelToken] = field(default_factory=dict)
    _scopes: dict[int, ToolScope] = field(default_factory=dict)
    _print_lock: threading.Lock = field(default_factory=threading.Lock)

    # ---------------------------------------------------------------------------------------- helpers
    def store(self) -> Store:
        # fast commits: a commit survives a killed process (kill -9 included), only an OS crash or power loss may
        # drop the newest transactions, and each commit skips an fsync (the runner writes per stage)
        return Store(Path(self.config.store), fast_commits=True)

    def _stages(self) -> Mapping[str, StageFn]:
        if self.stages is None:
            self.stages = default_stages()
        return self.stages

    def _at(self, point: str, stage: str, attempt: int) -> None:
        if self.checkpoint is not None:
            self.checkpoint(point, stage, attempt)

    def say(self, line: str) -> None:
        with self._print_lock:
            self.out(line)

    # ---------------------------------------------------------------------------------------- start
    def check(self, op_path: str | Path, repo: str | Path = ".", *, triton: str | Path | None = None):
        """Every refusal `start` can make, made before anything exists (for several ops: before any starts)."""
        op = Path(op_path)
        if not op.is_file() or op.suffix != ".py":
            raise UserError(f"{op}: not a Python file; pass the cuTile Python op, e.g. examples/vector_add.py")
        if triton is not None:
            from tileport.analysis.triton.pairing import check_triton_op

            check_triton_op(triton)
        make_writer(self.model or self.config.model.base_url, self.config)  # a bad --model is bad input
        base = check_repo(repo)
        branch = branch_name(op.stem, self._next_id())
        if wgit.branch_exists(wgit.open_repo(base.root), branch):
            raise UserError(f"branch {branch} already exists in {base.root}; delete it (git branch -D {branch}) or "
                            "point `store` at the store that made it")
        return base

    def _next_id(self) -> int:
        """The id the next conversion will get, read without creating the store (checks before anything exists)."""
        return queries.next_conversion_id(self.config.store)

    def start(self, op_path: str | Path, *, kernel: str | None = None, repo: str | Path = ".",
              triton: str | Path | None = None) -> int:
        """Create the conversion: checks first (nothing is created for bad input), then row + branch + worktree.
        `triton`: the Triton twin stage A pairs with (saved with the conversion; by default one found by name)."""
        op = Path(op_path)
        base = self.check(op, repo, triton=triton)
        model = self.model or self.config.model.base_url
        with self.store() as store, store.transaction():  # a refused worktree rolls the conversion row back
            cid = store.add_conversion(str(op.resolve()), kernel)
            wt = create_conversion_worktree(base.root, op.stem, cid, base)
            store.update_conversion(cid, branch=wt.branch, worktree=str(wt.path), repo=str(base.root),
                                    base_branch=base.branch, base_commit=base.commit, model=model,
                                    status="pending", triton=str(Path(triton).resolve()) if triton else None)
        return cid

    # ---------------------------------------------------------------------------------------- drive
    def stop(self, conversion_id: int) -> None:
        """Stop a conversion this runner drives: the model call is aborted and the running tool's process group
        killed at once; the attempt is recorded as interrupted (event `stage.interrupted`), status `stopped`.
        Other processes ask through `control.request_stop` (what `tileport stop ID` does)."""
        tok = self._cancels.get(conversion_id)
        if tok is not None:
            tok.cancel()
        scope = self._scopes.get(conversion_id)
        if scope is not None:
            scope.cancel()

    def resume(self, conversion_id: int) -> Finished:
        return self.drive(conversion_id)

    def rerun_stage(self, conversion_id: int, stage: str) -> Finished:
        """Run one more attempt of `stage` (if its cap allows), then follow the router from its verdict."""
        return self.drive(conversion_id, force=stage)

    def run_many(self, ops: list[tuple[str, str | None]], *, repo: str | Path = ".", jobs: int = 1,
                 ) -> list[Finished]:
        """Start every op (bad input refuses them all before any starts), then drive them from a bounded pool."""
        for op, _ in ops:
            self.check(op, repo)
        cids = [self.start(op, kernel=k, repo=repo) for op, k in ops]
        return self.drive_many(cids, jobs=jobs)

    def drive_many(self, cids: list[int], *, jobs: int = 1) -> list[Finished]:
        if jobs <= 1 or len(cids) <= 1:
            return [self.drive(c) for c in cids]
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="conversion") as pool:
            return list(pool.map(self.drive, cids))

    @contextmanager
    def _exclusive(self, wt: ConversionWorktree) -> Iterator[None]:
        lock = control.run_files(wt.path).lock
        with open(lock, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UserError(f"conversion {wt.conversion_id} is being run by another tileport process; "
                                f"wait for it or stop it first (tileport stop {wt.conversion_id})") from None
            f.truncate(0)
            f.write(f"{os.getpid()}\n")
            f.flush()
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def drive(self, conversion_id: int, force: str | None = None) -> Finished:
        return self._held(conversion_id, lambda store, conv, wt: self._drive(store, conv, wt, force))

    def _held(self, conversion_id: int, body):
        """body(store, conv, worktree) while this process holds the conversion (its lock, a stop file watched)."""
        with self.store() as store:
            conv = store.conversion(conversion_id)
            wt = open_conversion_worktree(conv)
            with self._exclusive(wt), control.StopWatch(control.run_files(wt.path),
                                                        lambda: self.stop(conversion_id)):
                return body(store, conv, wt)

    def _drive(self, store: Store, conv: dict, wt: ConversionWorktree, force: str | None) -> Finished:
        """Recover, then (a resume) gate a person's edit at HEAD that no B run judged, then follow the router."""
        cid = conv["id"]
        paths = ConversionPaths(wt.path, Path(conv["op_path"]).stem)
        self._recover(store, cid, wt, paths)
        runs = self._runs(store, cid)
        if force is not None or (head := self.ungated(wt, runs)) is None:
            return self._route(store, conv, wt, force, runs)
        self.say(f"#{cid} {paths.op}: HEAD {head[:10]} is a human edit no B run judged; B's gates run on it first")
        try:
            gated = self._judge_edit(store, conv, wt, HUMAN_EDIT)
        except EditInterrupted as e:
            return Finished(cid, "stopped", str(e))
        done = self._route(store, store.conversion(cid), wt, None, self._runs(store, cid))
        return replace(done, gated=gated, reason=f"{gated.reason}; {done.reason}" if done.reason else gated.reason)

    @staticmethod
    def ungated(wt: ConversionWorktree, runs: list[queries.StageRunRow]) -> str | None:
        """HEAD when it holds a person's edit that no B run judged (`worktrees.conversion.ungated_edit`)."""
        return ungated_edit(wt, [r.commit for r in runs if r.stage == "B"])

    def _route(self, store: Store, conv: dict, wt: ConversionWorktree, force: str | None,
               runs: list[queries.StageRunRow]) -> Finished:
        cid = conv["id"]
        op_path = Path(conv["op_path"])
        paths = ConversionPaths(wt.path, op_path.stem)
        state, action = self._replay(runs)
        if force is not None:
            if force not in state.caps:
                raise UserError(f"no stage {force!r}; stages are {', '.join(state.caps)}")
            if state.used(force) >= state.budget(force):
                raise UserError(f"stage {force} has used its cap ({state.used(force)}/{state.caps[force]})")
            action = Action(stage=force, reason=f"rerun of {force} asked for")
        if action.stop:
            status = STOP_STATUS[action.stop]
            if conv["status"] != status:
                self._set(store, cid, status=status)
            return Finished(cid, status, action.reason)
        # the model asked for now wins over the stored one (`--resume ID --model X` runs X, and says so); a
        # scripted transcript skips the requests the same model already answered in the recorded runs
        model = self.model or conv.get("model")
        skip = sum(r.details.model_requests for r in runs) if model == conv.get("model") else 0
        writer = make_writer(model, self.config, skip_requests=skip)
        if model != conv.get("model"):
            self._set(store, cid, model=model)
            self.say(f"#{cid} {paths.op}: model {model} from now on (started with {conv.get('model') or 'none'})")
        cancel = self._cancels[cid] = CancelToken()  # a new token per drive: a stopped conversion resumes
        scope = self._scopes[cid] = ToolScope(output=control.run_files(wt.path).live)
        toolchain = from_config(self.config)
        parent = wgit.open_repo(wt.repo_root)
        self._set(store, cid, status="running")
        discard_uncommitted(wt, paths.committed)  # what an interrupted attempt left (every finished one committed)
        try:
            while action.stage:
                if cancel.cancelled:
                    self._set(store, cid, status="stopped")
                    return Finished(cid, "stopped", "stopped by request")
                stage = action.stage
                attempt = queries.attempts(store, cid, stage) + 1
                state = state.start(stage, action.repair)
                ctx = StageContext(conversion_id=cid, op=paths.op, op_path=op_path, kernel=conv["kernel"],
                                   worktree=wt, paths=paths, config=self.config, toolchain=toolchain,
                                   writer=writer, limits=self.limits, attempt=attempt, cap=state.caps[stage],
                                   repair=action.repair, history=runs, cancel=cancel,
                                   log=lambda m, scope=scope: (self.say(m), scope.note(m)),
                                   examples_dir=self.examples_dir,
                                   triton=Path(conv["triton"]) if conv.get("triton") else None)
                result, action, sha = self._attempt(store, stage, ctx, state, parent, scope)
                runs = self._runs(store, cid)
            status = STOP_STATUS[action.stop]
            self._set(store, cid, status=status)
            return Finished(cid, status, action.reason)
        except StageInterrupted as e:
            discard_uncommitted(wt, paths.committed)
            with store.transaction():
                store.log_event("stage.interrupted", cid, stage=e.stage, attempt=e.attempt,
                                seconds=round(e.seconds, 1), why=e.why)
                store.update_conversion(cid, status="stopped")
            self.say(f"#{cid} {paths.op}: {e}; `{control.resume_command(store, cid)}` runs it again")
            return Finished(cid, "stopped", str(e))
        except WorktreeEscape as e:
            self._set(store, cid, status="failed", error=str(e))
            self.say(f"#{cid} {paths.op}: stopped: {e}")
            return Finished(cid, "failed", str(e))
        except UserError:
            raise
        except Exception as e:  # a bug in tileport: keep the conversion resumable, say so in one line
            self._set(store, cid, status="error", error=f"{type(e).__name__}: {e}")
            with store.transaction():
                store.log_event("conversion.error", cid, error=f"{type(e).__name__}: {e}",
                                traceback=traceback.format_exc()[-4000:])
            self.say(f"#{cid} {paths.op}: internal error: {type(e).__name__}: {e} (tileport run --resume {cid})")
            return Finished(cid, "error", str(e))

    def _attempt(self, store: Store, stage: str, ctx: StageContext, state: RunState,
                 parent, scope: ToolScope | None = None) -> tuple[StageResult, Action, str]:
        cid, wt, paths = ctx.conversion_id, ctx.worktree, ctx.paths
        t0 = time.perf_counter()
        before = wgit.snapshot(parent)
        with store.transaction():
            store.log_event("stage.started", cid, stage=stage, attempt=ctx.attempt, cap=ctx.cap, repair=ctx.repair)
        self._at("started", stage, ctx.attempt)
        t1 = time.perf_counter()
        scope = scope or ToolScope()
        control.new_live(control.run_files(wt.path), f"stage {stage} attempt {_attempt(ctx)} started")
        scope.close()  # its next line opens the new live file
        try:
            with tool_scope(scope):
                result = self._stages()[stage](ctx)
        except Interrupted as e:
            raise StageInterrupted(stage, ctx.attempt, time.perf_counter() - t1, str(e)) from None
        if ctx.cancel.cancelled or scope.cancelled:  # stopped while a stage caught the kill: its result is not kept
            raise StageInterrupted(stage, ctx.attempt, time.perf_counter() - t1, "stop requested")
        t2 = time.perf_counter()
        self._at("ran", stage, ctx.attempt)
        result = (result.with_details(repair=True) if ctx.repair else result).model_copy(
            update={"attempt": ctx.attempt, "cap": ctx.cap})
        check_commands_inside(wt, result.commands)
        moved = before.moved(wgit.snapshot(parent))
        if moved:
            raise WorktreeEscape(f"the parent checkout {wt.repo_root} changed while stage {stage} ran ({moved}); "
                                 "only the conversion worktree may change")
        action = router.next_action(state, Outcome.of(result))
        seq = len(ctx.history) + 1
        record = {"seq": seq, "result": result.model_dump(mode="json"), "routed_to": action.target,
                  "route_reason": action.reason, "repair": ctx.repair}
        paths.runs.mkdir(parents=True, exist_ok=True)
        (paths.runs / f"{seq:03d}-{stage}-{ctx.attempt}.json").write_text(
            json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        t3 = time.perf_counter()
        git_commands: list = []
        sha = commit_stage(wt, stage=stage, verdict=result.verdict, attempt=ctx.attempt, op=paths.op,
                           summary=f"{result.summary}\n\nnext: {action.target} ({action.reason})",
                           paths=paths.committed, commands=git_commands)
        result = result.model_copy(update={"commands": [*result.commands, *git_commands]})  # recorded commands
        restored = restore_outside(wt, paths.committed)
        if restored:
            self.say(f"#{cid} {paths.op}: {stage} ran the op's own code, which changed {', '.join(restored[:3])}"
                     f"{' and more' if len(restored) > 3 else ''} in the worktree; put back as committed")
        t4 = time.perf_counter()
        self._at("committed", stage, ctx.attempt)
        record_run(store, cid, result, commit=sha, routed_to=action.target, route_reason=action.reason,
                   number=False, head=True)
        t5 = time.perf_counter()
        self._at("recorded", stage, ctx.attempt)
        # wall = stage (its tools) + git commit (a tool) + orchestration (routing, checks, JSON, store, events)
        self.timing.setdefault(cid, []).append({
            "stage": stage, "attempt": ctx.attempt, "wall_s": t5 - t0, "stage_s": t2 - t1, "commit_s": t4 - t3,
            "overhead_s": (t5 - t0) - (t2 - t1) - (t4 - t3),
            "cargo_s": cargo_seconds(result.commands),
            "parts_ms": {"before": round((t1 - t0) * 1e3, 1), "route_json": round((t3 - t2) * 1e3, 1),
                         "record": round((t5 - t4) * 1e3, 1)}})
        self.print_verdict(ctx, stage, result, action)
        return result, action, sha

    def print_verdict(self, ctx: StageContext, stage: str, result: StageResult, action: Action) -> None:
        secs = (result.finished_at - result.started_at).total_seconds() if result.finished_at else 0.0
        fc = f" ({result.fail_class.value})" if result.fail_class else ""
        nxt = f"-> {action.stage}" if action.stage else f"STOP {action.stop}"
        tokens = result.tokens.prompt_tokens + result.tokens.completion_tokens
        tok = f", {tokens} tokens" if tokens else ""
        self.say(f"#{ctx.conversion_id} {ctx.op} {stage} attempt {_attempt(ctx)}: {result.verdict}{fc} "
                 f"[{secs:.1f} s{tok}] {result.summary[:160]}  {nxt}"
                 + (f" ({action.reason})" if action.stop else ""))

    @staticmethod
    def _set(store: Store, cid: int, **fields) -> None:
        with store.transaction():
            store.update_conversion(cid, **fields)

    # ---------------------------------------------------------------------------------------- a person's edit
    def judge_edit(self, conversion_id: int, source: str = HUMAN_EDIT) -> EditJudged:
        """Stage B's gates (its judge, no writer: `write_kernel.judge_port`) on the port as committed at the worktree's
        HEAD, recorded as a B run of this conversion on that commit and routed like any B attempt (a resume
        follows it). It runs as an attempt runs: under the conversion's lock, status running after `stage.started`,
        its tools' output in the live file, and a stop kills it (recorded as interrupted, nothing kept)."""
        return self._held(conversion_id, lambda store, conv, wt: self._judge_edit(store, conv, wt, source))

    def _judge_edit(self, store: Store, conv: dict, wt: ConversionWorktree, source: str) -> EditJudged:
        from tileport.pipeline.stages import write_kernel
        from tileport.worktrees.conversion import person_paths

        cid, stage = conv["id"], write_kernel.STAGE.value
        paths = ConversionPaths(wt.path, Path(conv["op_path"]).stem)
        if changed := wgit.uncommitted(wt.path, *person_paths(paths.committed[0]), untracked=True):
            raise UserError(f"conversion {cid}: {', '.join(changed[:3])} not committed; commit the edit first "
                            f"(tileport build-rust --conversion {cid} --commit, or the dashboard's e)")
        head, runs = wt.head(), self._runs(store, cid)
        state = RunState(router.caps_of(self.config)).start(stage)  # a new round (as `_replay` counts it)
        cancel = self._cancels[cid] = CancelToken()
        scope = self._scopes[cid] = ToolScope(output=control.run_files(wt.path).live)
        attempt = queries.attempts(store, cid, stage) + 1
        ctx = StageContext(conversion_id=cid, op=paths.op, op_path=Path(conv["op_path"]), kernel=conv["kernel"],
                           worktree=wt, paths=paths, config=self.config, toolchain=from_config(self.config),
                           writer=None, limits=self.limits, attempt=attempt, cap=state.caps[stage],
                           history=runs, cancel=cancel, log=lambda m: (self.say(m), scope.note(m)),
                           examples_dir=self.examples_dir)
        with store.transaction():
            store.log_event("stage.started", cid, stage=stage, attempt=attempt, cap=ctx.cap, source=source,
                            commit=head)
            store.update_conversion(cid, status="running")
        try:
            return self._gates(store, ctx, head, state, source)
        except UserError:
            raise
        except Exception as e:  # a bug in tileport: the conversion does not stay "running", and says why
            with store.transaction():
                store.log_event("stage.interrupted", cid, stage=stage, attempt=attempt, why=f"{type(e).__name__}: {e}",
                                source=source, traceback=traceback.format_exc()[-4000:])
                store.update_conversion(cid, status=conv["status"])
            raise UserError(f"#{cid}: internal error in the gates on {head[:10]}: {type(e).__name__}: {e}") from None

    def _gates(self, store: Store, ctx: StageContext, head: str, state: RunState, source: str) -> EditJudged:
        from tileport.pipeline.stages import write_kernel
        from tileport.worktrees.conversion import BUILD_DIR

        cid, stage, attempt, wt = ctx.conversion_id, write_kernel.STAGE.value, ctx.attempt, ctx.worktree
        cancel, scope = ctx.cancel, self._scopes[cid]
        control.new_live(control.run_files(wt.path), f"stage {stage} attempt {attempt}/{ctx.cap} started: the gates "
                                                     f"on a {source} ({head[:10]})")
        scope.close()
        t0 = time.perf_counter()
        try:
            with tool_scope(scope):
                result = (self.edit_judge or write_kernel.judge_port)(ctx, source, runs_dir=wt.path / BUILD_DIR / "runs")
            if cancel.cancelled or scope.cancelled:
                raise Interrupted("stop requested")
        except Interrupted as e:
            with store.transaction():
                store.log_event("stage.interrupted", cid, stage=stage, attempt=attempt,
                                seconds=round(time.perf_counter() - t0, 1), why=str(e), source=source)
                store.update_conversion(cid, status="stopped")
            raise EditInterrupted(f"#{cid}: the gates on {head[:10]} were stopped after {time.perf_counter() - t0:.1f} "
                                  f"s; nothing was recorded (run them again: s, e, or tileport build-rust --conversion "
                                  f"{cid})") from None
        check_commands_inside(wt, result.commands)
        result = result.model_copy(update={"attempt": attempt, "cap": ctx.cap,
                                           "summary": f"{source} {head[:10]}: {result.summary}"})
        action = router.next_action(state, Outcome.of(result))
        rec = record_run(store, cid, result, commit=head, routed_to=action.target, number=False, head=True,
                         route_reason=f"{action.reason} ({source})")
        status = STOP_STATUS[action.stop] if action.stop else "pending"
        self._set(store, cid, status=status)
        self.print_verdict(ctx, stage, result, action)
        return EditJudged(cid, head, rec.run_id, attempt, result.verdict,
                          result.fail_class.value if result.fail_class else None, result.summary, action.target,
                          status)

    # ---------------------------------------------------------------------------------------- replay
    @staticmethod
    def _runs(store: Store, cid: int) -> list[queries.StageRunRow]:
        """The recorded runs as a stage context's history (typed rows)."""
        return queries.stage_runs(store, cid)

    def _replay(self, runs: list[queries.StageRunRow]) -> tuple[RunState, Action]:
        """The router's state after the recorded runs, and the next action (the same pure function decides)."""
        return replay_runs(router.caps_of(self.config), runs)

    def _recover(self, store: Store, cid: int, wt: ConversionWorktree, paths: ConversionPaths) -> None:
        """Record stage commits the store missed (a kill between commit and store write), from their JSON."""
        recorded = {(r.stage, r.attempt) for r in queries.stage_runs(store, cid)}
        for c in stage_commits(wt):
            if (c["stage"], c["attempt"]) in recorded:
                continue
            files = sorted(paths.runs.glob(f"*-{c['stage']}-{c['attempt']}.json"))
            if not files:
                raise UserError(f"conversion {cid}: commit {c['sha'][:10]} has no stage record; the worktree "
                                f"{wt.path} was edited by hand")
            rec = json.loads(files[-1].read_text(encoding="utf-8"))
            result = StageResult.model_validate(rec["result"])
            with store.transaction():
                record_run(store, cid, result, commit=c["sha"], routed_to=rec["routed_to"],
                           route_reason=rec["route_reason"], number=False, head=True)
                store.log_event("stage.recovered", cid, stage=c["stage"], attempt=c["attempt"], commit=c["sha"])
