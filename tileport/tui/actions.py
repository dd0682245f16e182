"""What the dashboard can ask for, and why it may not: a thin seam to `tileport.service`.

The dashboard owns no pipeline logic. Every action calls the service verbs the CLI calls, and every "may I?" is
`service.why_not` (the merge rule's refusals, the runner's caps, who holds the conversion), told only what the
dashboard alone knows (what it drives itself, read-only, quitting); so the dashboard and `tileport approve` /
`merge` refuse for the same reasons. A read-only dashboard refuses every write.
"""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from tileport import service
from tileport.config import Config
from tileport.errors import UserError

READONLY = service.READONLY
_CID = re.compile(r"^#(\d+) ")


class Actions:
    """Bound to one store, config and repository; called from worker threads and the UI thread alike."""

    def __init__(self, store_path: Path, config: Config, repo: Path | None = None, readonly: bool = False,
                 model: str | None = None, jobs: int = 2) -> None:
        self.store_path = Path(store_path).absolute()
        self.config = config.model_copy(update={"store": str(self.store_path)})
        self.repo = Path(repo) if repo else Path.cwd()
        self.readonly = readonly
        self.model = model
        self.jobs = jobs
        self._running: set[int] = set()
        self._lock = threading.Lock()
        self._runner = None
        self.closing = False  # set when the dashboard quits: nothing new starts (a queued conversion neither)
        self.forced: dict[int, str] = {}  # conversion -> the stage a running rerun asked for (a hand-off keeps it)
        self._queued: list[int] = []  # started here (c, autostart) but waiting for a free slot in the pool
        # called (from any thread, never under the lock) when a drive here starts or ends: what the screens show
        # of "running here" (the merge line, the quit dialog) changes then, with no store event to say so
        self.on_change: Callable[[int], None] | None = None

    # --- plumbing ----------------------------------------------------------------------------
    @property
    def runner(self):
        if self._runner is None:
            self._runner = service.runner(self.config, model=self.model, out=self._log)
        return self._runner

    def _log(self, line: str) -> None:
        """Runner output becomes `log` events, so every dashboard on this store shows it live."""
        m = _CID.match(line)
        with service.open_store(self.config) as store:
            store.log_event("log", int(m.group(1)) if m else None, text=line)

    def _with_store(self, fn, *args, **kw):
        with service.open_store(self.config) as store:
            return fn(store, self.config, *args, **kw)

    def running(self, conversion_id: int) -> bool:
        with self._lock:
            return conversion_id in self._running

    def running_here(self) -> list[int]:
        """Conversions this dashboard drives now (what quitting would stop or hand off)."""
        with self._lock:
            return sorted(self._running)

    def queued_here(self) -> list[int]:
        """Conversions this dashboard was asked to run that have not started (a hand-off takes them too)."""
        with self._lock:
            return [c for c in self._queued if c not in self._running]

    def close(self) -> tuple[list[int], list[int]]:
        """Quitting: from now on no drive starts here; (running, queued) at this moment, read in the same lock, so
        each conversion is in one of them or starts never (a queued one's drive is refused: it stays queued)."""
        with self._lock:
            self.closing = True
            return sorted(self._running), [c for c in self._queued if c not in self._running]

    def _changed(self, conversion_id: int) -> None:
        if self.on_change is not None:
            self.on_change(conversion_id)

    # --- "why not?" -------------------------------------------------------------------------------
    def why_not(self, action: str, conversion_id: int | None = None, **kw: Any) -> str | None:
        """One line saying why `action` is not possible now, or None when it is (`service.why_not`)."""
        running = conversion_id is not None and self.running(conversion_id)
        return self._with_store(service.why_not, action, conversion_id, running_here=running,
                                readonly=self.readonly, closing=self.closing, **kw)

    # --- doing ---------------------------------------------------------------------------------
    def _drive(self, conversion_id: int, fn) -> Any:
        with self._lock:
            if self.closing:  # in the lock `close` takes: what quitting stops or hands off is all that runs
                raise UserError("the dashboard is quitting")
            if conversion_id in self._running:
                raise UserError(f"conversion {conversion_id} is already running")
            self._running.add(conversion_id)
            if conversion_id in self._queued:  # in the same lock: never neither queued nor running
                self._queued.remove(conversion_id)
        self._changed(conversion_id)
        try:
            return fn()
        finally:
            with self._lock:
                self._running.discard(conversion_id)
            self._changed(conversion_id)

    def start(self, op_paths: list[str], background_note=None) -> list[int]:
        """Start a conversion per op (or pick up the existing, unfinished one), then drive them from a pool."""
        if self.readonly:
            raise UserError(READONLY)
        for op in op_paths:  # a bad path is refused before anything starts, in one line
            if not Path(op).is_file():
                raise UserError(f"{op}: no such file; give the path of a cuTile Python op (.py)")
        cids = service.start_or_reuse(self.runner, op_paths, repo=self.repo)
        if background_note is not None:
            for cid, op in zip(cids, op_paths):
                background_note(f"#{cid} {Path(op).name}: converting in {self.repo} (enter opens it)")
        todo = [c for c in cids if not self.why_not("resume", c)]
        with self._lock:
            self._queued += [c for c in todo if c not in self._queued]
        with ThreadPoolExecutor(max_workers=max(1, self.jobs), thread_name_prefix="dashboard") as pool:
            list(pool.map(self._resume_unless_closing, todo))
        return cids

    def _resume_unless_closing(self, conversion_id: int):
        if self.closing:  # stays queued: a hand-off to the background runs it
            return None
        try:
            return self.resume(conversion_id)
        except UserError as e:  # one conversion's refusal must not end the others
            if not self.closing:
                self._dequeue(conversion_id)
            self._log(f"#{conversion_id} not started: {e}")
            return None

    def _dequeue(self, conversion_id: int) -> None:
        with self._lock:
            if conversion_id in self._queued:
                self._queued.remove(conversion_id)

    def resume(self, conversion_id: int):
        reason = self.why_not("resume", conversion_id)
        if reason:
            raise UserError(reason)
        return self._drive(conversion_id, lambda: service.resume(self.runner, conversion_id))

    def rerun(self, conversion_id: int, stage: str):
        reason = self.why_not("rerun", conversion_id)
        if reason:
            raise UserError(reason)
        self.forced[conversion_id] = stage
        try:
            return self._drive(conversion_id, lambda: service.rerun(self.runner, conversion_id, stage))
        finally:
            self.forced.pop(conversion_id, None)

    def stop(self, conversion_id: int, wait_s: float = 15.0):
        """Kill the running tool of `conversion_id` (this dashboard's or another process's) and wait for the
        attempt to be recorded as interrupted; returns what really happened (control.StopOutcome)."""
        if self.readonly:
            raise UserError(READONLY)
        if self._runner is not None and self.running(conversion_id):
            service.stop(self._runner, conversion_id)  # in-process: at once, without waiting for the stop file poll
        return self._with_store(lambda store, _config: service.stop_conversion(store, conversion_id, wait_s,
                                                                               resume_hint="s resumes"))

    def approve(self, conversion_id: int, comment: str | None = None):
        reason = self.why_not("approve", conversion_id)
        if reason:
            raise UserError(reason)
        try:
            return self._with_store(service.approve, conversion_id, comment)
        except service.ApprovalRefused as refused:  # a gate changed between the check and the decision
            raise UserError("; ".join(refused.refusals)) from None

    def reject(self, conversion_id: int, reason_text: str):
        reason = self.why_not("reject", conversion_id)
        if reason:
            raise UserError(reason)
        return self._with_store(service.reject, conversion_id, reason_text)

    def merge(self, conversion_id: int):
        if self.readonly:
            raise UserError(READONLY)
        outcome = self._with_store(service.merge, conversion_id)
        if not outcome.merged:
            raise UserError("; ".join(outcome.refusals) or "merge refused")
        return outcome

    # --- a person's own edit of the port ---------------------------------------------------------
    def why_not_edit(self, conversion_id: int) -> str | None:
        if self.readonly:
            return READONLY
        running = self.running(conversion_id)
        return self._with_store(lambda store, _config: service.why_not_edit(store, conversion_id,
                                                                            running_here=running))

    def edited(self, conversion_id: int) -> bool:
        """Whether the port directory has uncommitted changes (a person's edit)."""
        return bool(self._with_store(lambda store, _config: service.edited_files(store, conversion_id)))

    def commit_human_edit(self, conversion_id: int) -> str:
        """Commit the person's edit of the port as a human attempt (service.commit_human_edit); the new HEAD."""
        if self.readonly:
            raise UserError(READONLY)
        return self._with_store(lambda store, _config: service.commit_human_edit(store, conversion_id))

    def judge_edit(self, conversion_id: int):
        """Stage B's gates on the committed edit, recorded as a B run on that commit (service.judge_edit);
        driven like a stage here, so the conversion shows as running and `x` stops it."""
        if self.readonly:
            raise UserError(READONLY)
        def gates():
            from tileport.tui._background import JUDGE_EDIT

            self.forced[conversion_id] = JUDGE_EDIT  # quitting with "leave it running" hands the gates off
            try:
                return service.judge_edit(self.runner, conversion_id)
            finally:
                self.forced.pop(conversion_id, None)
        return self._drive(conversion_id, gates)

    @property
    def judging(self) -> set[int]:
        """Conversions whose running work here is B's gates on a person's edit."""
        from tileport.tui._background import JUDGE_EDIT

        return {cid for cid, stage in self.forced.items() if stage == JUDGE_EDIT}

    def ungated_head(self, conversion_id: int) -> str | None:
        """The HEAD commit when no B run judged it (an edit committed without its gates, or gates stopped)."""
        return self._with_store(lambda store, _config: service.ungated_head(store, conversion_id))

    def do(self, action: str, *args: Any) -> Any:
        return getattr(self, action)(*args)


def describe(action: str, conversion_id: int, result: Any) -> str:
    """One line saying what an action really did, from what it returned."""
    if isinstance(result, (service.StopOutcome, service.EditJudged)):
        return result.text
    if isinstance(result, service.Finished):
        return (f"{action} #{conversion_id}: {result.status.upper()}" + (f" ({result.reason})" if result.reason else ""))
    if action in ("approve", "reject") and result is not None:
        commit = getattr(result, "commit", "") or ""
        return f"#{conversion_id} {action}d at {commit[:10]}"
    if action == "merge" and result is not None:
        target = getattr(result, "target", None) or "the base branch"
        return f"#{conversion_id} merged into {target}"
    return f"{action} #{conversion_id}: done"
