"""The one write path of a stage run: `record_run`. `tileport run`, `analyze`, `build-rust`, `gpu ingest` and the
dashboard all come through it, so a stage run looks the same whoever made it.

One transaction holds the run row, its commands, its pinned artifacts, its correctness cases and perf rows, the
`stage.finished` event and (optionally) the conversion's new head, and the attempt number is counted inside that
same transaction: two writers recording the same stage at once get attempts n and n+1, never n twice, and a
reader never sees a run without its cases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from tileport.records import StageResult, utcnow
from tileport.store._db import to_json
from tileport.store.queries import attempts

if TYPE_CHECKING:
    from tileport.store._store import Store


@dataclass(frozen=True)
class RecordedRun:
    run_id: int
    conversion_id: int
    attempt: int


def _iso(ts) -> str | None:
    return ts.isoformat() if ts else None


def insert_cases(db, stage_run_id: int, cases: Iterable[Any]) -> None:
    """Stage D: one row per correctness case (objects with name, dtype, shape, status, max_abs_err, fail_class,
    message: tileport.validators.gpu.Case)."""
    db["cases"].insert_all(
        {"stage_run_id": stage_run_id, "name": c.name, "dtype": c.dtype, "shape": to_json(c.shape),
         "status": c.status, "max_abs_err": c.max_abs_err, "fail_class": c.fail_class, "message": c.message,
         "source": getattr(c, "source", None), "reference": getattr(c, "reference", None),
         "port_launches": getattr(c, "port_launches", None), "seconds": getattr(c, "seconds", None),
         "output": getattr(c, "output", None) or None}
        for c in cases)


def insert_perf_rows(db, stage_run_id: int, rows: Iterable[Any]) -> None:
    """Stage E: one row per configuration with every raw sample (tileport.validators.gpu.PerfRow)."""
    db["perf_rows"].insert_all(
        {"stage_run_id": stage_run_id, "config": r.config, "ref_ms": r.ref_ms, "port_ms": r.port_ms,
         "ratio": r.ratio, "ref_samples": to_json(list(r.ref_samples)), "port_samples": to_json(list(r.port_samples)),
         "flags": to_json(list(r.flags)), "launch": to_json(getattr(r, "launch", None) or {}),
         "host_us": to_json(getattr(r, "host_us", None) or {}), "source": getattr(r, "source", None)} for r in rows)


def record_run(store: "Store", conversion_id: int, result: StageResult, *, commit: str | None = None,
               routed_to: str | None = None, route_reason: str | None = None, cases: Iterable[Any] = (),
               perf_rows: Iterable[Any] = (), head: bool = False, number: bool = True,
               started_event: dict[str, Any] | None = None) -> RecordedRun:
    """Record one finished stage run in one transaction (see the module docstring).

    number: count the attempt here, under the write lock (entry points that run one stage); False keeps
    `result.attempt` (the runner, whose attempt is already in the commit's trailers). head: also move the
    conversion's `head_commit` to `commit`. started_event: also log `stage.started` with these fields first
    (an entry point that had no earlier moment to say it started).
    """
    store.conversion(conversion_id)
    pinned = [store.pin(a) for a in result.artifacts]  # file copies outside the write lock
    finished = result.finished_at or utcnow()
    db = store.db
    with store._write():
        attempt = attempts(store, conversion_id, result.stage.value) + 1 if number else result.attempt
        if started_event is not None:
            store.log_event("stage.started", conversion_id, stage=result.stage.value, attempt=attempt,
                            **started_event)
        rid = db["stage_runs"].insert({
            "conversion_id": conversion_id, "stage": result.stage.value, "attempt": attempt,
            "verdict": result.verdict, "fail_class": result.fail_class.value if result.fail_class else None,
            "commit": commit, "started_at": _iso(result.started_at), "finished_at": _iso(finished),
            "seconds": round((finished - result.started_at).total_seconds(), 4),
            "prompt_tokens": result.tokens.prompt_tokens, "completion_tokens": result.tokens.completion_tokens,
            "model_id": result.model_id, "summary": result.summary, "cap": result.cap,
            "routed_to": routed_to, "route_reason": route_reason,
            "details": to_json(result.details) if result.details else None,
        }).last_pk
        if result.commands:
            db["commands"].insert_all(
                {"stage_run_id": rid, "seq": i, "argv": to_json(c.argv), "cwd": c.cwd,
                 "exit_code": c.exit_code, "seconds": c.seconds, "timed_out": int(c.timed_out),
                 "output_truncated": int(c.output_truncated)} for i, c in enumerate(result.commands))
        if pinned:
            db["artifacts"].insert_all({"stage_run_id": rid, **a.model_dump()} for a in pinned)
        insert_cases(db, rid, cases)
        insert_perf_rows(db, rid, perf_rows)
        store.log_event("stage.finished", conversion_id, stage=result.stage.value, attempt=attempt,
                        verdict=result.verdict, stage_run_id=rid, routed_to=routed_to)
        if head and commit:
            store.update_conversion(conversion_id, head_commit=commit)
    return RecordedRun(rid, conversion_id, attempt)


def record_standalone(store: "Store", op_path: str, kernel: str | None, result: StageResult,
                      **kw: Any) -> RecordedRun:
    """A stage run outside `tileport run` (`analyze`, `build-rust`): recorded on the op's newest conversion that has
    no worktree (never on a `tileport run` conversion, whose attempts the router counts), as its next attempt."""
    with store._write():
        rows = list(store.db["conversions"].rows_where(
            "op_path = ? and kernel is ? and worktree is null", [op_path, kernel], order_by="id desc", limit=1))
        cid = rows[0]["id"] if rows else store.add_conversion(op_path, kernel)
        return record_run(store, cid, result, started_event={"source": "standalone"}, **kw)
