"""What the dashboard can ask for, and why it may not: a thin seam to the runner and the approval rules.

The dashboard owns no pipeline logic. Every action calls the functions the CLI calls
(`tileport.agents.runner.Runner`, `tileport.worktrees.approval` / `merge`), and every "may I?" is
answered from the same rules (the merge rule's refusals, the runner's caps), so the dashboard and
`tileport approve` / `merge` refuse for the same reasons. A read-only dashboard refuses every write.
"""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tileport.config import Config
from tileport.errors import UserError
from tileport.store import Store

READONLY = "read-only dashboard (started with --readonly): use the CLI or a writable dashboard"
WRITES = {"start", "resume", "stop", "rerun", "approve", "reject", "merge"}
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

    # --- plumbing ----------------------------------------------------------------------------
    @property
    def runner(self):
        if self._runner is None:
            from tileport import service

            self._runner = service.runner(self.config, model=self.model, out=self._log)
        return self._runner

    def _log(self, line: str) -> None:
        """Runner output becomes `log` events, so every dashboard on this store shows it live."""
        m = _CID.match(line)
        store = Store(self.store_path)
        try:
            store.log_event("log", int(m.group(1)) if m else None, text=line)
        finally:
            store.close()

    def _with_store(self, fn, *args, **kw):
        store = Store(self.store_path)
        try:
            return fn(store, self.config, *args, **kw)
        finally:
            store.close()

    def running(self, conversion_id: int) -> bool:
        with self._lock:
            return conversion_id in self._running

    # --- "why not?" -------------------------------------------------------------------------------
    def why_not(self, action: str, conversion_id: int | None = None, **kw: Any) -> str | None:
        """One line saying why `action` is not possible now, or None when it is."""
        if self.readonly and action in WRITES:
            return READONLY
        if action == "start":
            return None
        if conversion_id is None:
            return "select a conversion first"
        store = Store(self.store_path)
        try:
            conv = store.conversion(conversion_id)
        except UserError as e:
            return str(e)
        finally:
            store.close()
        status = conv.get("status")
        if action in ("resume", "rerun"):
            if self.running(conversion_id):
                return f"conversion {conversion_id} is running; stop it first (x)"
            if not conv.get("worktree"):
                return f"conversion {conversion_id} has no worktree (it was recorded by `tileport analyze`)"
            if action == "resume" and status in ("done", "merged", "rejected"):
                return f"conversion {conversion_id} is {status}; rerun a stage (r) to change it"
            return None
        if action == "stop":
            return None if self.running(conversion_id) else (
                f"conversion {conversion_id} is not running in this dashboard")
        if action in ("approve", "reject", "merge"):
            if not conv.get("branch") or not conv.get("repo"):
                return f"conversion {conversion_id} has no branch to {action}"
            if self.running(conversion_id):
                return f"conversion {conversion_id} is running; decide once it stops on a commit"
            if action == "reject":
                return None  # a rejection is recorded whatever the gates say
            if action == "approve":  # the rule `tileport approve` applies: no approval while a gate is open
                from tileport.worktrees.approval import check_approval

                try:
                    refused = self._with_store(check_approval, conversion_id)
                except UserError as e:
                    return str(e)
                return None if refused is None else "; ".join(refused.refusals)
            from tileport.worktrees.merge import check_merge

            try:
                outcome = self._with_store(check_merge, conversion_id)
            except UserError as e:
                return str(e)
            return "; ".join(outcome.refusals) if outcome.refusals else None
        return f"unknown action {action!r}"

    # --- doing ---------------------------------------------------------------------------------
    def _drive(self, conversion_id: int, fn) -> Any:
        with self._lock:
            if conversion_id in self._running:
                raise UserError(f"conversion {conversion_id} is already running")
            self._running.add(conversion_id)
        try:
            return fn()
        finally:
            with self._lock:
                self._running.discard(conversion_id)

    def start(self, op_paths: list[str]) -> list[int]:
        """Start a conversion per op (or pick up the existing, unfinished one), then drive them from a pool."""
        if self.readonly:
            raise UserError(READONLY)
        from tileport import service

        cids = service.start_or_reuse(self.runner, op_paths, repo=self.repo)
        todo = [c for c in cids if not self.why_not("resume", c)]
        with ThreadPoolExecutor(max_workers=max(1, self.jobs), thread_name_prefix="dashboard") as pool:
            list(pool.map(self.resume, todo))
        return cids

    def resume(self, conversion_id: int):
        reason = self.why_not("resume", conversion_id)
        if reason:
            raise UserError(reason)
        return self._drive(conversion_id, lambda: self.runner.resume(conversion_id))

    def rerun(self, conversion_id: int, stage: str):
        reason = self.why_not("rerun", conversion_id)
        if reason:
            raise UserError(reason)
        return self._drive(conversion_id, lambda: self.runner.rerun_stage(conversion_id, stage))

    def stop(self, conversion_id: int) -> None:
        reason = self.why_not("stop", conversion_id)
        if reason:
            raise UserError(reason)
        self.runner.stop(conversion_id)

    def approve(self, conversion_id: int, comment: str | None = None):
        from tileport.worktrees.approval import ApprovalRefused, approve

        reason = self.why_not("approve", conversion_id)
        if reason:
            raise UserError(reason)
        try:
            return self._with_store(approve, conversion_id, comment)
        except ApprovalRefused as refused:  # a gate changed between the check and the decision
            raise UserError("; ".join(refused.refusals)) from None

    def reject(self, conversion_id: int, reason_text: str):
        from tileport.worktrees.approval import reject

        reason = self.why_not("reject", conversion_id)
        if reason:
            raise UserError(reason)
        return self._with_store(reject, conversion_id, reason_text)

    def merge(self, conversion_id: int):
        from tileport.worktrees.merge import merge

        if self.readonly:
            raise UserError(READONLY)
        outcome = self._with_store(merge, conversion_id)
        if not outcome.merged:
            raise UserError("; ".join(outcome.refusals) or "merge refused")
        return outcome

    def do(self, action: str, *args: Any) -> Any:
        return getattr(self, action)(*args)
