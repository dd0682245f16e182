"""Stage D and E results as data (what `host_and_correctness` and `performance` return), read from results.json.

Validators never route: these are domain results; `tileport/pipeline/stages/` turns them into StageResults.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from tileport.records import ArtifactRecord, CommandRecord

# The bands for the geomean of port/reference device time (ok up to the 1.05 gate, mild to 1.10, moderate to 1.50, severe beyond).
BANDS = ((1.05, "ok"), (1.10, "mild"), (1.50, "moderate"))


def band(geomean: float | None) -> str | None:
    if geomean is None:
        return None
    return next((name for limit, name in BANDS if geomean <= limit), "large")


def host_summary(host_us: dict) -> str:
    """A stage-E row's host time per call (`hostrun.host_times`), as the faces print it: what the caller's thread
    pays until the call returns, each call after a synchronise, and back to back when the runner measured it.
    (`call_us`, until a synchronise after the call, includes the kernel itself: not a host cost.)"""
    def side(key: str) -> str:
        vals = [(host_us.get(s) or {}).get(key) if isinstance(host_us.get(s), dict) else None for s in ("ref", "port")]
        return ", ".join(f"{s} " + (f"{v:.1f} us" if isinstance(v, (int, float)) else "-")
                         for s, v in zip(("ref", "port"), vals))

    if not host_us:
        return "host per call: -"
    burst = any(isinstance(host_us.get(s), dict) and "burst_us" in host_us[s] for s in ("ref", "port"))
    return f"host per call until it returns: {side('return_us')}" + (
        f"; back to back: {side('burst_us')}" if burst else "")


def launch_summary(attrs: list[dict], named: bool = False) -> str:
    """One line per side (the gate runner's `launch_attributes` of its kernels): grid, block, registers, shared
    memory, occupancy of each kernel, `named` with the kernel's name first."""
    parts = []
    for a in attrs:
        bits = []
        if "grid" in a:
            bits.append("grid " + "x".join(str(x) for x in a["grid"]))
        if "block" in a:
            bits.append("block " + "x".join(str(x) for x in a["block"]))
        if "registers_per_thread" in a:
            bits.append(f"{a['registers_per_thread']} regs")
        if "shared_memory_bytes" in a:
            bits.append(f"smem {a['shared_memory_bytes']} B")
        if "occupancy_pct" in a:
            bits.append(f"occ {a['occupancy_pct']}%")
        if a.get("varies"):
            bits.append("varies: " + ",".join(sorted(a["varies"])))
        head = [str(a.get("kernel", "?"))[:40]] if named else []
        parts.append(", ".join(head + (bits or ["no attributes"])))
    return " | ".join(parts) if parts else "-"


NOT_EVALUATED = "NOT_EVALUATED"


@dataclass
class Case:
    name: str
    dtype: str
    shape: dict
    status: str  # PASS | FAIL | NOT_EVALUATED (the reference did not pass it, or the port never launched in it)
    max_abs_err: float | None = None
    fail_class: str | None = None  # host | kernel | env
    message: str = ""
    source: str = "harness"  # harness (make_inputs/reference) | tests (the op's own tests)
    reference: str | None = None  # the reference's verdict on the same test: passed | failed: ... | skipped: ...
    port_launches: int | None = None  # launches the port served in it
    seconds: float | None = None  # the port's run of it
    output: str = ""  # a failed test's own last words (what it printed: mismatched indices, diffs), at most ~1.5 KB

    @property
    def evaluated(self) -> bool:
        return self.status != NOT_EVALUATED

    def model_dump(self, mode: str = "json") -> dict:  # the stage modules read records this way
        return asdict(self)


@dataclass
class CorrectnessReport:
    env_missing: str | None = None  # set: D is BLOCKED(env); the text names the part and its fix
    cases: list[Case] = field(default_factory=list)
    commands: list[CommandRecord] = field(default_factory=list)
    artifacts: list[ArtifactRecord] = field(default_factory=list)
    host_error: str | None = None  # the port could not be built or loaded (a host fault before any case)
    results_path: str | None = None

    @property
    def evaluated(self) -> list[Case]:
        return [c for c in self.cases if c.evaluated]

    @property
    def not_evaluated(self) -> list[Case]:
        return [c for c in self.cases if not c.evaluated]

    @property
    def all_pass(self) -> bool:
        """At least one case evaluated and every evaluated case passed (a case that was not evaluated is never
        counted for or against the port)."""
        return self.env_missing is None and self.host_error is None and bool(self.evaluated) and \
            all(c.status == "PASS" for c in self.evaluated)

    def summary(self) -> str:
        """`P of E evaluated pass; N not evaluated (reasons)`."""
        ev = self.evaluated
        text = f"{sum(c.status == 'PASS' for c in ev)} of {len(ev)} evaluated pass"
        if self.not_evaluated:
            why: dict[str, int] = {}
            for c in self.not_evaluated:
                if c.message.startswith("not evaluated (reference"):
                    key = f"reference {str(c.reference or 'not passed').split(':', 1)[0]}"
                else:
                    key = c.message.removeprefix("not evaluated ").strip("()")
                why[key] = why.get(key, 0) + 1
            text += f"; {len(self.not_evaluated)} not evaluated (" + "; ".join(f"{n} {k}" for k, n in why.items()) + ")"
        return text

    @property
    def fail_class(self) -> str | None:
        """env beats host beats kernel: an environment fault stops the run, a host fault is fixed before the kernel
        can be judged."""
        if self.env_missing:
            return "env"
        if self.host_error:
            return "host"
        classes = {c.fail_class for c in self.evaluated if c.status != "PASS"}
        for cls in ("env", "host", "kernel"):
            if cls in classes:
                return cls
        return None if self.evaluated else "host"  # nothing evaluated: the port never ran under a passing test


TINY_US = 5.0  # a launch under this on both sides is mostly fixed cost (the runner flags it with the same bound)


def is_tiny(ref_ms: float | None, port_ms: float | None, ratio: float | None, config_max: float | None,
            tiny_us: float = TINY_US) -> bool:
    """Whether a timed row is left out of the geomean as "tiny": only when BOTH medians are under `tiny_us` (a
    port at 20 us against a reference at 4.9 us is slow, not tiny), and never when its ratio is above
    `config_max` (a row the per-configuration bound fails is always counted)."""
    if ref_ms is None or port_ms is None:
        return False
    if ratio is not None and config_max is not None and ratio > config_max:
        return False
    return max(ref_ms, port_ms) * 1000 < tiny_us


@dataclass
class PerfRow:
    config: str
    ref_ms: float | None
    port_ms: float | None
    ratio: float | None
    ref_samples: list[float] = field(default_factory=list)
    port_samples: list[float] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    hw: dict = field(default_factory=dict)
    tiny: bool = False
    failed: bool = False
    launch: dict = field(default_factory=dict)  # side -> CUPTI launch attributes per kernel (runner.launch_attributes)
    idle_gap_us: dict = field(default_factory=dict)  # side -> median idle time before the first timed kernel
    # side -> {call_us, return_us, burst_us}: wall time per call from Python (hostrun.host_times)
    host_us: dict = field(default_factory=dict)
    source: str = "harness"  # harness (make_inputs) | capture (a launch stage A captured from the tests)
    ir_diff: dict = field(default_factory=dict)  # the IR gate on the bytecode both JITs compiled (gpu.bytecode)

    def model_dump(self, mode: str = "json") -> dict:
        return asdict(self)


@dataclass
class PerfReport:
    env_missing: str | None = None
    rows: list[PerfRow] = field(default_factory=list)
    hw: dict = field(default_factory=dict)  # measured limits (copy GB/s, GEMM TFLOP/s) and the L2 flush check
    commands: list[CommandRecord] = field(default_factory=list)
    artifacts: list[ArtifactRecord] = field(default_factory=list)
    host_error: str | None = None
    results_path: str | None = None
    left_out: list[dict] = field(default_factory=list)  # captured configurations not timed: {config, why}

    @property
    def counted(self) -> list[PerfRow]:
        return [r for r in self.rows if not r.tiny and not r.failed and r.ratio]

    @property
    def geomean_measured(self) -> float | None:
        """Geomean of the measured, non-tiny rows, whether or not every row was measured."""
        rows = self.counted
        if not rows:
            return None
        return math.exp(sum(math.log(r.ratio) for r in rows) / len(rows))

    @property
    def geomean(self) -> float | None:
        """The gate's figure: None unless every configuration was measured and the flush verified (a missing
        measurement is a failure, never a soft pass)."""
        return self.geomean_measured if self.complete else None

    @property
    def worst(self) -> PerfRow | None:
        rows = self.counted
        return max(rows, key=lambda r: r.ratio) if rows else None

    def host_median(self, side: str, key: str = "return_us") -> float | None:
        """The median over configurations of one side's host wall time per call (us): until the call returns,
        what the caller's thread pays (`call_us` adds the kernel itself)."""
        xs = sorted(r.host_us[side][key] for r in self.rows if isinstance(r.host_us.get(side), dict)
                    and isinstance(r.host_us[side].get(key), (int, float)))
        return xs[len(xs) // 2] if xs else None

    @property
    def band(self) -> str | None:
        return band(self.geomean_measured)

    @property
    def complete(self) -> bool:
        """Every configuration measured (a missing measurement is a failure, never a soft pass) and the flush
        verified."""
        return bool(self.rows) and not any(r.failed for r in self.rows) and \
            bool((self.hw.get("flush") or {}).get("verified"))


def correctness_from_results(results: dict) -> CorrectnessReport:
    rep = CorrectnessReport(env_missing=results.get("env_missing"))
    load = results.get("load_error")
    if load:
        rep.host_error = load.get("message")
    if results.get("runner_error") and not results.get("cases"):
        rep.host_error = rep.host_error or f"the runner failed: {results['runner_error'][-500:]}"
    for c in results.get("cases", []):
        rep.cases.append(Case(name=c["name"], dtype=c["dtype"], shape=c.get("shape") or {}, status=c["status"],
                              max_abs_err=c.get("max_abs_err"), fail_class=c.get("fail_class"),
                              message=c.get("message", ""), source=c.get("source") or "harness",
                              reference=c.get("reference"), port_launches=c.get("port_launches"),
                              seconds=c.get("seconds"), output=c.get("output") or ""))
    return rep


def perf_from_results(results: dict, config_max: float | None = None) -> PerfReport:
    """The perf rows of a results.json; "tiny" is judged here (`is_tiny`: both sides under the bound, never a row
    over `config_max`, default the config's), whatever the runner that wrote the file flagged."""
    if config_max is None:
        from tileport.config import PerfGate
        config_max = PerfGate().config_max
    perf = results.get("perf") or {}
    if any("bytecode" in r and "ir_diff" not in r for r in perf.get("rows", [])):
        from tileport.validators.gpu.bytecode import annotate
        annotate(results)  # the IR each side's JIT compiled, diffed once: kept in the rows (`ir_diff`)
    rep = PerfReport(env_missing=results.get("env_missing"), hw=dict(perf.get("hw") or {}),
                     left_out=list(perf.get("left_out") or []))
    cap = (results.get("env") or {}).get("capability")
    if isinstance(cap, (list, tuple)) and len(cap) == 2:
        rep.hw.setdefault("arch", f"sm_{cap[0]}{cap[1]}")  # the GPU the times were measured on
    for r in perf.get("rows", []):
        rep.rows.append(PerfRow(config=r["config"], ref_ms=r.get("ref_ms"), port_ms=r.get("port_ms"),
                                ratio=r.get("ratio"), ref_samples=r.get("ref_samples") or [],
                                port_samples=r.get("port_samples") or [], flags=r.get("flags") or [],
                                hw=r.get("hw") or {}, failed=bool(r.get("failed")),
                                tiny=is_tiny(r.get("ref_ms"), r.get("port_ms"), r.get("ratio"), config_max),
                                launch=r.get("launch") or {}, idle_gap_us=r.get("idle_gap_us") or {},
                                ir_diff=r.get("ir_diff") or {}, host_us=r.get("host_us") or {},
                                source=r.get("source") or "harness"))
    return rep


def as_dict(obj: Any) -> Any:
    from dataclasses import asdict
    return asdict(obj)
