"""The one read model: what `tileport status`, the dashboard, the runner's replay and the merge gates read, as
typed rows (pydantic). No caller outside `store/` writes SQL or decodes a JSON column; stage details come out typed
per stage (records.details), leniently for rows written by older tileports."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from tileport.records import (ApprovalRecord, Decision, GateRecord, IRPair, PerfDetails, Stage, StageDetails,
                              StageResult, details_of)
from tileport.records.rounds import HUMAN_EDIT, round_start
from tileport.store._db import json_column

if TYPE_CHECKING:
    from tileport.store._store import Store

STAGE_ORDER: tuple[str, ...] = tuple(s.value for s in Stage)


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)


class StageRunRow(_Row):
    """One stage attempt as recorded."""

    id: int
    conversion_id: int
    stage: str
    attempt: int
    cap: int | None = None
    verdict: str
    fail_class: str | None = None
    commit: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    seconds: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_id: str | None = None
    summary: str = ""
    routed_to: str | None = None
    route_reason: str | None = None
    details: StageDetails
    raw_details: dict[str, Any] = Field(default_factory=dict)  # as stored (the gates' evidence digest, `status`)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def of(cls, result: StageResult, *, id: int = 0, conversion_id: int = 0, **fields: Any) -> "StageRunRow":
        """The row `record_run` would store for `result` (fakes and tests that hand a stage its history)."""
        return cls(id=id, conversion_id=conversion_id, stage=result.stage.value, attempt=result.attempt,
                   cap=result.cap, verdict=result.verdict,
                   fail_class=result.fail_class.value if result.fail_class else None, model_id=result.model_id,
                   summary=result.summary, prompt_tokens=result.tokens.prompt_tokens,
                   completion_tokens=result.tokens.completion_tokens, details=result.typed,
                   raw_details=dict(result.details), **fields)


class CommandRow(_Row):
    seq: int
    argv: list[str]
    cwd: str | None = None
    exit_code: int
    seconds: float | None = None
    timed_out: bool = False
    output_truncated: bool = False


class ArtifactRow(_Row):
    kind: str | None = None
    path: str
    sha256: str
    bytes: int | None = None


class ConversionSummary(_Row):
    """One conversion as the list views show it: newest stage, verdict per stage, attempts, perf, approval."""

    id: int
    op_path: str
    kernel: str | None = None
    status: str = "?"
    branch: str | None = None
    worktree: str | None = None
    repo: str | None = None
    base_branch: str | None = None
    base_commit: str | None = None
    head_commit: str | None = None
    model: str | None = None
    error: str | None = None
    updated_at: str = ""
    stage: str | None = None  # the newest run's stage and verdict, and where the router sent the work
    verdict: str | None = None
    next: str | None = None
    fail_class: str | None = None  # the newest run's fail class and summary
    summary: str = ""
    stages: dict[str, str] = Field(default_factory=dict)  # stage -> its newest verdict
    attempts: dict[str, int] = Field(default_factory=dict)  # stage -> attempts the caps count now (this round)
    round_commit: str | None = None  # the person's edit this round of the caps started at (its B run's commit)
    perf: PerfDetails | None = None  # the newest E run's details: geomean, worst, config_max as recorded
    approval: str | None = None  # the newest decision (approve / reject / override) and the commit it was for
    approval_commit: str | None = None

    @property
    def op(self) -> str:
        return Path(self.op_path).stem if self.op_path else "?"

    @property
    def geomean(self) -> float | None:
        return self.perf.geomean if self.perf else None

    @property
    def worst_ratio(self) -> float | None:
        return self.perf.worst_ratio if self.perf else None

    def slow(self, current_config_max: float | None = None) -> bool | None:
        """Whether the newest E run's slowest configuration broke the bound recorded with that run (today's
        `[perf] config_max` only for a run recorded before the bound was kept)."""
        return self.perf.over_config_max(current_config_max) if self.perf else None

    def attempts_text(self, caps: dict[str, int]) -> dict[str, str]:
        return {s: f"{self.attempts[s]}/{caps.get(s, 0)}" for s in STAGE_ORDER if self.attempts.get(s)}


class PerfRowRow(_Row):
    config: str
    ref_ms: float | None = None
    port_ms: float | None = None
    ratio: float | None = None
    flags: list[str] = Field(default_factory=list)
    launch: dict[str, Any] = Field(default_factory=dict)
    ref_samples: list[float] = Field(default_factory=list)
    port_samples: list[float] = Field(default_factory=list)
    host_us: dict[str, Any] = Field(default_factory=dict)  # side -> {call_us, return_us, burst_us}: host_times
    source: str | None = None  # harness | capture

    def host(self, side: str, key: str = "return_us") -> float | None:
        v = (self.host_us.get(side) or {}).get(key) if isinstance(self.host_us.get(side), dict) else None
        return float(v) if isinstance(v, (int, float)) else None


class CaseRow(_Row):
    """One correctness case of a D run: a declared shape x dtype, or one of the op's own tests."""

    name: str
    dtype: str | None = None
    status: str
    fail_class: str | None = None
    message: str = ""
    max_abs_err: float | None = None
    source: str | None = None
    reference: str | None = None
    port_launches: int | None = None
    seconds: float | None = None
    output: str = ""  # a failed test's own last words


