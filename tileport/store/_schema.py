"""The store's schema as migrations: migration i takes `PRAGMA user_version` from i to i+1. Append, never edit
(a store written by an older tileport is migrated forward on open; tests/data/stores/ holds one made by old code)."""

from __future__ import annotations

import sqlite_utils


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


def _v4(db: sqlite_utils.Database) -> None:
    """The Triton twin a conversion was started with (`tileport run OP --triton T`): stage A pairs with it on every
    run, in whichever process runs it (a resume, the dashboard's rerun); NULL: a twin is found by name."""
    db["conversions"].add_column("triton", str)


def _v5(db: sqlite_utils.Database) -> None:
    """Stage D cases from the op's own tests (source, the reference's verdict, port launches, seconds); stage E
    rows keep each side's host wall time per call and where the configuration came from."""
    for col, typ in (("source", str), ("reference", str), ("port_launches", int), ("seconds", float)):
        db["cases"].add_column(col, typ)
    for col, typ in (("host_us", str), ("source", str)):
        db["perf_rows"].add_column(col, typ)


def _v6(db: sqlite_utils.Database) -> None:
    """A failed stage D test keeps its own last words (what it printed: mismatched indices, its diffs)."""
    db["cases"].add_column("output", str)


# Migration i (0-based) takes the schema from version i to i+1. Append, never edit.
MIGRATIONS = (_v1, _v2, _v3, _v4, _v5, _v6)
SCHEMA_VERSION = len(MIGRATIONS)
