"""The store: one SQLite file (via sqlite-utils, WAL) that the CLI and the dashboard both read.

It is the single source of truth: conversions, stage runs with their commands and artifacts,
an append-only event log, and approvals. The schema is versioned (`PRAGMA user_version`)
and migrated forward on open; a store newer than this tileport is refused, not guessed at.
Stage runs are written by `store.runs.record_run` only; reads for status and the dashboard are `store.queries`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

import sqlite_utils

from tileport import limits
from tileport.errors import UserError
from tileport.records import ApprovalRecord, ArtifactRecord, StageResult, sha256_file, utcnow
from tileport.store._db import Database, guarded, json_column, retrying, to_json
from tileport.store._schema import MIGRATIONS, SCHEMA_VERSION


def _iso(ts: datetime | None) -> str | None:
    return ts.isoformat() if ts else None


@guarded
class Store:
    """Typed access to the tileport database; every write also appends an event.

    Safe for several processes at once (CLI runs, the runner, the dashboard): a busy timeout, every write
    transaction taken with `BEGIN IMMEDIATE` (so a writer never has to upgrade a read lock, which SQLite
    refuses without waiting), bounded retries, and a migration that re-reads the schema version under the
    write lock, so two processes opening a fresh store create the schema once.
    """

    def __init__(self, path: str | Path, *, fast_commits: bool = False):
        """fast_commits: WAL with synchronous=NORMAL (a commit survives a killed process, kill -9 included; only an
        OS crash or power loss may drop the newest transactions; each commit skips an fsync)."""
        self.path = Path(path)
        memory = str(path) == ":memory:"
        if not memory:
            self._check_path()
        try:
            conn = sqlite3.connect(str(path), timeout=min(30.0, limits.STORE_BUSY.value), check_same_thread=False,
                                   isolation_level=None)
            self.db = Database(conn)
            self.db.store_path = self.path
            if not memory:
                retrying("switching it to WAL", self.path, self._enable_wal)
            self.db.execute("PRAGMA foreign_keys = ON")
            if fast_commits:
                self.db.execute("PRAGMA synchronous = NORMAL")
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

    def transaction(self):
        """Several writes as one (`with store.transaction():`): the store's own BEGIN IMMEDIATE transaction, retried
        while another writer holds the lock; the group lands whole or not at all (an exception rolls it back)."""
        return self._write()

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

    def __enter__(self) -> "Store":
        """`with Store(path) as store:` closes it when the block ends, however it ends."""
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # events ------------------------------------------------------------------------------------
    def log_event(self, kind: str, conversion_id: int | None = None, **payload: Any) -> int:
        row = {"ts": _iso(utcnow()), "conversion_id": conversion_id, "kind": kind,
               "payload": to_json(payload)}
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
        """Store one stage result (see `store.runs.record_run`, the one write path); returns its id."""
        from tileport.store.runs import record_run

        return record_run(self, conversion_id, result, commit=commit, routed_to=routed_to,
                          route_reason=route_reason, number=False).run_id

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
                "gate_snapshot": to_json(gate_snapshot) if gate_snapshot is not None else None,
            }).last_pk
            self.log_event("approval." + decision, conversion_id, commit=commit, approver=approver, reason=reason)
        return aid

    @contextlib.contextmanager
    def deciding(self, conversion_id: int, commit: str, approver: str, decision: str, reason: str | None = None, *,
                 comment: str | None = None, gate_snapshot: dict | None = None,
                 status: str | None = None) -> Iterator[ApprovalRecord]:
        """One transaction for a human decision: its approval row and (given `status`) the conversion's new status.
        Yields the decision as recorded, so the caller writes what must exist before the row commits (the git
        note) inside the block; an exception there rolls both back: neither is kept without the other."""
        from tileport.store.queries import approval

        with self._write():
            aid = self.record_approval(conversion_id, commit, approver, decision, reason, comment=comment,
                                       gate_snapshot=gate_snapshot)
            rec = approval(self, aid)
            assert rec is not None
            yield rec
            if status is not None:
                self.update_conversion(conversion_id, status=status)

    def approvals(self, conversion_id: int) -> list[dict]:
        return list(self.db["approvals"].rows_where("conversion_id = ?", [conversion_id], order_by="id"))

    # gate evidence (stages D and E) --------------------------------------------------------------
    def add_cases(self, stage_run_id: int, cases: list[Any]) -> None:
        """One row per correctness case of a stage-D run (tileport.validators.gpu.Case); prefer passing them to
        `record_run`, which writes them in the run's own transaction."""
        from tileport.store.runs import insert_cases

        with self._write():
            insert_cases(self.db, stage_run_id, cases)

    def cases(self, stage_run_id: int) -> list[dict]:
        rows = self.db["cases"].rows_where("stage_run_id = ?", [stage_run_id], order_by="id")
        return [{**r, "shape": json_column(r["shape"], self.path, "cases.shape") or {}} for r in rows]

    def add_perf_rows(self, stage_run_id: int, rows: list[Any]) -> None:
        """One row per configuration of a stage-E run with every raw sample (tileport.validators.gpu.PerfRow);
        prefer passing them to `record_run`."""
        from tileport.store.runs import insert_perf_rows

        with self._write():
            insert_perf_rows(self.db, stage_run_id, rows)

    def perf_rows(self, stage_run_id: int) -> list[dict]:
        rows = self.db["perf_rows"].rows_where("stage_run_id = ?", [stage_run_id], order_by="id")
        return [{**r, **{k: json_column(r[k], self.path, f"perf_rows.{k}") or [] for k in
                         ("ref_samples", "port_samples", "flags")},
                 "launch": json_column(r.get("launch"), self.path, "perf_rows.launch") or {}} for r in rows]
