"""The store: one SQLite file (via sqlite-utils, WAL) that the CLI and the dashboard both read.

It is the single source of truth: conversions, stage runs with their commands and artifacts,
an append-only event log, and approvals. The schema is versioned (`PRAGMA user_version`)
and migrated forward on open; a store newer than this tileport is refused, not guessed at.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import sqlite3
import stat
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from tileport import limits
from tileport.errors import UserError
from tileport.records import ArtifactRecord, StageResult, sha256_file, utcnow


def _iso(ts: datetime | None) -> str | None:
    return ts.isoformat() if ts else None


def _v1(db: sqlite_utils.Database) -> None:
    db["conversions"].create(
        {
            "id": int, "op_path": str, "kernel": str, "branch": str, "worktree": str,
            "head_commit": str, "status": str, "created_at": str, "updated_at": str,
        },
        pk="id", not_null={"op_path", "status", "created_at", "updated_at"},
    )
    db["stage_runs"].create(
        {
            "id": int, "conversion_id": int, "stage": str, "attempt": int, "verdict": str,
            "fail_class": str, "commit": str, "started_at": str, "finished_at": str, "seconds": float,
            "prompt_tokens": int, "completion_tokens": int, "model_id": str, "summary": str,
        },
        pk="id", foreign_keys=[("conversion_id", "conversions", "id")],
        not_null={"conversion_id", "stage", "attempt", "verdict", "started_at"},
    )
    db["commands"].create(
        {
            "id": int, "stage_run_id": int, "seq": int, "argv": str, "cwd": str,
            "exit_code": int, "seconds": float, "timed_out": int, "output_truncated": int,
        },
        pk="id", foreign_keys=[("stage_run_id", "stage_runs", "id")], not_null={"stage_run_id", "argv", "exit_code"},
    )
    db["artifacts"].create(
        {"id": int, "stage_run_id": int, "kind": str, "path": str, "sha256": str, "bytes": int},
        pk="id", foreign_keys=[("stage_run_id", "stage_runs", "id")], not_null={"stage_run_id", "path", "sha256"},
    )
    db["events"].create(
        {"id": int, "ts": str, "conversion_id": int, "kind": str, "payload": str},
        pk="id", not_null={"ts", "kind"},
    )
    db["approvals"].create(
        {
            "id": int, "conversion_id": int, "commit": str, "approver": str, "decision": str,
            "reason": str, "ts": str,
        },
        pk="id", foreign_keys=[("conversion_id", "conversions", "id")],
        not_null={"conversion_id", "commit", "approver", "decision", "ts"},
    )
    db["stage_runs"].create_index(["conversion_id", "stage", "attempt"])
    db["events"].create_index(["conversion_id", "id"])
    # The event log is evidence: rows may be added, never changed or removed.
    db.executescript(
        """
        CREATE TRIGGER events_no_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
        CREATE TRIGGER events_no_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
        """
    )


def _v2(db: sqlite_utils.Database) -> None:
    """The pipeline's columns: where a conversion started, how each run was routed, gate evidence tables."""
    for col, typ in (("repo", str), ("base_branch", str), ("base_commit", str), ("model", str), ("error", str)):
        db["conversions"].add_column(col, typ)
    for col, typ in (("cap", int), ("routed_to", str), ("route_reason", str), ("details", str)):
        db["stage_runs"].add_column(col, typ)
    for col, typ in (("comment", str), ("gate_snapshot", str)):
        db["approvals"].add_column(col, typ)
    # Stage D: one row per correctness case (shape x dtype), so a reviewer sees every case, not a count.
    db["cases"].create(
        {"id": int, "stage_run_id": int, "name": str, "dtype": str, "shape": str, "status": str,
         "max_abs_err": float, "fail_class": str, "message": str},
        pk="id", foreign_keys=[("stage_run_id", "stage_runs", "id")], not_null={"stage_run_id", "name", "status"},
    )
    # Stage E: per-configuration device times with every raw sample, kept apart from the verdict.
    db["perf_rows"].create(
        {"id": int, "stage_run_id": int, "config": str, "ref_ms": float, "port_ms": float, "ratio": float,
         "ref_samples": str, "port_samples": str, "flags": str},
        pk="id", foreign_keys=[("stage_run_id", "stage_runs", "id")], not_null={"stage_run_id", "config"},
    )
    db["cases"].create_index(["stage_run_id"])
    db["perf_rows"].create_index(["stage_run_id"])


