"""Compatibility names for the store's one write path (`tileport.store.runs.record_run`): kept so callers written
against `agents.record` keep working; new code calls the store directly."""

from __future__ import annotations

from tileport.records import StageResult
from tileport.store import Store, runs


def immediate(store: Store):
    """One write transaction around several store writes: the store's own `BEGIN IMMEDIATE` transaction, retried
    while another writer holds the lock; a group of writes lands whole or not at all."""
    return store._write()


def next_attempt(store: Store, conversion_id: int, stage: str) -> int:
    return runs.attempts(store, conversion_id, stage) + 1


def record_result(store: Store, conversion_id: int, result: StageResult, *, commit: str | None = None,
                  routed_to: str | None = None, route_reason: str | None = None) -> int:
    """Store one finished stage run under the attempt it carries; returns its id."""
    return runs.record_run(store, conversion_id, result, commit=commit, routed_to=routed_to,
                           route_reason=route_reason, number=False).run_id


def record_standalone(store: Store, op_path: str, kernel: str | None, result: StageResult) -> int:
    """A stage run outside `tileport run` (`analyze`, `build-rust`), as the op's next standalone attempt."""
    return runs.record_standalone(store, op_path, kernel, result).run_id