class PerfRun(_Row):
    """The newest E run of a conversion: its verdict, typed details and one row per configuration."""

    run: StageRunRow
    details: PerfDetails
    rows: list[PerfRowRow]


class EventRow(_Row):
    id: int
    ts: str
    conversion_id: int | None = None
    kind: str
    payload: dict[str, Any] = Field(default_factory=dict)


class RunningStageRow(_Row):
    """The attempt a running conversion is in now: its newest lifecycle event is `stage.started`."""

    conversion_id: int
    stage: str
    attempt: int = 0
    cap: int | None = None
    started: str  # the event's timestamp (ISO 8601)


class ConversionDetail(_Row):
    summary: ConversionSummary
    conversion: dict[str, Any]
    runs: list[tuple[StageRunRow, list[CommandRow], list[ArtifactRow]]]
    approvals: list[dict[str, Any]]


# ------------------------------------------------------------------------------------------------------ reads
def _dicts(store: "Store", sql: str, args: list | tuple = ()) -> list[dict[str, Any]]:
    cur = store.db.execute(sql, list(args))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def _run(store: "Store", r: dict[str, Any]) -> StageRunRow:
    raw = json_column(r.get("details"), store.path, "stage_runs.details")
    raw = raw if isinstance(raw, dict) else {}
    return StageRunRow(**{**r, "details": details_of(r["stage"], raw), "raw_details": raw,
                          "prompt_tokens": r.get("prompt_tokens") or 0,
                          "completion_tokens": r.get("completion_tokens") or 0, "summary": r.get("summary") or ""})


def stage_runs(store: "Store", conversion_id: int, stage: str | None = None) -> list[StageRunRow]:
    """Every stage attempt of one conversion (or of one of its stages), oldest first."""
    where, args = "conversion_id = ?", [conversion_id]
    if stage is not None:
        where, args = where + " and stage = ?", args + [stage]
    return [_run(store, r) for r in _dicts(store, f"select * from stage_runs where {where} order by id", args)]


def attempts(store: "Store", conversion_id: int, stage: str) -> int:
    """Attempts of one stage recorded so far (the next is this + 1)."""
    return store.db.execute("select count(*) from stage_runs where conversion_id = ? and stage = ?",
                            [conversion_id, stage]).fetchone()[0]


def stage_run(store: "Store", run_id: int) -> StageRunRow | None:
    rows = _dicts(store, "select * from stage_runs where id = ?", [run_id])
    return _run(store, rows[0]) if rows else None


def commands(store: "Store", run_id: int) -> list[CommandRow]:
    return [CommandRow(**{**r, "argv": json_column(r["argv"], store.path, "commands.argv") or [],
                          "timed_out": bool(r.get("timed_out")), "output_truncated": bool(r.get("output_truncated"))})
            for r in _dicts(store, "select * from commands where stage_run_id = ? order by seq", [run_id])]


def artifacts(store: "Store", run_id: int) -> list[ArtifactRow]:
    return [ArtifactRow(**r) for r in _dicts(store, "select * from artifacts where stage_run_id = ? order by id",
                                             [run_id])]


