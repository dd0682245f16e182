"""Read models: what the dashboard shows, mapped from the store's typed read model (`tileport.store.queries`).

Nothing here decides anything about a conversion, reads SQL or decodes JSON: it turns the typed query rows into the
rows and cells the screens render (op, stage, verdict, attempts against caps, geomean, approval state).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tileport.records import PASSING, Decision, PerfDetails, Stage
from tileport.records.verdicts import BLOCKED
from tileport.store import queries
from tileport.validators.gpu.reports import launch_summary

if TYPE_CHECKING:
    from tileport.service import Store

STAGE_NAMES = {
    Stage.ANALYZE.value: "analyze", Stage.WRITE_KERNEL.value: "write kernel",
    Stage.DIAGNOSE_TRANSLATION.value: "diagnose", Stage.HOST_CORRECTNESS.value: "host+correctness",
    Stage.PERFORMANCE.value: "performance", Stage.DIAGNOSE_PERFORMANCE.value: "perf diagnosis",
}
STAGE_ORDER = queries.STAGE_ORDER
# Not verdicts: what the dashboard shows for an attempt under way or not started.
IN_PROGRESS = ("RUNNING", "PENDING")


def verdict_style(verdict: str | None) -> str:
    """The colour a verdict word gets everywhere on screen (green: the records' PASSING list)."""
    if not verdict:
        return "dim"
    if verdict in PASSING:
        return "green"
    if verdict == BLOCKED:
        return "magenta"
    if verdict in IN_PROGRESS:
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
    perf: PerfDetails | None = None  # the newest E run's details, with the bounds recorded with it
    round_commit: str | None = None  # the person's edit the attempt counters count from (the router's round)
    op_path: str = ""
    error: str | None = None  # why the conversion stopped, when it says

    def attempts_text(self) -> str:
        return " ".join(f"{s}{n}/{c}" for s, (n, c) in self.attempts.items() if n)

    def slow(self, current_config_max: float | None = None) -> bool | None:
        """Whether the newest E run's slowest configuration broke the bound recorded with that run (today's
        `[perf] config_max` only for a run recorded before the bound was kept); None when nothing was timed."""
        return self.perf.over_config_max(current_config_max) if self.perf else None


def _approval_text(decision: str | None, commit: str | None, head: str | None) -> str:
    if not decision:
        return "-"
    if decision == Decision.REJECT.value:
        return "rejected"
    if head and commit != head:
        return f"stale ({decision})"
    return "approved" if decision == Decision.APPROVE.value else "overridden"


def conversion_row(c: queries.ConversionSummary, caps: dict[str, int],
                   running: "RunningStage | None" = None) -> ConversionRow:
    return ConversionRow(
        id=c.id, op=c.op, kernel=c.kernel or "*", status=c.status, stage=c.stage, verdict=c.verdict,
        attempts={s: (c.attempts.get(s, 0), int(caps.get(s, 0))) for s in STAGE_ORDER}, geomean=c.geomean,
        approval=_approval_text(c.approval, c.approval_commit, c.head_commit), branch=c.branch, worktree=c.worktree,
        head_commit=c.head_commit, updated_at=c.updated_at, worst=c.worst_ratio, running=running,
        fail_class=c.fail_class, summary=c.summary, perf=c.perf, op_path=c.op_path, error=c.error,
        round_commit=c.round_commit)


def conversion_rows(store: Store, caps: dict[str, int], ids: list[int] | None = None) -> list[ConversionRow]:
    """Every conversion (or just `ids`) with its newest stage, attempts per stage, geomean and approval."""
    summaries = queries.conversion_summaries(store, ids)
    now = running_stages(store, [c.id for c in summaries if c.status == "running"])
    return [conversion_row(c, caps, now.get(c.id)) for c in summaries]


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
    return [AttemptRow(run_id=r.id, stage=r.stage, attempt=r.attempt, cap=r.cap, verdict=r.verdict,
                       fail_class=r.fail_class, seconds=r.seconds, tokens=r.tokens, routed_to=r.routed_to,
                       route_reason=r.route_reason, commit=r.commit, summary=r.summary, details=dict(r.raw_details))
            for r in queries.stage_runs(store, conversion_id)]


@dataclass
class PerfRowView:
    config: str
    ref_ms: float | None
    port_ms: float | None
    ratio: float | None
    flags: str
    launch: dict = field(default_factory=dict)  # side -> CUPTI launch attributes per kernel, as stage E stored them
    ref_samples: list[float] = field(default_factory=list)  # every timed sample, ms
    port_samples: list[float] = field(default_factory=list)
    # side -> {call_us, return_us, burst_us}: host wall time per call (hostrun.host_times)
    host_us: dict = field(default_factory=dict)


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
    left_out: list[dict] = field(default_factory=list)  # captured configurations not timed, with why
    tests: str | None = None  # the newest D run's summary when the op's own tests judged it


def perf_view(store: Store, conversion_id: int, gate: float) -> PerfView:
    """The newest E run's per-configuration ratios, geomean, slowest configuration and hardware figures."""
    perf = queries.newest_perf(store, conversion_id)
    if perf is None:
        return PerfView([], None, None, gate, {}, None)
    rows = [PerfRowView(r.config, r.ref_ms, r.port_ms, r.ratio, ", ".join(r.flags), dict(r.launch),
                        list(r.ref_samples), list(r.port_samples), dict(r.host_us)) for r in perf.rows]
    d_runs = queries.stage_runs(store, conversion_id, "D")
    tests = d_runs[-1].summary if d_runs and getattr(d_runs[-1].details, "tests", None) else None
    return PerfView(rows, perf.details.geomean, perf.details.worst_text(), gate, dict(perf.details.hw),
                    perf.run.verdict, list(getattr(perf.details, "left_out", None) or []), tests)


@dataclass
class IRPair:
    label: str
    reference: str
    port: str
    verdict: str | None


def ir_pairs(store: Store, conversion_id: int) -> list[IRPair]:
    """Reference/port Tile IR text pairs of the newest B run's IR self-check."""
    return [IRPair(p.label, p.reference, p.port, p.verdict) for p in queries.ir_pairs(store, conversion_id)]


def newest_event_id(store: Store) -> int:
    return queries.newest_event_id(store)


def changed_conversions(store: Store, after_id: int, limit: int = 50_000) -> tuple[int, set[int | None], list[dict]]:
    """Events after `after_id`: (newest id, conversion ids they touch, the log lines to show, payloads decoded)."""
    newest, touched, events = queries.events_after(store, after_id, limit)
    return newest, touched, [e.model_dump() for e in events]


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
    return {cid: RunningStage(r.stage, r.attempt, r.cap, _ts(r.started))
            for cid, r in queries.running_stages(store, ids).items()}


def elapsed_text(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class LiveTail:
    """The newest lines of a running stage's live output (`<worktree>.live`, see pipeline/control.py), read
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
        from tileport.validators.rust.diagnostics import live_line

        fresh = mid_line = False
        if self._inode != (st.st_dev, st.st_ino) or st.st_size < self._offset:
            self._offset, fresh, self._inode, self.now = 0, True, (st.st_dev, st.st_ino), ""
            if st.st_size > limit:
                self._offset = st.st_size - limit
                self._note_before(self._offset)
                mid_line = True  # the tail starts inside a line: that partial line is not shown
        if st.st_size == self._offset:
            return fresh, []
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read(st.st_size - self._offset)
        if mid_line:
            start = data.find(b"\n") + 1
            if start == 0:  # one line longer than the whole tail: nothing whole to show yet
                self._offset = st.st_size
                return fresh, []
            self._offset, data = self._offset + start, data[start:]
        cut = data.rfind(b"\n")
        if cut < 0:
            return fresh, []
        self._offset += cut + 1
        lines: list[str] = []
        for line in data[: cut + 1].decode("utf-8", "replace").splitlines():
            if line.startswith(self.NOTE):
                self.now = line[len(self.NOTE):]
            shown = live_line(line)  # cargo's JSON as cargo prints it for a person; rustc diagnostics rendered
            if shown is not None:
                lines += shown.splitlines() or [""]
        return fresh, lines

    def _note_before(self, end: int, window: int = 4 << 20) -> None:
        """`now` from the part of a long file that is not shown (a reader opened late must still say what runs)."""
        start = max(0, end - window)
        with open(self.path, "rb") as f:
            f.seek(start)
            head = f.read(end - start)
        i = head.rfind(b"\n" + self.NOTE.encode())
        if i < 0 and start == 0 and head.startswith(self.NOTE.encode()):
            i = -1
        elif i < 0:
            return
        line = head[i + 1:].split(b"\n", 1)[0].decode("utf-8", "replace")
        self.now = line[len(self.NOTE):]


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
    rest = [str(r.id) for r in blocked[1:]]
    others = f" (likewise {', '.join(rest[:7])}{' …' if len(rest) > 7 else ''})" if rest else ""
    where = f"the GPU host reached by [gpu] command_prefix = {command_prefix!r} did not answer" if command_prefix \
        else "no GPU here"
    seen = f" (doctor: {gpu_detail})" if gpu_detail else ""
    return (f"next step: all {len(blocked)} conversions stopped BLOCKED(env) at {blocked[0].stage or 'D'}: {where}; "
            f"they need {gpus}{seen}. On a GPU host: `tileport gpu pack {first}`{others}, copy the pack directory there, "
            f"`tileport gpu run DIR`, then `tileport gpu ingest DIR/results.json` here; or set "
            f"[gpu] command_prefix in tileport.toml (e.g. \"ssh gpu-host\") and rerun stage D (r, then D).")


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


def _first_clause(summary: str, width: int = 110) -> str:
    """A stage summary's first clause (the how-to after `;` is the next step's job), cut at a word, never inside one."""
    text = " ".join(summary.split()).removeprefix("blocked: ").split("; ")[0]
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width)
    return text[: cut if cut > width // 2 else width] + " …"


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
            needs.append(f"#{r.id} {r.op}: BLOCKED at {r.stage}: {_first_clause(r.summary) or 'the environment'}")
        elif r.status in ("failed", "error"):
            needs.append(f"#{r.id} {r.op}: {r.status} at {r.stage} {r.verdict or ''}: {_first_clause(r.summary)} "
                         "(look at the code view, edit with e, or rerun with r)")
        elif r.status == "stopped":
            needs.append(f"#{r.id} {r.op}: stopped; resume with s")
    return RunSummary(by_status, by_verdict, seconds, needs)
