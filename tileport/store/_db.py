"""The SQLite connection layer: JSON columns, the bounded busy retry (tenacity), write transactions that take the
lock up front, and damage turned into one line."""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
from typing import Any, Callable, TypeVar

import sqlite_utils
from tenacity import RetryError, Retrying, retry_if_exception, stop_after_delay, wait_random_exponential

from tileport import limits
from tileport.errors import UserError

T = TypeVar("T")


def json_column(raw: Any, path: object, where: str) -> Any:
    """A JSON column's value; a damaged one is one line naming the store and the column, not a traceback."""
    if raw is None or raw == "":
        return None
    try:
        return json.loads(raw if isinstance(raw, (str, bytes)) else str(raw))
    except (ValueError, RecursionError) as e:  # tileport wrote it (NaN included): only damage fails here
        raise UserError(f"{path}: {where} holds no valid JSON ({str(e)[:120]}); the store is damaged: move it "
                        "aside or restore it from a backup") from None


def to_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _busy(e: BaseException) -> bool:
    msg = str(e).lower()
    return isinstance(e, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg)


def retrying(what: str, path: object, fn: Callable[[], T]) -> T:
    """Run fn, retrying while SQLite says the store is locked (another tileport writes), for at most STORE_BUSY.

    Each try already waits SQLite's busy timeout; the retries cover the cases SQLite does not wait for (a WAL
    switch, a snapshot that moved). When the budget is spent: one line, never a traceback.
    """
    try:
        for attempt in Retrying(retry=retry_if_exception(_busy), stop=stop_after_delay(limits.STORE_BUSY.value),
                                wait=wait_random_exponential(multiplier=0.01, max=0.5), reraise=False):
            with attempt:
                return fn()
    except RetryError:
        raise UserError(f"{path}: the store stayed locked by another process while {what} for longer than the "
                        f"{limits.STORE_BUSY.describe()}; retry, or raise {limits.STORE_BUSY.env}") from None
    raise AssertionError("unreachable")  # pragma: no cover


class Database(sqlite_utils.Database):
    """sqlite-utils' Database whose outermost `atomic()` takes the write lock up front (BEGIN IMMEDIATE, retried
    while busy): every write transaction, tileport's or a caller's `store.db.atomic()`, is safe under concurrency."""

    store_path: object = None

    @contextlib.contextmanager
    def atomic(self):
        conn = self.conn
        if conn.in_transaction:
            with super().atomic():
                yield self
            return
        retrying("starting a write", self.store_path, lambda: conn.execute("BEGIN IMMEDIATE"))
        try:
            yield self
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        else:
            retrying("committing", self.store_path, lambda: conn.execute("COMMIT"))



def damage_is_user_error(fn):
    """A damaged store (malformed page, dropped table) is one line naming the file, never a traceback."""

    @functools.wraps(fn)
    def wrapper(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(self, *args, **kwargs)
        except sqlite3.DatabaseError as e:
            if type(e) not in (sqlite3.DatabaseError, sqlite3.OperationalError):
                raise  # integrity and programming errors are tileport bugs, not damage
            raise UserError(f"{self.path}: the store is damaged or unreadable ({e}); move it aside (tileport starts "
                            "a new one) or restore it from a backup") from None
    return wrapper


def guarded(cls: type) -> type:
    """Wrap every public method the class defines (no hand-kept list: a new method is wrapped too)."""
    for name, value in list(vars(cls).items()):
        if not name.startswith("_") and callable(value) and not isinstance(value, (staticmethod, classmethod, type)):
            setattr(cls, name, damage_is_user_error(value))
    return cls