def perf_rows(store: "Store", run_id: int) -> list[PerfRowRow]:
    out = []
    for r in _dicts(store, "select * from perf_rows where stage_run_id = ? order by id", [run_id]):
        dec = {k: json_column(r.get(k), store.path, f"perf_rows.{k}") for k in
               ("flags", "launch", "ref_samples", "port_samples", "host_us")}
        out.append(PerfRowRow(config=r["config"], ref_ms=r.get("ref_ms"), port_ms=r.get("port_ms"),
                              ratio=r.get("ratio"), flags=[str(f) for f in dec["flags"] or []],
                              launch=dec["launch"] if isinstance(dec["launch"], dict) else {},
                              ref_samples=dec["ref_samples"] or [], port_samples=dec["port_samples"] or [],
                              host_us=dec["host_us"] if isinstance(dec["host_us"], dict) else {},
                              source=r.get("source")))
    return out


def cases(store: "Store", run_id: int) -> list[CaseRow]:
    """A D run's cases in the order recorded (the op's tests with the reference's verdict and the port's launches)."""
    return [CaseRow(name=r["name"], dtype=r.get("dtype"), status=r["status"], fail_class=r.get("fail_class"),
                    message=r.get("message") or "", max_abs_err=r.get("max_abs_err"), source=r.get("source"),
                    reference=r.get("reference"), port_launches=r.get("port_launches"), seconds=r.get("seconds"),
                    output=r.get("output") or "")
            for r in _dicts(store, "select * from cases where stage_run_id = ? order by id", [run_id])]


def newest_perf(store: "Store", conversion_id: int) -> PerfRun | None:
    """The newest E run with its rows (the dashboard's performance view)."""
    runs = stage_runs(store, conversion_id, Stage.PERFORMANCE.value)
    if not runs:
        return None
    run = runs[-1]
    return PerfRun(run=run, details=run.details, rows=perf_rows(store, run.id))  # type: ignore[arg-type]


def perf_geomean(store: "Store", run_id: int) -> float | None:
    """An E run's geomean: its recorded figure, else the geomean of its positive per-configuration ratios."""
    run = stage_run(store, run_id)
    if run is not None and isinstance(run.details, PerfDetails) and run.details.geomean is not None:
        return run.details.geomean
    ratios = [r.ratio for r in perf_rows(store, run_id) if r.ratio and r.ratio > 0]
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else None


def ir_pairs(store: "Store", conversion_id: int) -> list[IRPair]:
    """Reference/port Tile IR pairs of the newest B run that has them (its IR self-check)."""
    for run in reversed(stage_runs(store, conversion_id, Stage.WRITE_KERNEL.value)):
        pairs = getattr(run.details, "ir_pairs", None)
        if pairs:
            return list(pairs)
    return []


def conversion_summaries(store: "Store", ids: list[int] | None = None) -> list[ConversionSummary]:
    """Every conversion (or just `ids`) with its newest stage, verdicts, attempts, perf and approval, in a few
    queries whatever the number of runs."""
    if ids is not None and not ids:
        return []
    where, args = ("", []) if ids is None else (f" where id in ({','.join('?' * len(ids))})", list(ids))
    convs = _dicts(store, f"select * from conversions{where} order by id", args)
    if not convs:
        return []
    idset = ",".join(str(int(c["id"])) for c in convs)
    counts = _round_counts(store, idset)
    stages: dict[int, dict[str, str]] = {}
    for cid, stage, verdict in store.db.execute(
            f"select s.conversion_id, s.stage, s.verdict from stage_runs s join (select max(id) m from stage_runs "
            f"where conversion_id in ({idset}) group by conversion_id, stage) t on s.id = t.m"):
        stages.setdefault(cid, {})[stage] = verdict
    last: dict[int, tuple[str, str, str | None, str | None, str]] = {}
    for cid, stage, verdict, routed, fail_class, summary in store.db.execute(
            f"select s.conversion_id, s.stage, s.verdict, s.routed_to, s.fail_class, s.summary from stage_runs s "
            f"join (select max(id) m from stage_runs where conversion_id in ({idset}) group by conversion_id) t "
            f"on s.id = t.m"):
        last[cid] = (stage, verdict, routed, fail_class, summary or "")
    perf: dict[int, PerfDetails] = {}
    for cid, raw in store.db.execute(
            f"select s.conversion_id, s.details from stage_runs s join (select max(id) m from stage_runs where "
            f"stage = 'E' and conversion_id in ({idset}) group by conversion_id) t on s.id = t.m"):
        perf[cid] = details_of(Stage.PERFORMANCE, json_column(raw, store.path, "stage_runs.details"))  # type: ignore[assignment]
    appr: dict[int, tuple[str, str]] = {}
    for cid, decision, commit in store.db.execute(
            f"select a.conversion_id, a.decision, a.\"commit\" from approvals a join (select max(id) m from "
            f"approvals where conversion_id in ({idset}) group by conversion_id) t on a.id = t.m"):
        appr[cid] = (decision, commit)
    out = []
    for c in convs:
        cid = c["id"]
        stage, verdict, routed, fail_class, summary = last.get(cid, (None, None, None, None, ""))
        decision, commit = appr.get(cid, (None, None))
        attempts, round_commit = counts.get(cid, ({}, None))
        fields = {k: c.get(k) for k in ("kernel", "branch", "worktree", "repo", "base_branch", "base_commit",
                                         "head_commit", "model", "error")}
        out.append(ConversionSummary(
            id=cid, op_path=c.get("op_path") or "", status=c.get("status") or "?",
            updated_at=c.get("updated_at") or "", stage=stage, verdict=verdict, next=routed,
            fail_class=fail_class, summary=summary,
            stages={s: stages[cid][s] for s in STAGE_ORDER if s in stages.get(cid, {})},
            attempts=attempts, round_commit=round_commit, perf=perf.get(cid), approval=decision,
            approval_commit=commit, **fields))
    return out


