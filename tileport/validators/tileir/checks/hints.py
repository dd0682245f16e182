"""hints: optimisation hints of entries and ops, judged per target by the value that applies there.

`optimization_hints=<default = {occupancy = 2}>` and `<default = {}, sm_90 = {occupancy = 2}>` say the same
thing on sm_90 and differ on every other target. The effective hints on a target are its own entry laid over
`default`. With a target given (the self-check knows which target a module was compiled for) only that target
is judged; without one, every target either side names is judged, and `default` stands for all the others.
"""

from __future__ import annotations

from tileport.validators.tileir.canon import Node
from tileport.validators.tileir.checks.context import Ctx
from tileport.validators.tileir.findings import Finding, Severity
from tileport.validators.tileir.parse import parse_hints

# hints that only move work around (a latency guess, TMA permission): speed, for the perf gate to confirm
_SPEED_ONLY = frozenset({"latency", "allow_tma"})


def effective(hints: dict[str, dict[str, str]], target: str) -> dict[str, str]:
    return {**hints.get("default", {}), **hints.get(target, {})}


def _targets(a: dict[str, dict[str, str]], b: dict[str, dict[str, str]], target: str | None) -> list[str]:
    if target:
        return [target]
    named = sorted((set(a) | set(b)) - {"default"})
    return named + ["default"]


def hint_differences(a: dict[str, dict[str, str]], b: dict[str, dict[str, str]],
                     target: str | None) -> list[tuple[str, str, str, list[str]]]:
    """(key, reference value, port value, targets where it applies), one item per differing key and value pair."""
    out: dict[tuple[str, str, str], list[str]] = {}
    for t in _targets(a, b, target):
        ea, eb = effective(a, t), effective(b, t)
        for key in sorted(set(ea) | set(eb)):
            va, vb = ea.get(key, "unset"), eb.get(key, "unset")
            if va != vb:
                out.setdefault((key, va, vb), []).append(t)
    return [(k, va, vb, ts) for (k, va, vb), ts in out.items()]


def _where(targets: list[str], target: str | None) -> str:
    if target:
        return f"on {target}"
    names = ["other targets" if t == "default" else t for t in targets]
    return "on " + ", ".join(names) if names != ["other targets"] else "on every target"


def _severity(key: str, ref_value: str) -> Severity:
    # a scheduling hint the reference applies and the port drops or changes stays an error; one only the port
    # sets, or a latency / TMA hint, can change speed alone: a warning the perf gate confirms
    return Severity.WARNING if key in _SPEED_ONLY or ref_value == "unset" else Severity.ERROR


def _consequence(key: str, ref_value: str = "") -> str:
    if key in _SPEED_ONLY or ref_value == "unset":
        return "can change speed, not results: the perf gate confirms"
    return "changes how the kernel is scheduled on that target"


def check_op_hints(ctx: Ctx, r: Node, p: Node) -> None:
    rh = parse_hints(r.op.attrs.get("optimization_hints", ""))
    ph = parse_hints(p.op.attrs.get("optimization_hints", ""))
    if rh == ph:
        return
    for key, va, vb, ts in hint_differences(rh, ph, ctx.target):
        ctx.add("hints", key, _severity(key, va),
                f"{r.op.name} hint {key} {_where(ts, ctx.target)} is {va} in the reference but {vb} in the port "
                f"({_consequence(key, va)})", r, p, va, vb)


def check_entry_hints(ctx: Ctx) -> None:
    for key, va, vb, ts in hint_differences(ctx.ref.entry.hints, ctx.port.entry.hints, ctx.target):
        ctx.findings.append(Finding(
            category="hints", check=f"hints.{key}", severity=_severity(key, va), entry=ctx.entry,
            message=f"entry hint {key} {_where(ts, ctx.target)} is {va} in the reference but {vb} in the port "
                    f"({_consequence(key, va)})",
            ref_line=ctx.ref.entry.line, port_line=ctx.port.entry.line, ref=va, port=vb))
