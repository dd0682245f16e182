"""Read models: what the dashboard shows, read straight from the store in a few SQL queries.

Nothing here decides anything about a conversion: it turns store rows into the rows and cells
the screens render (op, stage, verdict, attempts against caps, geomean, approval state).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tileport.records import Stage
from tileport.store import Store
from tileport.validators.gpu.reports import launch_summary

STAGE_NAMES = {
    "A": "analyze", "B": "write kernel", "C": "diagnose", "D": "host+correctness", "E": "performance",
    "F": "perf diagnosis",
}
STAGE_ORDER = ("A", "B", "C", "D", "E", "F")
PASSING = {"PASS", "PASS_WITH_NOTES", "COMPILED", "ALL_PASS", "DONE"}


def verdict_style(verdict: str | None) -> str:
    """The colour a verdict word gets everywhere on screen."""
    if not verdict:
        return "dim"
    if verdict in PASSING:
        return "green"
    if verdict == "BLOCKED":
        return "magenta"
    if verdict in ("RUNNING", "PENDING"):
        return "yellow"
    return "red"


@dataclass
class ConversionRow:
    id: int
    op: str
    kernel: str
    status: str
    stage: str | None
    verdict: str | None
    attempts: dict[str, tuple[int, int]]  # stage letter -> (attempts used, cap)
    geomean: float | None
    approval: str
    branch: str | None
    worktree: str | None
    head_commit: str | None
    updated_at: str
    worst: float | None = None  # the newest E run's slowest timed configuration (port / reference)
    running: "RunningStage | None" = None  # the attempt running now, when the status is running
    fail_class: str | None = None  # of the newest stage run
    summary: str = ""  # of the newest stage run

    def attempts_text(self) -> str:
        return " ".join(f"{s}{n}/{c}" for s, (n, c) in self.attempts.items() if n)


def _op_name(op_path: str) -> str:
    return Path(op_path).stem if op_path else "?"


def _details(raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _approval_text(decision: str | None, commit: str | None, head: str | None) -> str:
    if not decision:
        return "-"
    if decision == "reject":
        return "rejected"
    if head and commit != head:
        return f"stale ({decision})"
    return "approved" if decision == "approve" else "overridden"


def conversion_rows(store: Store, caps: dict[str, int], ids: list[int] | None = None) -> list[ConversionRow]:
    """Every conversion (or just `ids`) with its newest stage, attempts per stage, geomean and approval."""
    db = store.db
    where, args = "", []
    if ids is not None:
        if not ids:
            return []
        where = f" where c.id in ({','.join('?' * len(ids))})"
        args = list(ids)
    convs = db.execute(f"select c.* from conversions c{where} order by c.id", args).fetchall()
    cols = [d[0] for d in db.execute("select * from conversions limit 0").description]
    rows = [dict(zip(cols, r)) for r in convs]
    if not rows:
        return []
    idset = ",".join(str(r["id"]) for r in rows)
    counts: dict[int, dict[str, int]] = {}
    for cid, stage, n in db.execute(
            f"select conversion_id, stage, count(*) from stage_runs where conversion_id in ({idset}) "
            "group by conversion_id, stage"):
        counts.setdefault(cid, {})[stage] = n
    latest: dict[int, tuple[str, str]] = {}
    latest_why: dict[int, tuple[str | None, str]] = {}
    for cid, stage, verdict, fail_class, summary in db.execute(
            f"select s.conversion_id, s.stage, s.verdict, s.fail_class, s.summary from stage_runs s join (select "
            f"conversion_id, max(id) m from stage_runs where conversion_id in ({idset}) group by conversion_id) t "
            f"on s.id = t.m"):
        latest[cid] = (stage, verdict)
        latest_why[cid] = (fail_class, summary or "")
    geo: dict[int, float] = {}
    worst: dict[int, float] = {}
    for cid, details in db.execute(
            f"select s.conversion_id, s.details from stage_runs s join (select conversion_id, max(id) m from "
            f"stage_runs where stage = 'E' and conversion_id in ({idset}) group by conversion_id) t on s.id = t.m"):
        g = _details(details).get("geomean")
        if isinstance(g, (int, float)):
            geo[cid] = float(g)
        w = _details(details).get("worst_ratio")
        if isinstance(w, (int, float)):
            worst[cid] = float(w)
    appr: dict[int, tuple[str, str]] = {}
    for cid, decision, commit in db.execute(
            f"select a.conversion_id, a.decision, a.\"commit\" from approvals a join (select conversion_id, "
            f"max(id) m from approvals where conversion_id in ({idset}) group by conversion_id) t on a.id = t.m"):
        appr[cid] = (decision, commit)
    now = running_stages(store, [r["id"] for r in rows if r.get("status") == "running"])
    out = []
    for r in rows:
        cid = r["id"]
        stage, verdict = latest.get(cid, (None, None))
        used = counts.get(cid, {})
        decision, commit = appr.get(cid, (None, None))
        out.append(ConversionRow(
            id=cid, op=_op_name(r["op_path"]), kernel=r.get("kernel") or "*", status=r.get("status") or "?",
            stage=stage, verdict=verdict,
            attempts={s: (used.get(s, 0), int(caps.get(s, 0))) for s in STAGE_ORDER},
            geomean=geo.get(cid), approval=_approval_text(decision, commit, r.get("head_commit")),
            branch=r.get("branch"), worktree=r.get("worktree"), head_commit=r.get("head_commit"),
            updated_at=r.get("updated_at") or "", worst=worst.get(cid), running=now.get(cid),
            fail_class=latest_why.get(cid, (None, ""))[0], summary=latest_why.get(cid, (None, ""))[1]))
    return out


@dataclass
class AttemptRow:
    run_id: int
    stage: str
    attempt: int
    cap: int | None
    verdict: str
    fail_class: str | None
    seconds: float | None
    tokens: int
    routed_to: str | None
    route_reason: str | None
    commit: str | None
    summary: str
    details: dict[str, Any] = field(default_factory=dict)


def timeline(store: Store, conversion_id: int) -> list[AttemptRow]:
    """Every stage attempt of one conversion, oldest first."""
    out = []
    for r in store.stage_runs(conversion_id):
        out.append(AttemptRow(
            run_id=r["id"], stage=r["stage"], attempt=r["attempt"], cap=r.get("cap"), verdict=r["verdict"],
            fail_class=r.get("fail_class"), seconds=r.get("seconds"),
            tokens=(r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0),
            routed_to=r.get("routed_to"), route_reason=r.get("route_reason"), commit=r.get("commit"),
            summary=r.get("summary") or "", details=_details(r.get("details"))))
    return out


@dataclass
class PerfRowView:
    config: str
    ref_ms: float | None
    port_ms: float | None
    ratio: float | None
    flags: str
    launch: dict = field(default_factory=dict)  # side -> CUPTI launch attributes per kernel, as stage E stored them


def launch_text(launch: dict) -> str:
    """One line per side: what each kernel launched with in the timed run (grid, block, registers, shared
    memory, occupancy), so a slow configuration shows whether the two sides even ran alike."""
    return "\n".join(f"{side:>4}: " + (launch_summary(launch.get(side), named=True) if launch.get(side)
                                       else "no launch attributes recorded") for side in ("ref", "port"))


@dataclass
class PerfView:
    rows: list[PerfRowView]
    geomean: float | None
    worst: str | None
    gate: float
    hardware: dict[str, Any]
    verdict: str | None


def perf_view(store: Store, conversion_id: int, gate: float) -> PerfView:
    """The newest E run's per-configuration ratios (table `perf_rows`), geomean and hardware figures."""
    runs = [r for r in store.stage_runs(conversion_id) if r["stage"] == Stage.PERFORMANCE.value]
    if not runs:
        return PerfView([], None, None, gate, {}, None)
    run = runs[-1]
    details = _details(run.get("details"))
    rows = []
    if "perf_rows" in store.db.table_names():
        for r in store.db["perf_rows"].rows_where("stage_run_id = ?", [run["id"]], order_by="id"):
            try:
                launch = json.loads(r.get("launch") or "{}")
            except (TypeError, ValueError):
                launch = {}
            rows.append(PerfRowView(r["config"], r.get("ref_ms"), r.get("port_ms"), r.get("ratio"),
                                    r.get("flags") or "", launch if isinstance(launch, dict) else {}))
    worst = details.get("worst")
    if isinstance(worst, dict):
        r = worst.get("ratio")
        worst = f"{worst.get('config')} ({r:.3f})" if isinstance(r, (int, float)) else f"{worst.get('config')} ({r})"
    elif worst and details.get("worst_ratio") is not None:
        worst = f"{worst} ({details['worst_ratio']:.3f})"
    return PerfView(rows, details.get("geomean"), worst, gate, details.get("hw") or details.get("hardware") or {},
                    run["verdict"])