def _round_counts(store: "Store", idset: str) -> dict[int, tuple[dict[str, int], str | None]]:
    """conversion id -> (stage -> attempts the caps count now, the commit of the person's edit the round started
    at): the runs of the router's current round (from the newest run that judged a person's edit,
    `records.rounds.round_start`), not every run ever recorded."""
    runs: dict[int, list[tuple[str, str | None, str | None]]] = {}
    for cid, stage, commit, raw in store.db.execute(  # only details that name a source are read (and typed)
            "select conversion_id, stage, \"commit\", case when details like '%\"source\"%' then details end "
            f"from stage_runs where conversion_id in ({idset}) order by id"):
        details = details_of(stage, json_column(raw, store.path, "stage_runs.details")) if raw else None
        runs.setdefault(cid, []).append((stage, commit, details.source if details is not None else None))
    out: dict[int, tuple[dict[str, int], str | None]] = {}
    for cid, seq in runs.items():
        start = round_start([src for _, _, src in seq])
        n: dict[str, int] = {}
        for stage, _, _ in seq[start:]:
            n[stage] = n.get(stage, 0) + 1
        out[cid] = (n, seq[start][1] if seq[start][2] == HUMAN_EDIT else None)
    return out


def conversion_summary(store: "Store", conversion_id: int) -> ConversionSummary:
    store.conversion(conversion_id)  # a missing id is the one-line error
    return conversion_summaries(store, [conversion_id])[0]


def conversion_detail(store: "Store", conversion_id: int) -> ConversionDetail:
    """One conversion's full record: every run with its commands and artifacts, and the approvals."""
    summary = conversion_summary(store, conversion_id)
    runs = [(r, commands(store, r.id), artifacts(store, r.id)) for r in stage_runs(store, conversion_id)]
    return ConversionDetail(summary=summary, conversion=store.conversion(conversion_id), runs=runs,
                            approvals=store.approvals(conversion_id))


def _approval(store: "Store", r: dict[str, Any]) -> ApprovalRecord:
    """A decision row with the gate snapshot the person saw; lenient for old rows (a snapshot stored as a bare list
    of gates, a gate that no longer validates: dropped, not fatal)."""
    snap = json_column(r.get("gate_snapshot"), store.path, "approvals.gate_snapshot")
    if isinstance(snap, list):
        snap = {"gates": snap}
    snap = snap if isinstance(snap, dict) else {}
    gates = []
    for g in snap.get("gates") or []:
        try:
            gates.append(GateRecord.model_validate(g))
        except ValueError:
            continue
    overrides = snap.get("overrides")
    return ApprovalRecord(id=r["id"], conversion_id=r["conversion_id"], commit=r["commit"], approver=r["approver"],
                          decision=Decision(r["decision"]), ts=r["ts"], comment=r.get("comment"),
                          reason=r.get("reason"), gates=gates,
                          overrides=[str(o) for o in overrides] if isinstance(overrides, list) else [])


def approvals(store: "Store", conversion_id: int) -> list[ApprovalRecord]:
    """Every decision on one conversion, oldest first, typed."""
    return [_approval(store, r) for r in
            _dicts(store, "select * from approvals where conversion_id = ? order by id", [conversion_id])]