def _v3(db: sqlite_utils.Database) -> None:
    """Stage E rows keep each side's CUPTI launch attributes (grid, block, registers, shared memory, occupancy)."""
    db["perf_rows"].add_column("launch", str)


# Migration i (0-based) takes the schema from version i to i+1. Append, never edit.
MIGRATIONS = (_v1, _v2, _v3)
SCHEMA_VERSION = len(MIGRATIONS)


def json_column(raw: Any, path: object, where: str) -> Any:
    """A JSON column's value; a damaged one is one line naming the store and the column, not a traceback."""
    if raw is None or raw == "":
        return None
    try:
        return json.loads(raw if isinstance(raw, (str, bytes)) else str(raw))
    except (ValueError, RecursionError) as e:  # tileport wrote it (NaN included): only damage fails here
        raise UserError(f"{path}: {where} holds no valid JSON ({str(e)[:120]}); the store is damaged: move it "
                        "aside or restore it from a backup") from None


def _busy(e: sqlite3.OperationalError) -> bool:
    msg = str(e).lower()
    return "locked" in msg or "busy" in msg


def _retrying(what: str, path: object, fn):
    """Run fn, retrying while SQLite says the store is locked (another tileport writes), for at most STORE_BUSY.

    Each try already waits SQLite's busy timeout; the retries cover the cases SQLite does not wait for
    (a WAL switch, a snapshot that moved). When the budget is spent: one line, never a traceback.
    """
    budget = limits.STORE_BUSY.value
    deadline = time.monotonic() + budget
    delay = 0.01
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as e:
            if not _busy(e) or time.monotonic() > deadline:
                if _busy(e):
                    raise UserError(f"{path}: the store stayed locked by another process while {what} for longer "
                                    f"than the {limits.STORE_BUSY.describe()}; retry, or raise "
                                    f"{limits.STORE_BUSY.env}") from None
                raise
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.5)


class _Database(sqlite_utils.Database):
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
        _retrying("starting a write", self.store_path, lambda: conn.execute("BEGIN IMMEDIATE"))
        try:
            yield self
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        else:
            _retrying("committing", self.store_path, lambda: conn.execute("COMMIT"))