@dataclass
class IRPair:
    label: str
    reference: str
    port: str
    verdict: str | None


def ir_pairs(store: Store, conversion_id: int) -> list[IRPair]:
    """Reference/port Tile IR text pairs of the newest B run's IR self-check (from its details)."""
    runs = [r for r in store.stage_runs(conversion_id) if r["stage"] == Stage.WRITE_KERNEL.value]
    for run in reversed(runs):
        details = _details(run.get("details"))
        pairs = details.get("ir_pairs") or details.get("self_check_pairs") or []
        out = [IRPair(str(p.get("label", "?")), str(p.get("reference", "")), str(p.get("port", "")),
                      p.get("verdict")) for p in pairs if isinstance(p, dict)]
        if out:
            return out
    return []


def newest_event_id(store: Store) -> int:
    return store.db.execute("select coalesce(max(id), 0) from events").fetchone()[0]


def changed_conversions(store: Store, after_id: int, limit: int = 50_000) -> tuple[int, set[int | None], list[dict]]:
    """Events after `after_id`: (newest id, conversion ids they touch, the log lines to show)."""
    rows = store.db.execute(
        "select id, ts, conversion_id, kind, payload from events where id > ? order by id limit ?",
        [after_id, limit]).fetchall()
    if not rows:
        return after_id, set(), []
    touched = {r[2] for r in rows}
    events = [{"id": r[0], "ts": r[1], "conversion_id": r[2], "kind": r[3], "payload": r[4]} for r in rows]
    return rows[-1][0], touched, events


