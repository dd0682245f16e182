"""assumptions: div_by / bounded facts about parameters and values, compared by what they are about."""

from __future__ import annotations

import re
from collections import defaultdict

from tileport.validators.tileir.canon import CanonEntry, Node, Val, render
from tileport.validators.tileir.checks.context import Ctx, int_or_none
from tileport.validators.tileir.findings import Severity

def _assume_target(v: Val, ce: CanonEntry) -> str:
    if v.arg_index is not None and v.node is None:
        if v.arg_index in ce.ptr_ordinal:
            return f"array #{ce.ptr_ordinal[v.arg_index]} base pointer"
        return f"parameter {_arg_role(v, ce)}"
    return f"value {render(v, ce)}"


def _arg_role(v: Val, ce: CanonEntry) -> str:
    role = getattr(ce, "arg_roles", {}).get(v.arg_index)
    return role or f"arg{v.arg_index}"


def _assume_key(v: Val, ce: CanonEntry) -> str:
    if v.arg_index is not None and v.node is None:
        return "arg:" + _arg_role(v, ce) if v.arg_index not in ce.ptr_ordinal else f"ptr:{ce.ptr_ordinal[v.arg_index]}"
    return "val:" + v.hash


def check_assumptions(ctx: Ctx) -> None:
    def facts(ce: CanonEntry) -> dict[tuple[str, str], tuple[str, Node, str]]:
        out = {}
        for f in ce.assumes:
            key = (f.pred, _assume_key(f.target, ce))
            out.setdefault(key, (f.args, f.node, _assume_target(f.target, ce)))
        return out

    rf, pf = facts(ctx.ref), facts(ctx.port)
    bounded: dict[tuple[str, str], list[tuple[str, Node | None, Node | None]]] = defaultdict(list)
    vacuous: list[tuple[str, str, Node | None, Node | None]] = []
    absent: list[tuple[str, str, Node | None]] = []
    port_roles = {role for k, role in ctx.port.arg_roles.items() if not role.startswith("unused")}
    for key in sorted(set(rf) | set(pf)):
        pred = key[0]
        a, b = rf.get(key), pf.get(key)
        if a is not None and b is not None and a[0] == b[0]:
            continue
        one = a if b is None else b if a is None else None
        if one is not None and pred == "div_by":
            side = "reference" if b is None else "port"
            why = _vacuous_div_by(one[1], one[0])
            if why:
                vacuous.append((side, f"{one[2]} ({why})", a[1] if a else None, b[1] if b else None))
                continue
        r_node = a[1] if a else None
        p_node = b[1] if b else None
        what = (a or b)[2]
        if pred == "div_by" and b is None and key[1].startswith("arg:") and key[1][4:] not in port_roles:
            # the port takes no such parameter (a raw-pointer port passes its own scalars): nothing to pair with
            absent.append((what.removeprefix("parameter "), a[0], r_node))
            continue
        if pred == "bounded":
            if a is None:
                bounded[("port adds", f"bounded<{b[0]}>")].append((what, r_node, p_node))
            elif b is None:
                bounded[("port drops", f"bounded<{a[0]}>")].append((what, r_node, p_node))
            else:
                bounded[("port changes", f"bounded<{a[0]}> to <{b[0]}>")].append((what, r_node, p_node))
            continue
        if pred == "div_by":
            ra = int_or_none(a[0]) if a else None
            pb = int_or_none(b[0]) if b else None
            if a is not None and (b is None or (ra and pb and ra % pb == 0 and pb < ra)):
                msg = (f"reference assumes {what} is divisible by {ra}; the port "
                       f"{'makes no such assumption' if b is None else f'only assumes {pb}'} (alignment lost: "
                       f"vectorised/TMA access may be disabled)")
                ctx.add("assumptions", "div_by", Severity.ERROR, msg, r_node, p_node, a[0], b[0] if b else "none")
            else:
                msg = (f"port assumes {what} is divisible by {pb} where the reference assumes "
                       f"{ra if a else 'nothing'}: make sure callers guarantee it")
                ctx.add("assumptions", "div_by", Severity.WARNING, msg, r_node, p_node, a[0] if a else "none", b[0])
            continue
        sev = Severity.ERROR if b is None else Severity.WARNING
        ctx.add("assumptions", pred, sev,
                f"assume {pred} on {what} is {a[0] if a else 'absent'} in the reference but "
                f"{b[0] if b else 'absent'} in the port", r_node, p_node,
                a[0] if a else "none", b[0] if b else "none")


    if absent:
        own = sorted({key[1][4:] for key in pf if key[0] == "div_by" and key[1].startswith("arg:")})
        names = ", ".join(f"{w} by {d}" for w, d, _ in absent[:6]) + (
            f" and {len(absent) - 6} more" if len(absent) > 6 else "")
        if own:
            ctx.add("assumptions", "div_by_other_parameters", Severity.NOTE,
                    f"the reference assumes divisibility of parameters the port does not take ({names}); the port "
                    f"describes its arrays with its own parameters and states its own facts on {', '.join(own)}",
                    absent[0][2], None)
        else:
            ctx.add("assumptions", "div_by_other_parameters", Severity.WARNING,
                    f"the reference assumes divisibility of parameters the port does not take ({names}) and the port "
                    f"states none on its own ({', '.join(sorted(r for r in port_roles if r.startswith('scalar')))}): "
                    f"aligned (vectorised/TMA) access may be lost, which changes speed, not results (the perf gate "
                    f"confirms)", absent[0][2], None)
    for side in ("reference", "port"):
        items = [(w, r, p) for s_, w, r, p in vacuous if s_ == side]
        if items:
            names = "; ".join(w for w, _, _ in items[:4]) + (f" and {len(items) - 4} more" if len(items) > 4 else "")
            ctx.add("assumptions", "div_by_vacuous", Severity.NOTE, f"only the {side} assumes div_by on "
                    f"{len(items)} value(s) where it tells the compiler nothing: {names} (benign)",
                    items[0][1], items[0][2])
    for (verb, pred), items in sorted(bounded.items()):
        names = ", ".join(w for w, _, _ in items[:6]) + (f" and {len(items) - 6} more" if len(items) > 6 else "")
        ctx.add("assumptions", "bounded", Severity.NOTE, f"{verb} assume {pred} on {len(items)} value(s): {names} "
                "(benign)", items[0][1], items[0][2])


_ELEM_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "f16": 2, "bf16": 2, "f32": 4, "tf32": 4, "f64": 8}


def _vacuous_div_by(node: Node, divisor: str) -> str | None:
    """Why a div_by fact carries no information, or None: its assume is dead (nothing live reads the value,
    e.g. the shape of an unused full view), or it promises a pointer to T is aligned to at most sizeof(T)
    (true of every valid pointer)."""
    if not node.live:
        return "dead: nothing live uses it"
    d = int_or_none(divisor)
    ty = node.op.result_types[0] if node.op.result_types else ""
    m = re.search(r"ptr<([a-z0-9]+)>", ty)
    if d and m:
        size = _ELEM_BYTES.get(m.group(1)) or (1 if m.group(1).startswith("f8") else None)
        if size and size % d == 0:
            return f"a ptr<{m.group(1)}> is always {size}-byte aligned"
    return None