class Store:
    """Typed access to the tileport database; every write also appends an event.

    Safe for several processes at once (CLI runs, the runner, the dashboard): a busy timeout, every write
    transaction taken with `BEGIN IMMEDIATE` (so a writer never has to upgrade a read lock, which SQLite
    refuses without waiting), bounded retries, and a migration that re-reads the schema version under the
    write lock, so two processes opening a fresh store create the schema once.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        memory = str(path) == ":memory:"
        if not memory:
            self._check_path()
        try:
            conn = sqlite3.connect(str(path), timeout=min(30.0, limits.STORE_BUSY.value), check_same_thread=False,
                                   isolation_level=None)
            self.db = _Database(conn)
            self.db.store_path = self.path
            if not memory:
                _retrying("switching it to WAL", self.path, self._enable_wal)
            self.db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.OperationalError as e:
            raise UserError(f"{path}: cannot use the store ({e}); check the file and its directory, or point "
                            "`store` elsewhere") from None
        except sqlite3.DatabaseError as e:
            raise UserError(f"{path}: not a tileport store ({e}); move it aside or point `store` elsewhere") from None

    def _check_path(self) -> None:
        p = self.path
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"{p}: cannot create the store's directory ({e.strerror}); point `store` elsewhere") \
                from None
        try:
            st = os.stat(p)
        except FileNotFoundError:
            return
        except OSError as e:
            raise UserError(f"{p}: cannot use it as the store ({e.strerror}); point `store` elsewhere") from None
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{p}: is not a regular file (a directory, FIFO or device); point `store` at a file")

    def _enable_wal(self) -> None:
        if self.db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            self.db.execute("PRAGMA journal_mode = wal")

    def _write(self):
        """One write transaction: BEGIN IMMEDIATE (retried while busy); nested calls become savepoints."""
        return self.db.atomic()

    @property
    def schema_version(self) -> int:
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def _migrate(self) -> None:
        try:
            current = self.schema_version
        except sqlite3.DatabaseError as e:
            raise UserError(f"{self.path}: not a tileport store ({e}); move it aside or point `store` elsewhere") from None
        if current > SCHEMA_VERSION:
            raise UserError(
                f"{self.path}: store schema v{current} is newer than this tileport (v{SCHEMA_VERSION}); upgrade tileport"
            )
        if current == SCHEMA_VERSION:
            return
        with self._write():
            # Re-read under the write lock: another process may have migrated meanwhile (a race at start-up).
            current = self.schema_version
            for version in range(current, SCHEMA_VERSION):
                MIGRATIONS[version](self.db)
                self.db.execute(f"PRAGMA user_version = {version + 1}")

    def close(self) -> None:
        self.db.conn.close()

    # events ------------------------------------------------------------------------------------
    def log_event(self, kind: str, conversion_id: int | None = None, **payload: Any) -> int:
        row = {"ts": _iso(utcnow()), "conversion_id": conversion_id, "kind": kind,
               "payload": json.dumps(payload, sort_keys=True, default=str)}
        with self._write():
            return self.db["events"].insert(row).last_pk

    def events(self, conversion_id: int | None = None, after_id: int = 0) -> list[dict]:
        where, args = "id > ?", [after_id]
        if conversion_id is not None:
            where += " and conversion_id = ?"
            args.append(conversion_id)
        rows = self.db["events"].rows_where(where, args, order_by="id")
        return [{**r, "payload": json_column(r["payload"], self.path, "events.payload")} for r in rows]

    # conversions ------------------------------------------------------------------------------
    def add_conversion(self, op_path: str, kernel: str | None = None, branch: str | None = None,
                       worktree: str | None = None) -> int:
        now = _iso(utcnow())
        with self._write():
            cid = self.db["conversions"].insert({
                "op_path": op_path, "kernel": kernel, "branch": branch, "worktree": worktree,
                "head_commit": None, "status": "pending", "created_at": now, "updated_at": now,
            }).last_pk
            self.log_event("conversion.created", cid, op_path=op_path, kernel=kernel)
        return cid

    def conversion_for(self, op_path: str, kernel: str | None = None) -> int:
        """The newest conversion of this op (and kernel), created if there is none yet."""
        with self._write():  # look up and create under one lock: two runs of one op share one conversion
            rows = list(self.db["conversions"].rows_where(
                "op_path = ? and kernel is ?", [op_path, kernel], order_by="id desc", limit=1))
            return rows[0]["id"] if rows else self.add_conversion(op_path, kernel)

    def conversion(self, conversion_id: int) -> dict:
        try:
            return self.db["conversions"].get(conversion_id)
        except sqlite_utils.db.NotFoundError:
            raise UserError(f"no conversion {conversion_id}; `tileport status` lists them") from None

    def conversions(self) -> list[dict]:
        return list(self.db["conversions"].rows_where(order_by="id"))

    def update_conversion(self, conversion_id: int, **fields: Any) -> None:
        self.conversion(conversion_id)
        with self._write():
            self.db["conversions"].update(conversion_id, {**fields, "updated_at": _iso(utcnow())})
            self.log_event("conversion.updated", conversion_id, **fields)

    # stage runs -------------------------------------------------------------------------------
    def record_stage(self, conversion_id: int, result: StageResult, commit: str | None = None, *,
                     routed_to: str | None = None, route_reason: str | None = None) -> int:
        """Store one stage result with its commands and artifacts (and where the router sent the work next),
        atomically."""
        self.conversion(conversion_id)
        pinned = [self.pin(a) for a in result.artifacts]  # file copies outside the write lock
        finished = result.finished_at or utcnow()
        with self._write():
            rid = self.db["stage_runs"].insert({
                "conversion_id": conversion_id, "stage": result.stage.value, "attempt": result.attempt,
                "verdict": result.verdict, "fail_class": result.fail_class.value if result.fail_class else None,
                "commit": commit, "started_at": _iso(result.started_at), "finished_at": _iso(finished),
                "seconds": round((finished - result.started_at).total_seconds(), 4),
                "prompt_tokens": result.tokens.prompt_tokens, "completion_tokens": result.tokens.completion_tokens,
                "model_id": result.model_id, "summary": result.summary, "cap": result.cap,
                "routed_to": routed_to, "route_reason": route_reason,
                "details": json.dumps(result.details, sort_keys=True, default=str) if result.details else None,
            }).last_pk
            if result.commands:
                self.db["commands"].insert_all(
                    {"stage_run_id": rid, "seq": i, "argv": json.dumps(c.argv), "cwd": c.cwd,
                     "exit_code": c.exit_code, "seconds": c.seconds, "timed_out": int(c.timed_out),
                     "output_truncated": int(c.output_truncated)} for i, c in enumerate(result.commands)
                )
            if pinned:
                self.db["artifacts"].insert_all({"stage_run_id": rid, **a.model_dump()} for a in pinned)
            self.log_event("stage.finished", conversion_id, stage=result.stage.value, attempt=result.attempt,
                           verdict=result.verdict, stage_run_id=rid, routed_to=routed_to)
        return rid

    @property
    def evidence_dir(self) -> Path | None:
        """Content-addressed copies of every artifact a stage run points at (beside the store file)."""
        return None if str(self.path) == ":memory:" else self.path.absolute().parent / "evidence"

    def pin(self, art: ArtifactRecord) -> ArtifactRecord:
        """The artifact with `path` moved to an immutable, content-addressed copy: evidence/<sha[:2]>/<sha>/<name>.

        Later runs overwrite out/<op>/..., so a row pointing there would stop matching its sha256; the copy
        never changes (same content, same path; a copy is made once per content). A file that is missing or
        already changed since it was hashed is recorded as given: there is nothing true left to pin.
        """
        root = self.evidence_dir
        src = Path(art.path)
        if root is None or not src.is_file():
            return art
        dest = root / art.sha256[:2] / art.sha256 / src.name
        try:
            if not dest.is_file():
                dest.parent.mkdir(parents=True, exist_ok=True)
                tmp = dest.parent / f".{src.name}.{os.getpid()}.tmp"
                shutil.copyfile(src, tmp)
                if sha256_file(tmp) != art.sha256:
                    tmp.unlink()
                    return art
                os.chmod(tmp, 0o444)
                os.replace(tmp, dest)
        except OSError:
            return art
        return art.model_copy(update={"path": str(dest)})

    def latest_verdicts(self, conversion_id: int) -> dict[str, dict]:
        """Stage letter -> its newest run (what the dashboard and `tileport status` show)."""
        latest: dict[str, dict] = {}
        for run in self.stage_runs(conversion_id):
            latest[run["stage"]] = run
        return latest

    def stage_runs(self, conversion_id: int) -> list[dict]:
        return list(self.db["stage_runs"].rows_where("conversion_id = ?", [conversion_id], order_by="id"))

    def stage_commands(self, stage_run_id: int) -> list[dict]:
        rows = self.db["commands"].rows_where("stage_run_id = ?", [stage_run_id], order_by="seq")
        return [{**r, "argv": json_column(r["argv"], self.path, "commands.argv")} for r in rows]

    def stage_artifacts(self, stage_run_id: int) -> list[dict]:
        return list(self.db["artifacts"].rows_where("stage_run_id = ?", [stage_run_id], order_by="id"))

    def attempts(self, conversion_id: int, stage: str) -> int:
        return self.db.execute(
            "select count(*) from stage_runs where conversion_id = ? and stage = ?", [conversion_id, stage]
        ).fetchone()[0]

    # approvals ---------------------------------------------------------------------------------
    def record_approval(self, conversion_id: int, commit: str, approver: str, decision: str,
                        reason: str | None = None, *, comment: str | None = None,
                        gate_snapshot: list | dict | None = None) -> int:
        if decision not in ("approve", "reject", "override"):
            raise UserError(f"decision must be approve, reject or override, not {decision!r}")
        if decision == "override" and not (reason and reason.strip()):
            raise UserError("an override needs a reason: pass --reason \"...\"")
        self.conversion(conversion_id)
        with self._write():
            aid = self.db["approvals"].insert({
                "conversion_id": conversion_id, "commit": commit, "approver": approver,
                "decision": decision, "reason": reason, "ts": _iso(utcnow()), "comment": comment,
                "gate_snapshot": json.dumps(gate_snapshot, sort_keys=True, default=str)
                if gate_snapshot is not None else None,
            }).last_pk
            self.log_event("approval." + decision, conversion_id, commit=commit, approver=approver, reason=reason)
        return aid

    def approvals(self, conversion_id: int) -> list[dict]:
        return list(self.db["approvals"].rows_where("conversion_id = ?", [conversion_id], order_by="id"))

    # gate evidence (stages D and E) --------------------------------------------------------------
    def add_cases(self, stage_run_id: int, cases: list[Any]) -> None:
        """One row per correctness case of a stage-D run (objects with name, dtype, shape, status,
        max_abs_err, fail_class, message: tileport.validators.gpu.Case)."""
        with self.db.atomic():
            self.db["cases"].insert_all(
                {"stage_run_id": stage_run_id, "name": c.name, "dtype": c.dtype,
                 "shape": json.dumps(c.shape, sort_keys=True), "status": c.status, "max_abs_err": c.max_abs_err,
                 "fail_class": c.fail_class, "message": c.message} for c in cases)

    def cases(self, stage_run_id: int) -> list[dict]:
        rows = self.db["cases"].rows_where("stage_run_id = ?", [stage_run_id], order_by="id")
        return [{**r, "shape": json.loads(r["shape"]) if r["shape"] else {}} for r in rows]

    def add_perf_rows(self, stage_run_id: int, rows: list[Any]) -> None:
        """One row per configuration of a stage-E run with every raw sample (tileport.validators.gpu.PerfRow)."""
        with self.db.atomic():
            self.db["perf_rows"].insert_all(
                {"stage_run_id": stage_run_id, "config": r.config, "ref_ms": r.ref_ms, "port_ms": r.port_ms,
                 "ratio": r.ratio, "ref_samples": json.dumps(r.ref_samples), "port_samples": json.dumps(r.port_samples),
                 "flags": json.dumps(r.flags), "launch": json.dumps(getattr(r, "launch", None) or {})} for r in rows)

    def perf_rows(self, stage_run_id: int) -> list[dict]:
        rows = self.db["perf_rows"].rows_where("stage_run_id = ?", [stage_run_id], order_by="id")
        return [{**r, **{k: json.loads(r[k]) if r[k] else [] for k in ("ref_samples", "port_samples", "flags")},
                 "launch": json.loads(r["launch"]) if r.get("launch") else {}} for r in rows]

def _damage_is_user_error(fn):
    """A damaged store (malformed page, dropped table) is one line naming the file, never a traceback."""
    import functools

    @functools.wraps(fn)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(self, *args, **kwargs)
        except sqlite3.DatabaseError as e:
            if type(e) not in (sqlite3.DatabaseError, sqlite3.OperationalError):
                raise  # integrity and programming errors are tileport bugs, not damage
            raise UserError(f"{self.path}: the store is damaged or unreadable ({e}); move it aside (tileport starts "
                            "a new one) or restore it from a backup") from None
    return wrapper


for _name in ("log_event", "events", "add_conversion", "conversion_for", "conversion", "conversions",
              "update_conversion", "record_stage", "latest_verdicts", "stage_runs", "stage_commands",
              "stage_artifacts", "attempts", "record_approval", "approvals",
              "add_cases", "cases", "add_perf_rows", "perf_rows"):
    setattr(Store, _name, _damage_is_user_error(getattr(Store, _name)))