@dataclass
class RunningStage:
    """The attempt a conversion is in now (its newest lifecycle event is `stage.started`)."""

    stage: str
    attempt: int
    cap: int | None
    started: datetime

    def elapsed(self, now: datetime | None = None) -> float:
        return max(0.0, ((now or datetime.now(timezone.utc)) - self.started).total_seconds())


def _ts(text: str) -> datetime:
    t = datetime.fromisoformat(text)
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def running_stages(store: Store, ids: list[int]) -> dict[int, RunningStage]:
    """For each of `ids` whose status is running, the stage attempt it runs now (from the event log)."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = store.db.execute(
        f"select e.conversion_id, e.kind, e.ts, e.payload from events e join (select conversion_id, max(id) m from "
        f"events where kind in ('stage.started', 'stage.finished', 'stage.interrupted') and conversion_id in "
        f"({marks}) group by conversion_id) t on e.id = t.m join conversions c on c.id = e.conversion_id "
        f"where c.status = 'running'", list(ids)).fetchall()
    out = {}
    for cid, kind, ts, payload in rows:
        if kind != "stage.started":
            continue
        p = _details(payload)
        out[cid] = RunningStage(str(p.get("stage", "?")), int(p.get("attempt") or 0), p.get("cap"), _ts(ts))
    return out


def elapsed_text(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class LiveTail:
    """The newest lines of a running stage's live output (`<worktree>.live`, see agents/control.py), read
    incrementally; `now` is tileport's newest own line there (a progress line or the tool it started)."""

    NOTE = "[tileport] "

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._offset = 0
        self._inode: tuple[int, int] | None = None
        self.now = ""

    def read_new(self, limit: int = 64_000) -> tuple[bool, list[str]]:
        """(started afresh?, new complete lines). A file that shrank or was replaced is a new attempt."""
        if self.path is None:
            return False, []
        try:
            st = self.path.stat()
        except OSError:
            return False, []
        fresh = False
        if self._inode != (st.st_dev, st.st_ino) or st.st_size < self._offset:
            self._offset, fresh, self._inode = 0, True, (st.st_dev, st.st_ino)
            if st.st_size > limit:
                self._offset = st.st_size - limit
        if st.st_size == self._offset:
            return fresh, []
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read(st.st_size - self._offset)
        cut = data.rfind(b"\n")
        if cut < 0:
            return fresh, []
        self._offset += cut + 1
        lines = data[: cut + 1].decode("utf-8", "replace").splitlines()
        for line in lines:
            if line.startswith(self.NOTE):
                self.now = line[len(self.NOTE):]
        return fresh, lines