def approval(store: "Store", approval_id: int) -> ApprovalRecord | None:
    rows = _dicts(store, "select * from approvals where id = ?", [approval_id])
    return _approval(store, rows[0]) if rows else None


def newest_event_id(store: "Store") -> int:
    return store.db.execute("select coalesce(max(id), 0) from events").fetchone()[0]


def events_after(store: "Store", after_id: int, limit: int = 50_000) -> tuple[int, set[int | None], list[EventRow]]:
    """Events after `after_id`: (newest id, conversion ids they touch, the events)."""
    rows = _dicts(store, "select id, ts, conversion_id, kind, payload from events where id > ? order by id limit ?",
                  [after_id, limit])
    if not rows:
        return after_id, set(), []
    events = [EventRow(**{**r, "payload": json_column(r["payload"], store.path, "events.payload") or {}})
              for r in rows]
    return rows[-1]["id"], {e.conversion_id for e in events}, events


LIFECYCLE = ("stage.started", "stage.finished", "stage.interrupted")


def running_stages(store: "Store", ids: list[int]) -> dict[int, RunningStageRow]:
    """For each of `ids` whose status is running, the stage attempt it runs now (its newest lifecycle event is
    `stage.started`; one that finished or was interrupted last is between stages)."""
    if not ids:
        return {}
    marks, kinds = ",".join("?" * len(ids)), ",".join("?" * len(LIFECYCLE))
    rows = _dicts(store,
                  f"select e.conversion_id, e.kind, e.ts, e.payload from events e join (select max(id) m from events "
                  f"where kind in ({kinds}) and conversion_id in ({marks}) group by conversion_id) t on e.id = t.m "
                  f"join conversions c on c.id = e.conversion_id where c.status = 'running'",
                  [*LIFECYCLE, *ids])
    out = {}
    for r in rows:
        if r["kind"] != "stage.started":
            continue
        p = json_column(r["payload"], store.path, "events.payload")
        p = p if isinstance(p, dict) else {}
        cap = p.get("cap")
        out[r["conversion_id"]] = RunningStageRow(
            conversion_id=r["conversion_id"], stage=str(p.get("stage", "?")), attempt=int(p.get("attempt") or 0),
            cap=cap if isinstance(cap, int) else None, started=r["ts"])
    return out


class InterruptedAttempt(_Row):
    """A stage attempt that was stopped before it recorded a run (event `stage.interrupted`)."""

    event_id: int
    ts: str
    stage: str
    attempt: int = 0
    seconds: float | None = None
    why: str = ""


def interrupted_attempts(store: "Store", conversion_id: int) -> list[InterruptedAttempt]:
    """Every interrupted attempt of one conversion, oldest first (the timeline shows them beside the runs)."""
    out = []
    for r in _dicts(store, "select id, ts, payload from events where conversion_id = ? and kind = 'stage.interrupted' "
                           "order by id", [conversion_id]):
        p = json_column(r["payload"], store.path, "events.payload")
        p = p if isinstance(p, dict) else {}
        secs = p.get("seconds")
        out.append(InterruptedAttempt(event_id=r["id"], ts=r["ts"], stage=str(p.get("stage", "?")),
                                      attempt=int(p.get("attempt") or 0),
                                      seconds=float(secs) if isinstance(secs, (int, float)) else None,
                                      why=str(p.get("why") or "")))
    return out


def next_conversion_id(path: str | Path) -> int:
    """The id the next conversion will get, read without creating the store (checks made before anything
    exists): 1 when there is no store yet or it cannot be read (opening it later gives the real error)."""
    path = Path(path)
    if not path.is_file():
        return 1
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        row = conn.execute("select max(id) from conversions").fetchone()
    except sqlite3.DatabaseError:
        return 1
    finally:
        conn.close()
    return (row[0] or 0) + 1


def _guard_all() -> None:
    """Every read here that takes the store turns damage into one line (no hand-kept list of names)."""
    import inspect

    from tileport.store._db import damage_is_user_error

    for name, fn in list(globals().items()):
        if inspect.isfunction(fn) and not name.startswith("_") and fn.__module__ == __name__ and \
                next(iter(inspect.signature(fn).parameters), None) == "store":
            globals()[name] = damage_is_user_error(fn)


_guard_all()
