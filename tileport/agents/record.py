"""The one path a stage result takes into the store: `tileport run`, `analyze`, `build-rust` and the dashboard
all record through `record_result`, so a stage run looks the same whoever started it."""

from __future__ import annotations

from tileport.records import StageResult
from tileport.store import Store


def immediate(store: Store):
    """One write transaction around several store writes (a stage run + the conversion's head, say): the store's
    own `BEGIN IMMEDIATE` transaction, retried while another writer holds the lock, so concurrent conversions
    never fail with "database is locked" and a group of writes lands whole or not at all."""
    return store._write()


def next_attempt(store: Store, conversion_id: int, stage: str) -> int:
    return store.attempts(conversion_id, stage) + 1


def record_result(store: Store, conversion_id: int, result: StageResult, *, commit: str | None = None,
                  routed_to: str | None = None, route_reason: str | None = None) -> int:
    """Store one finished stage run (commands, artifacts, where the router sent the work next); returns its id.
    Call inside `immediate(store)` when other processes or threads write the same store."""
    return store.record_stage(conversion_id, result, commit, routed_to=routed_to, route_reason=route_reason)


def record_standalone(store: Store, op_path: str, kernel: str | None, result: StageResult) -> int:
    """A stage run outside `tileport run` (`analyze`, `build-rust`): recorded on the op's newest conversion that has
    no worktree (never on a `tileport run` conversion, whose attempts the router counts), next attempt."""
    with immediate(store):
        rows = list(store.db["conversions"].rows_where(
            "op_path = ? and kernel is ? and worktree is null", [op_path, kernel], order_by="id desc", limit=1))
        cid = rows[0]["id"] if rows else store.add_conversion(op_path, kernel)
        attempt = next_attempt(store, cid, result.stage.value)
        store.log_event("stage.started", cid, stage=result.stage.value, attempt=attempt, source="standalone")
        return record_result(store, cid, result.model_copy(update={"attempt": attempt}))