GPU_FOR = {"sm_90": "H100/H200 (sm_90)", "sm_100": "B200 (sm_100)", "sm_80": "A100 (sm_80)", "sm_89": "L40/4090 (sm_89)",
           "sm_120": "RTX 50xx (sm_120)"}


def next_step(rows: list[ConversionRow], targets: list[str], gpu_detail: str | None,
              command_prefix: str = "") -> str | None:
    """What to do when no conversion can go further here: every finished one stopped BLOCKED(env)."""
    if not rows or any(r.status in ("running", "pending") for r in rows):
        return None
    blocked = [r for r in rows if r.verdict == "BLOCKED" and (r.fail_class or "env") == "env"]
    if not blocked or len(blocked) != len([r for r in rows if r.verdict]):
        return None
    gpus = " or ".join(GPU_FOR.get(t, t) for t in targets) or "an NVIDIA GPU"
    first = blocked[0].id
    where = f"the GPU host reached by [gpu] command_prefix = {command_prefix!r} did not answer" if command_prefix \
        else "no GPU here"
    seen = f" (doctor: {gpu_detail})" if gpu_detail else ""
    return (f"next step: all {len(blocked)} conversions stopped BLOCKED(env) at {blocked[0].stage or 'D'}: {where}; "
            f"they need {gpus}{seen}. On a GPU host: `tileport gate pack {first}`, copy the gate directory there, "
            f"`tileport gate run DIR`, then `tileport gate ingest DIR/results.json` here; or set "
            f"[gpu] command_prefix in tileport.toml (e.g. \"ssh gpu-host\") and resume (s).")


@dataclass
class RunSummary:
    by_status: dict[str, int]
    by_verdict: dict[str, int]
    seconds: float
    needs_human: list[str]

    def text(self) -> str:
        lines = [f"end of run: {sum(self.by_status.values())} conversions in {elapsed_text(self.seconds)}",
                 "  by status:  " + ", ".join(f"{k} {v}" for k, v in sorted(self.by_status.items())),
                 "  by verdict: " + ", ".join(f"{k} {v}" for k, v in sorted(self.by_verdict.items()))]
        lines.append("needs a person:" if self.needs_human else "needs a person: nothing")
        lines += [f"  {n}" for n in self.needs_human]
        return "\n".join(lines)


def run_summary(rows: list[ConversionRow], seconds: float) -> RunSummary:
    by_status: dict[str, int] = {}
    by_verdict: dict[str, int] = {}
    needs = []
    for r in rows:
        by_status[r.status] = by_status.get(r.status, 0) + 1
        v = f"{r.verdict}({r.fail_class})" if r.verdict and r.fail_class else (r.verdict or "-")
        by_verdict[v] = by_verdict.get(v, 0) + 1
        if r.status == "done" and r.approval in ("-", "stale (approve)"):
            needs.append(f"#{r.id} {r.op}: every gate passed: review and approve (a), then merge (m)")
        elif r.status == "blocked":
            needs.append(f"#{r.id} {r.op}: BLOCKED at {r.stage}: {r.summary[:100] or 'the environment'}")
        elif r.status in ("failed", "error"):
            needs.append(f"#{r.id} {r.op}: {r.status} at {r.stage} {r.verdict or ''}: {r.summary[:100]} "
                         "(look at the code view, edit with e, or rerun with r)")
        elif r.status == "stopped":
            needs.append(f"#{r.id} {r.op}: stopped; resume with s")
    return RunSummary(by_status, by_verdict, seconds, needs)
