"""The one path a stage result takes into the store: `tileport run`, `analyze`, `build-rust` and the dashboard
all record through `record_result`, so a stage run looks the same whoever started it."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

import sqlite3

from tileport.records import StageResult
from tileport.store import Store


@contextmanager
def immediate(store: Store, attempts: int = 60) -> Iterator[Store]:
    """A write transaction that takes SQLite's write lock up front (BEGIN IMMEDIATE).

    Several conversions write one WAL store at once; a deferred transaction that reads first and writes second
    fails with "database is locked" when another writer committed in between (the busy timeout cannot help a
    stale read snapshot). Taking the lock first makes every writer wait its turn instead."""
    conn = store.db.conn
    for i in range(attempts):
        try:
            conn.execute("BEGIN IMMEDIATE")
            break
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or i == attempts - 1:
                raise
            time.sleep(0.05)
    try:
        yield store
    except BaseException:
        conn.rollback()
        raise
    conn.commit()


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
