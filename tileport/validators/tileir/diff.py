"""Structural diff of two Tile IR modules: a reference (cuTile Python) and a port (cuTile Rust).

    report = diff_modules(parse_text(ref_text), parse_text(port_text))
    report.verdict            # PASS | PASS_WITH_NOTES | FAIL_FIXABLE (stage C words)
    report.groups             # findings grouped by category, each with a severity
    report.rows               # aligned side-by-side view: ref line / port line / status

How it decides:

1. **Entries** are matched by exact name, then by base name (the cuTile mangling suffix
   `_Kt..` stripped; i-th with i-th), then by position among the rest. A single entry on each
   side is matched silently; other position matches are noted. A reference entry without a
   counterpart is an error.
2. **Canonical form** (`tileir.canon`): per-op structural hashes, insensitive to SSA names,
   independent-op order, duplicated constants/CSE, assumes, dead code and debug info. Equal
   entry hashes mean structurally identical.
3. **Alignment**: ops with equal hashes are paired; the rest are paired by op family, local
   signature and already-paired operands. Status per op: same, changed (its own attributes or
   types differ), downstream (identical op fed by a changed value), ref_only, port_only, benign.
4. **Checks**, each a named category: memory, mma, reduction, math, loops, assumptions,
   conversions, hints, entries, structure; `benign` collects dead code, CSE duplicates, extra
   `assume bounded` and debug info. If two entries differ and no check can say why, a
   `structure.dataflow` error names the first differing ops: a difference never passes silently.
"""

from __future__ import annotations

import gc
import re
import threading
from collections import defaultdict
from contextlib import contextmanager
from enum import Enum
from pathlib import Path

from pydantic import BaseModel, Field

from tileport.validators.tileir.canon import (
    CONVERSIONS, LOOPS, MEM_LOADS, MEM_WRITES, MMA, REDUCTIONS, TOKEN_OPS, CanonEntry, Node, Val,
    and_terms, base_arg, canonicalize, identity_values, release, render,
)
from tileport.validators.tileir.parse import Entry, Module, parse_file, parse_hints, parse_text, type_info

# ---------------------------------------------------------------------------------------------
# Models (JSON-serialisable; the dashboard and the stage records read these)
# ---------------------------------------------------------------------------------------------


class Verdict(str, Enum):
    PASS = "PASS"
    PASS_WITH_NOTES = "PASS_WITH_NOTES"
    FAIL_FIXABLE = "FAIL_FIXABLE"


class Severity(str, Enum):
    ERROR = "error"  # the port is structurally wrong: FAIL_FIXABLE
    WARNING = "warning"  # suspicious, a human should look: PASS_WITH_NOTES
    NOTE = "note"  # benign difference: PASS_WITH_NOTES


SEVERITY_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.NOTE: 2}

# category -> what it covers (also the order of groups in reports)
CATEGORIES: dict[str, str] = {
    "entries": "kernel entries and their parameters",
    "memory": "loads/stores/atomics: view vs pointer, counts, padding, masks, tile shapes, dim maps, tokens",
    "mma": "matrix multiply-accumulate operand and accumulator types and shapes",
    "reduction": "reduce/scan axis, identity and combiner",
    "math": "rounding modes, flush_to_zero, exp vs exp2, transcendental functions",
    "loops": "loop structure, bounds and loop-carried values",
    "assumptions": "div_by / bounded assumptions",
    "conversions": "dtype conversions",
    "hints": "optimisation hints (occupancy, num_cta_in_cga, latency, allow_tma)",
    "structure": "any other dataflow or control-flow difference",
    "benign": "differences that do not change the kernel (dead code, CSE, debug info)",
}


class Finding(BaseModel):
    category: str
    check: str  # e.g. "memory.padding"
    severity: Severity
    message: str
    entry: str | None = None  # reference entry name (port entry name when only the port has it)
    ref_line: int | None = None
    port_line: int | None = None
    ref: str | None = None  # the reference side's value of what differs
    port: str | None = None  # the port side's value


class FindingGroup(BaseModel):
    category: str
    description: str
    severity: Severity  # the worst in the group
    findings: list[Finding]


class EntryPair(BaseModel):
    ref: str | None
    port: str | None
    rule: str  # "name", "base_name", "only_entry", "position", "unmatched"
    identical: bool = False
    ref_line: int | None = None
    port_line: int | None = None


class RowStatus(str, Enum):
    SAME = "same"
    CHANGED = "changed"
    DOWNSTREAM = "downstream"
    REF_ONLY = "ref_only"
    PORT_ONLY = "port_only"
    BENIGN = "benign"


class AlignedRow(BaseModel):
    entry: str
    depth: int
    status: RowStatus
    ref_line: int | None = None
    ref_text: str | None = None
    port_line: int | None = None
    port_text: str | None = None
    category: str | None = None


class IRDiffReport(BaseModel):
    verdict: Verdict
    ref_path: str | None = None
    port_path: str | None = None
    entries: list[EntryPair] = Field(default_factory=list)
    groups: list[FindingGroup] = Field(default_factory=list)
    rows: list[AlignedRow] = Field(default_factory=list)
    stats: dict[str, int] = Field(default_factory=dict)

    @property
    def findings(self) -> list[Finding]:
        return [f for g in self.groups for f in g.findings]

    def categories(self, severity: Severity | None = None) -> set[str]:
        return {f.category for f in self.findings if severity is None or f.severity == severity}

    def checks(self, severity: Severity | None = None) -> set[str]:
        return {f.check for f in self.findings if severity is None or f.severity == severity}

    @property
    def exit_code(self) -> int:
        return 1 if self.verdict == Verdict.FAIL_FIXABLE else 0


# ---------------------------------------------------------------------------------------------
# Entry matching
# ---------------------------------------------------------------------------------------------

_MANGLE_RE = re.compile(r"_Kt\d+_.*$")


def base_name(name: str) -> str:
    """`softmax_Kt2_A2f16_...` -> `softmax` (cuTile Python's mangling); other names unchanged."""
    return _MANGLE_RE.sub("", name)


def match_entries(ref: list[Entry], port: list[Entry]) -> list[tuple[Entry | None, Entry | None, str]]:
    pairs: list[tuple[Entry | None, Entry | None, str]] = []
    rest_r = list(ref)
    rest_p = list(port)
    # 1. exact names
    by_name = {e.name: e for e in rest_p}
    for r in list(rest_r):
        p = by_name.get(r.name)
        if p is not None and p in rest_p:
            pairs.append((r, p, "name"))
            rest_r.remove(r)
            rest_p.remove(p)
    # 2. base names, i-th with i-th
    groups_p: dict[str, list[Entry]] = defaultdict(list)
    for p in rest_p:
        groups_p[base_name(p.name)].append(p)
    for r in list(rest_r):
        cands = groups_p.get(base_name(r.name))
        if cands:
            p = cands.pop(0)
            pairs.append((r, p, "base_name"))
            rest_r.remove(r)
            rest_p.remove(p)
    # 3. position
    rule = "only_entry" if len(ref) == 1 and len(port) == 1 else "position"
    while rest_r and rest_p:
        pairs.append((rest_r.pop(0), rest_p.pop(0), rule))
    for r in rest_r:
        pairs.append((r, None, "unmatched"))
    for p in rest_p:
        pairs.append((None, p, "unmatched"))
    order = {id(e): k for k, e in enumerate(ref)}
    pairs.sort(key=lambda t: order.get(id(t[0]), len(ref)))
    return pairs


# ---------------------------------------------------------------------------------------------
# Alignment of two canonical entries
# ---------------------------------------------------------------------------------------------


# assumptions are compared as facts and token plumbing as ordering facts: never paired by similarity
_UNPAIRED_KINDS = frozenset({"assume"}) | TOKEN_OPS


class Alignment:
    """Op pairing between a reference entry and a port entry, with a status per op."""

    def __init__(self, ref: CanonEntry, port: CanonEntry):
        self.ref = ref
        self.port = port
        self.r2p: dict[int, Node] = {}
        self.p2r: dict[int, Node] = {}
        self.vmap: dict[int, Val] = {}  # id(ref value) -> port value
        self.status_r: dict[int, RowStatus] = {}
        self.status_p: dict[int, RowStatus] = {}
        self._pair_exact()
        self._pair_similar()
        self._statuses()

    def pair(self, r: Node, p: Node) -> None:
        self.r2p[r.idx] = p
        self.p2r[p.idx] = r
        for rv, pv in zip(r.results, p.results):
            self.vmap[id(rv)] = pv

    def _pair_exact(self) -> None:
        by_hash: dict[str, list[Node]] = defaultdict(list)
        for p in self.port.nodes:
            by_hash[p.hash].append(p)
        used: dict[str, int] = defaultdict(int)
        for r in self.ref.nodes:
            lst = by_hash.get(r.hash)
            if not lst:
                continue
            k = used[r.hash]
            # prefer a partner with the same liveness so dead twins pair with dead twins
            if k < len(lst):
                self.pair(r, lst[k])
                used[r.hash] = k + 1
        # region contents of exactly paired region ops pair positionally when hashes repeat
        self.port_hashes = set(by_hash)
        self.ref_hashes = {r.hash for r in self.ref.nodes}
        # partition views that differ only in padding are the same index space
        self.port_nopad = {v.nopad for p in self.port.nodes for v in p.results if v.nopad}
        self.ref_nopad = {v.nopad for r in self.ref.nodes for v in r.results if v.nopad}

    def _score(self, r: Node, p: Node, nr: int, np_: int) -> float:
        s = 0.0
        if r.op.name == p.op.name:
            s += 2
        if r.local == p.local:
            s += 3
        vmap = self.vmap
        for ro, po in zip(r.operands, p.operands):
            if ro.hash == po.hash or vmap.get(id(ro)) is po:
                s += 2
        if r.depth == p.depth:
            s += 1
        rp = r.parent
        pp = p.parent
        if (rp is None and pp is None) or (rp is not None and pp is not None and self.r2p.get(rp.idx) is pp):
            s += 2
        s -= abs(r.idx / nr - p.idx / np_) * 2
        return s

    def _pair_similar(self) -> None:
        buckets: dict[str, list[Node]] = defaultdict(list)
        for p in self.port.nodes:
            if p.idx not in self.p2r and p.live and p.op.name not in _UNPAIRED_KINDS and not p.transparent:
                buckets[p.family].append(p)
        nr = max(1, len(self.ref.nodes))
        np_ = max(1, len(self.port.nodes))
        for r in self.ref.nodes:
            if r.idx in self.r2p or not r.live or r.transparent or r.op.name in _UNPAIRED_KINDS:
                continue
            cands = buckets.get(r.family)
            if not cands:
                continue
            if len(cands) > 48:
                pos = r.idx / nr
                pool = sorted(cands, key=lambda p: abs(p.idx / np_ - pos))[:48]
            else:
                pool = cands
            best = None
            best_s = -1e9
            for p in pool:
                s = self._score(r, p, nr, np_)
                if s > best_s:
                    best, best_s = p, s
            threshold = 1.0 if best is not None and best.op.name == r.op.name else 2.5
            if best is not None and best_s >= threshold:
                self.pair(r, best)
                cands.remove(best)

    def _statuses(self) -> None:
        for r in self.ref.nodes:
            p = self.r2p.get(r.idx)
            if p is not None:
                if r.hash == p.hash:
                    st = RowStatus.SAME
                elif r.local != p.local or r.op.name != p.op.name:
                    st = RowStatus.CHANGED
                else:
                    st = RowStatus.DOWNSTREAM
                self.status_r[r.idx] = st
                self.status_p[p.idx] = st
            else:
                self.status_r[r.idx] = self._unpaired_status(r, self.port_hashes, self.port_nopad,
                                                             RowStatus.REF_ONLY)
        for p in self.port.nodes:
            if p.idx not in self.p2r:
                self.status_p[p.idx] = self._unpaired_status(p, self.ref_hashes, self.ref_nopad, RowStatus.PORT_ONLY)

    @staticmethod
    def _unpaired_status(n: Node, other_hashes: set[str], other_nopad: set[str], default: RowStatus) -> RowStatus:
        if not n.live or n.hash in other_hashes or n.op.name in TOKEN_OPS or n.transparent:
            return RowStatus.BENIGN
        if n.results and n.results[0].nopad and n.results[0].nopad in other_nopad and all(
                u.op.name == "get_index_space_shape" for u in n.users):
            return RowStatus.BENIGN
        if n.op.name == "assume" and "div_by" not in n.op.attrs:
            return RowStatus.BENIGN
        if n.op.name in ("yield", "continue") and not n.operands:
            return RowStatus.BENIGN  # an implicit terminator the other printer elides
        return default

    def partner(self, r: Node) -> Node | None:
        return self.r2p.get(r.idx)

    def rows(self, entry_name: str) -> list[AlignedRow]:
        """Ref order, port-only ops slotted in after the port op they follow."""
        rows: list[AlignedRow] = []
        pnodes = self.port.nodes
        emitted = [False] * len(pnodes)
        pcursor = 0

        def emit_port_until(limit: int) -> None:
            nonlocal pcursor
            while pcursor < limit:
                p = pnodes[pcursor]
                if not emitted[p.idx] and p.idx not in self.p2r:
                    emitted[p.idx] = True
                    rows.append(AlignedRow(entry=entry_name, depth=p.depth, status=self.status_p[p.idx],
                                           port_line=p.op.line, port_text=p.op.text, category=p.category))
                pcursor += 1

        for r in self.ref.nodes:
            p = self.r2p.get(r.idx)
            if p is not None:
                emit_port_until(p.idx)
                emitted[p.idx] = True
                rows.append(AlignedRow(entry=entry_name, depth=r.depth, status=self.status_r[r.idx],
                                       ref_line=r.op.line, ref_text=r.op.text, port_line=p.op.line,
                                       port_text=p.op.text, category=r.category))
            else:
                rows.append(AlignedRow(entry=entry_name, depth=r.depth, status=self.status_r[r.idx],
                                       ref_line=r.op.line, ref_text=r.op.text, category=r.category))
        emit_port_until(len(pnodes))
        return rows


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------


class _Ctx:
    """Findings for one entry pair."""

    def __init__(self, entry: str, ref: CanonEntry, port: CanonEntry, al: Alignment):
        self.entry = entry
        self.ref = ref
        self.port = port
        self.al = al
        self.findings: list[Finding] = []

    def add(self, category: str, check: str, severity: Severity, message: str, r: Node | None = None,
            p: Node | None = None, ref: object = None, port: object = None) -> None:
        self.findings.append(Finding(
            category=category, check=f"{category}.{check}", severity=severity, message=message, entry=self.entry,
            ref_line=r.op.line if r is not None else None, port_line=p.op.line if p is not None else None,
            ref=None if ref is None else str(ref), port=None if port is None else str(port)))

    def rdesc(self, v: Val, side: CanonEntry) -> str:
        return render(v, side)


# --- memory ----------------------------------------------------------------------------------


class _Mem:
    __slots__ = ("node", "kind", "dir", "base", "elem", "shape", "padding", "dim_map", "mask", "mask_terms",
                 "pad_value", "index", "order", "view_type")

    def __init__(self, n: Node, ce: CanonEntry):
        op = n.op
        name = op.name
        self.node = n
        self.kind = "view" if "_view_" in name else "ptr"
        self.dir = "load" if name in MEM_LOADS else ("atomic" if name.startswith("atomic") else "store")
        ops = n.operands
        self.padding = None
        self.dim_map = None
        self.mask = None
        self.mask_terms = 0
        self.pad_value = None
        self.view_type = None
        self.order = " ".join(f for f in op.flags if f in ("weak", "relaxed", "acquire", "release", "acq_rel",
                                                          "device", "sys", "tl_blk", "block", "cluster"))
        if self.kind == "view":
            vpos = 0 if self.dir == "load" else 1
            view = ops[vpos] if len(ops) > vpos else None
            arg = base_arg(view) if view is not None else None
            ti = type_info(view.type) if view is not None else None
            self.view_type = view.type if view is not None else None
            self.shape = "x".join(ti.shape) if ti else "?"
            self.elem = ti.elem if ti else "?"
            self.padding = ti.padding if ti else None
            self.dim_map = ti.dim_map if ti else None
            self.index = [v.hash for v in ops[vpos + 1:]]
        else:
            ptrs = ops[0] if ops else None
            arg = base_arg(ptrs) if ptrs is not None else None
            ti = type_info(ptrs.type) if ptrs is not None else None
            self.shape = "x".join(ti.shape) if ti else "?"
            self.elem = ti.elem[4:-1] if ti and ti.elem.startswith("ptr<") else (ti.elem if ti else "?")
            rest = ops[1:]
            if self.dir == "load":
                if len(rest) >= 1:
                    self.mask = rest[0]
                if len(rest) >= 2:
                    self.pad_value = rest[1]
            elif self.dir == "store":
                if len(rest) >= 2:
                    self.mask = rest[1]
            else:  # atomics: ptrs, value(s)..., mask last if i1
                if rest and type_info(rest[-1].type).elem == "i1":
                    self.mask = rest[-1]
            if self.mask is not None:
                self.mask_terms = and_terms(self.mask)
            self.index = [ptrs.hash] if ptrs is not None else []
        self.base = ce.ptr_ordinal.get(arg) if arg is not None else None

    def target(self) -> str:
        return f"array #{self.base}" if self.base is not None else "an unknown array"

    def what(self) -> str:
        return f"{self.kind} {self.dir} of {self.target()}"


def _zero_vs_block_id(a: Val, b: Val) -> bool:
    b = b.stripped
    return (a.splat is not None and a.splat[1] == "0" and b.node is not None
            and b.node.op.name == "get_tile_block_id")


def _pad_text(v: Val | None) -> str:
    if v is None:
        return "none"
    if v.splat is not None:
        return v.splat[1]
    return render(v)


def check_memory(ctx: _Ctx) -> None:
    al = ctx.al
    rmem = {n.idx: _Mem(n, ctx.ref) for n in ctx.ref.nodes if n.live and (n.op.name in MEM_LOADS or
                                                                        n.op.name in MEM_WRITES)}
    pmem = {n.idx: _Mem(n, ctx.port) for n in ctx.port.nodes if n.live and (n.op.name in MEM_LOADS or
                                                                         n.op.name in MEM_WRITES)}
    paired_p: set[int] = set()
    for ri, rm in rmem.items():
        p = al.partner(rm.node)
        pm = pmem.get(p.idx) if p is not None else None
        r = rm.node
        if pm is None:
            if al.status_r[r.idx] != RowStatus.BENIGN:
                ctx.add("memory", "count", Severity.ERROR,
                        f"reference has a {rm.what()} (tile {rm.shape}) that the port lacks",
                        r, None, rm.what(), "missing")
            continue
        paired_p.add(pm.node.idx)
        _compare_mem(ctx, rm, pm)
    for pi, pm in pmem.items():
        if pi in paired_p or pm.node.idx in al.p2r:
            continue
        if al.status_p[pi] == RowStatus.BENIGN:
            continue
        ctx.add("memory", "count", Severity.ERROR,
                f"port has an extra {pm.what()} (tile {pm.shape}) that the reference does not",
                None, pm.node, "missing", pm.what())
    _check_tokens(ctx, rmem, pmem)


def _compare_mem(ctx: _Ctx, rm: _Mem, pm: _Mem) -> None:
    r, p = rm.node, pm.node
    if rm.kind != pm.kind:
        if rm.kind == "view":
            msg = (f"reference does a view (TMA-capable) {rm.dir} of {rm.target()} with tile {rm.shape}; the port "
                   f"does a pointer {pm.dir} (gather/scatter) instead")
        else:
            msg = f"reference does a pointer {rm.dir} of {rm.target()}; the port does a view {pm.dir}"
        ctx.add("memory", "kind", Severity.ERROR, msg, r, p, f"{rm.kind} {rm.dir}", f"{pm.kind} {pm.dir}")
        return
    if rm.base != pm.base:
        ctx.add("memory", "target", Severity.ERROR,
                f"{rm.dir} goes to {rm.target()} in the reference but {pm.target()} in the port", r, p,
                rm.target(), pm.target())
    if rm.elem != pm.elem:
        ctx.add("memory", "dtype", Severity.ERROR,
                f"{rm.what()} moves {rm.elem} in the reference but {pm.elem} in the port", r, p, rm.elem, pm.elem)
    if rm.shape != pm.shape:
        ctx.add("memory", "tile_shape", Severity.ERROR,
                f"{rm.what()} uses tile {rm.shape} in the reference but {pm.shape} in the port", r, p,
                rm.shape, pm.shape)
    if rm.order != pm.order:
        ctx.add("memory", "ordering", Severity.ERROR,
                f"{rm.what()} has memory ordering '{rm.order}' in the reference but '{pm.order}' in the port",
                r, p, rm.order, pm.order)
    if rm.kind == "view":
        if rm.dir == "load" and rm.padding != pm.padding:
            ctx.add("memory", "padding", Severity.ERROR,
                    f"{rm.what()} pads out-of-bounds elements with {rm.padding or 'nothing (undefined)'} in the "
                    f"reference but {pm.padding or 'nothing (undefined)'} in the port", r, p,
                    rm.padding or "none", pm.padding or "none")
        if rm.dim_map != pm.dim_map:
            ctx.add("memory", "dim_map", Severity.ERROR,
                    f"{rm.what()} maps dimensions [{rm.dim_map or 'identity'}] in the reference but "
                    f"[{pm.dim_map or 'identity'}] in the port (load order/transpose)", r, p,
                    rm.dim_map or "identity", pm.dim_map or "identity")
        if rm.index != pm.index and rm.shape == pm.shape:
            rvals = r.operands[(1 if rm.dir == "load" else 2):]
            pvals = p.operands[(1 if pm.dir == "load" else 2):]
            ri = ", ".join(render(v) for v in rvals)
            pi = ", ".join(render(v) for v in pvals)
            grid = len(rvals) == len(pvals) and all(
                a.hash == b.hash or _zero_vs_block_id(a, b) or _zero_vs_block_id(b, a) for a, b in zip(rvals, pvals))
            if grid:
                ctx.add("memory", "index_grid", Severity.WARNING,
                        f"{rm.what()} is indexed [{ri}] in the reference but [{pi}] in the port: the same only when "
                        f"the launch grid has extent 1 in that dimension (check the host launch)", r, p, ri, pi)
            else:
                ctx.add("memory", "index", Severity.ERROR,
                        f"{rm.what()} is indexed [{ri}] in the reference but [{pi}] in the port", r, p, ri, pi)
    else:
        if (rm.mask is None) != (pm.mask is None) or rm.mask_terms != pm.mask_terms or (
                rm.mask is not None and pm.mask is not None and rm.mask.hash != pm.mask.hash):
            rt = f"{rm.mask_terms} condition(s)" if rm.mask is not None else "no mask"
            pt = f"{pm.mask_terms} condition(s)" if pm.mask is not None else "no mask"
            lost = " (a mask or bounds check was lost)" if pm.mask_terms < rm.mask_terms else ""
            ctx.add("memory", "mask", Severity.ERROR,
                    f"{rm.what()} is masked by {rt} in the reference but {pt} in the port{lost}", r, p, rt, pt)
        if rm.dir == "load":
            rpad, ppad = _pad_text(rm.pad_value), _pad_text(pm.pad_value)
            if rpad != ppad:
                ctx.add("memory", "padding", Severity.ERROR,
                        f"{rm.what()} fills masked-off lanes with {rpad} in the reference but {ppad} in the port",
                        r, p, rpad, ppad)
        if rm.dir == "atomic":
            rmode = " ".join(f for f in r.op.flags if f not in rm.order.split())
            pmode = " ".join(f for f in p.op.flags if f not in pm.order.split())
            if rmode != pmode:
                ctx.add("memory", "atomic_mode", Severity.ERROR,
                        f"atomic on {rm.target()} is '{rmode}' in the reference but '{pmode}' in the port",
                        r, p, rmode, pmode)
    _check_op_hints(ctx, r, p)


def _mem_preds(n: Node, memo: dict[int, frozenset]) -> frozenset:
    """Memory ops n is ordered after, through its token operands (transitively)."""
    got = memo.get(n.idx)
    if got is not None:
        return got
    memo[n.idx] = frozenset()  # cycle guard
    out: set[Node] = set()
    stack = list(n.tok_operands)
    seen: set[int] = set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        d = v.node
        if d is None:
            continue
        if d.op.name in MEM_LOADS or d.op.name in MEM_WRITES:
            out.add(d)
            out |= _mem_preds(d, memo)
        else:
            stack.extend(d.tok_operands)
    res = frozenset(out)
    memo[n.idx] = res
    return res


def _check_tokens(ctx: _Ctx, rmem: dict[int, _Mem], pmem: dict[int, _Mem]) -> None:
    al = ctx.al
    rmemo: dict[int, frozenset] = {}
    pmemo: dict[int, frozenset] = {}
    for rm in rmem.values():
        r = rm.node
        p = al.partner(r)
        if p is None or p.idx not in pmem:
            continue
        ppreds = _mem_preds(p, pmemo)
        for rp in _mem_preds(r, rmemo):
            pp = al.partner(rp)
            if pp is None or pp in ppreds:
                continue
            a, b = rmem.get(rp.idx), rm
            if a is None:
                continue
            if a.dir == "load" and b.dir == "load":
                continue
            hazard = a.base is not None and a.base == b.base
            sev = Severity.ERROR if hazard else Severity.NOTE
            why = "both touch the same array, so the port may race" if hazard else "they touch different arrays"
            ctx.add("memory", "tokens", sev,
                    f"reference orders the {b.what()} (line {r.op.line}) after the {a.what()} (line {rp.op.line}) "
                    f"through tokens; the port does not ({why})", r, p)


# --- hints -----------------------------------------------------------------------------------


def _check_op_hints(ctx: _Ctx, r: Node, p: Node) -> None:
    rh = parse_hints(r.op.attrs.get("optimization_hints", ""))
    ph = parse_hints(p.op.attrs.get("optimization_hints", ""))
    if rh == ph:
        return
    for target in sorted(set(rh) | set(ph)):
        a, b = rh.get(target, {}), ph.get(target, {})
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                sev = Severity.WARNING if key == "latency" else Severity.ERROR
                ctx.add("hints", key, sev,
                        f"{r.op.name} hint {key} ({target}) is {a.get(key, 'unset')} in the reference but "
                        f"{b.get(key, 'unset')} in the port", r, p, a.get(key, "unset"),
                        b.get(key, "unset"))


def check_entry_hints(ctx: _Ctx) -> None:
    a_all = ctx.ref.entry.hints
    b_all = ctx.port.entry.hints
    for target in sorted(set(a_all) | set(b_all)):
        a, b = a_all.get(target, {}), b_all.get(target, {})
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                ctx.findings.append(Finding(
                    category="hints", check=f"hints.{key}", severity=Severity.ERROR, entry=ctx.entry,
                    message=f"entry hint {key} ({target}) is {a.get(key, 'unset')} in the reference but "
                            f"{b.get(key, 'unset')} in the port",
                    ref_line=ctx.ref.entry.line, port_line=ctx.port.entry.line,
                    ref=a.get(key, "unset"), port=b.get(key, "unset")))


# --- assumptions -----------------------------------------------------------------------------


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


def check_assumptions(ctx: _Ctx) -> None:
    def facts(ce: CanonEntry) -> dict[tuple[str, str], tuple[str, Node, str]]:
        out = {}
        for f in ce.assumes:
            key = (f.pred, _assume_key(f.target, ce))
            out.setdefault(key, (f.args, f.node, _assume_target(f.target, ce)))
        return out

    rf, pf = facts(ctx.ref), facts(ctx.port)
    bounded: dict[tuple[str, str], list[tuple[str, Node | None, Node | None]]] = defaultdict(list)
    vacuous: list[tuple[str, str, Node | None, Node | None]] = []
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
        if pred == "bounded":
            if a is None:
                bounded[("port adds", f"bounded<{b[0]}>")].append((what, r_node, p_node))
            elif b is None:
                bounded[("port drops", f"bounded<{a[0]}>")].append((what, r_node, p_node))
            else:
                bounded[("port changes", f"bounded<{a[0]}> to <{b[0]}>")].append((what, r_node, p_node))
            continue
        if pred == "div_by":
            ra = _int(a[0]) if a else None
            pb = _int(b[0]) if b else None
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
    d = _int(divisor)
    ty = node.op.result_types[0] if node.op.result_types else ""
    m = re.search(r"ptr<([a-z0-9]+)>", ty)
    if d and m:
        size = _ELEM_BYTES.get(m.group(1)) or (1 if m.group(1).startswith("f8") else None)
        if size and size % d == 0:
            return f"a ptr<{m.group(1)}> is always {size}-byte aligned"
    return None


def _int(s: str) -> int | None:
    try:
        return int(s.strip())
    except ValueError:
        return None


# --- per-pair checks: mma, reduction, math, loops, conversions ------------------------------

_TRANSCENDENTAL = frozenset({"exp", "exp2", "log", "log2", "rsqrt", "sqrt", "tanh", "tan", "sin", "cos", "sinh",
                             "cosh", "atan2", "fpowf", "fpowi"})
_MODE_ATTRS = ("rounding", "flush_to_zero")


def _combiner(n: Node) -> str:
    return ", ".join(ch.op.name + (f"<{ch.op.attrs['rounding']}>" if "rounding" in ch.op.attrs else "")
                     for region in n.children for ch in region if ch.op.name != "yield") or "nothing"


def check_pairs(ctx: _Ctx) -> None:
    al = ctx.al
    for r in ctx.ref.nodes:
        p = al.partner(r)
        if p is None:
            _unpaired(ctx, r, None)
            continue
        if r.hash == p.hash:
            continue
        name = r.op.name
        # math modes on any op
        for attr in _MODE_ATTRS:
            ra, pa = r.op.attrs.get(attr), p.op.attrs.get(attr)
            if ra != pa:
                if attr == "flush_to_zero":
                    msg = (f"{name} {'flushes denormals to zero' if ra is not None else 'keeps denormals'} in the "
                           f"reference but {'flushes' if pa is not None else 'does not flush'} in the port")
                    rv, pv = ("flush_to_zero" if ra is not None else "none"), ("flush_to_zero" if pa is not None
                                                                               else "none")
                else:
                    rv, pv = f"rounding<{ra}>" if ra else "default", f"rounding<{pa}>" if pa else "default"
                    msg = f"{name} uses {rv} in the reference but {pv} in the port"
                ctx.add("math", attr, Severity.ERROR, msg, r, p, rv, pv)
        if r.op.name != p.op.name and (r.family in ("exp", "log", "rsqrt")):
            ctx.add("math", "function", Severity.ERROR,
                    f"reference computes {r.op.name}, the port {p.op.name}", r, p, r.op.name, p.op.name)
        if name in MMA or p.op.name in MMA:
            _check_mma(ctx, r, p)
        elif name in REDUCTIONS:
            _check_reduction(ctx, r, p)
        elif name in LOOPS:
            _check_loop(ctx, r, p)
        elif name in CONVERSIONS and r.local != p.local and not (r.address_only and p.address_only):
            rt = f"{_t(r.op.in_types)} -> {_t(r.op.out_types)}"
            pt = f"{_t(p.op.in_types)} -> {_t(p.op.out_types)}"
            ctx.add("conversions", "type", Severity.ERROR,
                    f"{name} converts {rt} in the reference but {pt} in the port", r, p, rt, pt)
    for p in ctx.port.nodes:
        if p.idx not in al.p2r:
            _unpaired(ctx, None, p)


def _t(types: list[str]) -> str:
    return ", ".join(types) or "?"


def _unpaired(ctx: _Ctx, r: Node | None, p: Node | None) -> None:
    n = r if r is not None else p
    st = ctx.al.status_r[n.idx] if r is not None else ctx.al.status_p[n.idx]
    if st == RowStatus.BENIGN or n.address_only:
        return  # address arithmetic is judged through the memory op it feeds
    side, other = ("reference", "port") if r is not None else ("port", "reference")
    name = n.op.name
    val = (name, "missing") if r is not None else ("missing", name)
    if name in MMA:
        ctx.add("mma", "count", Severity.ERROR, f"{side} has an MMA ({name} {_t(n.op.in_types)}) the {other} "
                f"lacks", r, p, *val)
    elif name in REDUCTIONS:
        ctx.add("reduction", "count", Severity.ERROR,
                f"{side} has a {name} over dim {n.op.attrs.get('dim', '?')} ({_combiner(n)}) the {other} lacks",
                r, p, *val)
    elif name in LOOPS:
        ctx.add("loops", "count", Severity.ERROR, f"{side} has a {name} loop the {other} lacks", r, p, *val)
    elif name in CONVERSIONS:
        ctx.add("conversions", "count", Severity.ERROR,
                f"{side} converts {_t(n.op.in_types)} -> {_t(n.op.out_types)} ({name}); the {other} has no such "
                f"conversion", r, p, *val)
    elif name in _TRANSCENDENTAL:
        ctx.add("math", "function", Severity.ERROR, f"{side} computes {name} {_t(n.op.in_types)}; the {other} "
                f"does not", r, p, *val)
    elif name == "assert":
        msg = n.op.attrs.get("string", "").strip('"')
        if r is None:
            ctx.add("structure", "runtime_check", Severity.NOTE,
                    f"port adds a runtime check the reference does not have: {msg!r}", r, p, *val)
        else:
            ctx.add("structure", "runtime_check", Severity.WARNING,
                    f"reference checks {msg!r} at run time; the port does not", r, p, *val)
    elif name == "if":
        ctx.add("structure", "control", Severity.ERROR, f"{side} has an 'if' the {other} lacks", r, p, *val)
    elif name in ("print_tko", "print"):
        ctx.add("structure", "print", Severity.NOTE, f"{side} prints something the {other} does not", r, p, *val)


def _check_mma(ctx: _Ctx, r: Node, p: Node) -> None:
    ri, pi = r.op.in_types, p.op.in_types
    if r.op.name != p.op.name:
        ctx.add("mma", "kind", Severity.ERROR, f"reference uses {r.op.name}, the port {p.op.name}", r, p,
                r.op.name, p.op.name)
    if len(ri) >= 3 and len(pi) >= 3:
        ra, pa = type_info(ri[2]), type_info(pi[2])
        if ri[2] != pi[2]:
            ctx.add("mma", "accumulator", Severity.ERROR,
                    f"MMA accumulates in {ri[2]} in the reference but {pi[2]} in the port"
                    f"{' (precision lost)' if ra.elem == 'f32' and pa.elem in ('f16', 'bf16') else ''}",
                    r, p, ri[2], pi[2])
        for k, label in ((0, "A"), (1, "B")):
            if ri[k] != pi[k]:
                ctx.add("mma", "operands", Severity.ERROR,
                        f"MMA operand {label} is {ri[k]} in the reference but {pi[k]} in the port", r, p,
                        ri[k], pi[k])
    elif ri != pi:
        ctx.add("mma", "operands", Severity.ERROR, f"MMA types {_t(ri)} vs {_t(pi)}", r, p, _t(ri), _t(pi))
    rf = [f for f in r.op.flags if f in ("signed", "unsigned")]
    pf = [f for f in p.op.flags if f in ("signed", "unsigned")]
    if rf != pf:
        ctx.add("mma", "signedness", Severity.ERROR, f"MMA signedness {' '.join(rf)} vs {' '.join(pf)}", r, p,
                " ".join(rf), " ".join(pf))


def _check_reduction(ctx: _Ctx, r: Node, p: Node) -> None:
    ra, pa = r.op.attrs, p.op.attrs
    if r.op.name != p.op.name:
        ctx.add("reduction", "kind", Severity.ERROR, f"reference does a {r.op.name}, the port a {p.op.name}", r, p,
                r.op.name, p.op.name)
        return
    if ra.get("dim") != pa.get("dim"):
        ctx.add("reduction", "axis", Severity.ERROR,
                f"{r.op.name} runs over dim {ra.get('dim')} in the reference but dim {pa.get('dim')} in the port",
                r, p, ra.get("dim"), pa.get("dim"))
    if identity_values(ra.get("identities")) != identity_values(pa.get("identities")):
        ctx.add("reduction", "identity", Severity.ERROR,
                f"{r.op.name} identity is {ra.get('identities')} in the reference but {pa.get('identities')} in the "
                f"port", r, p, ra.get("identities"), pa.get("identities"))
    if ra.get("reverse") != pa.get("reverse"):
        ctx.add("reduction", "direction", Severity.ERROR,
                f"scan reverse={ra.get('reverse')} in the reference but {pa.get('reverse')} in the port", r, p,
                ra.get("reverse"), pa.get("reverse"))
    if r.region_hashes != p.region_hashes:
        rc, pc = _combiner(r), _combiner(p)
        if rc != pc:
            ctx.add("reduction", "combiner", Severity.ERROR,
                    f"{r.op.name} combines with {rc} in the reference but {pc} in the port", r, p, rc, pc)
    if r.op.in_types != p.op.in_types and ra.get("dim") == pa.get("dim"):
        ctx.add("reduction", "dtype", Severity.ERROR,
                f"{r.op.name} reduces {_t(r.op.in_types)} in the reference but {_t(p.op.in_types)} in the port",
                r, p, _t(r.op.in_types), _t(p.op.in_types))


def _check_loop(ctx: _Ctx, r: Node, p: Node) -> None:
    if r.op.name != p.op.name:
        ctx.add("loops", "kind", Severity.ERROR,
                f"reference uses a '{r.op.name}' loop, the port a '{p.op.name}' loop", r, p, r.op.name, p.op.name)
        return
    if r.op.name == "for":
        for k, label in ((0, "lower bound"), (1, "upper bound"), (2, "step")):
            if k < len(r.operands) and k < len(p.operands) and r.operands[k].hash != p.operands[k].hash:
                rv, pv = render(r.operands[k], ctx.ref), render(p.operands[k], ctx.port)
                ctx.add("loops", "bounds", Severity.ERROR,
                        f"for loop {label} is {rv} in the reference but {pv} in the port", r, p, rv, pv)
        rc, pc = r.operands[3:], p.operands[3:]
    else:
        rc, pc = r.operands, p.operands
    if len(rc) != len(pc):
        ctx.add("loops", "carried", Severity.ERROR,
                f"{r.op.name} loop carries {len(rc)} value(s) in the reference but {len(pc)} in the port", r, p,
                len(rc), len(pc))
    else:
        rt = [v.type for v in rc]
        pt = [v.type for v in pc]
        if rt != pt:
            ctx.add("loops", "carried_types", Severity.ERROR,
                    f"{r.op.name} loop-carried values are {_t(rt)} in the reference but {_t(pt)} in the port",
                    r, p, _t(rt), _t(pt))


# --- benign ----------------------------------------------------------------------------------


def check_benign(ctx: _Ctx) -> None:
    al = ctx.al
    dead_r = [n for n in ctx.ref.nodes if not n.live and n.idx not in al.r2p]
    dead_p = [n for n in ctx.port.nodes if not n.live and n.idx not in al.p2r]
    for side, dead in (("reference", dead_r), ("port", dead_p)):
        if dead:
            kinds = defaultdict(int)
            for n in dead:
                kinds[n.op.name] += 1
            detail = ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items()))
            ctx.add("benign", "dead_code", Severity.NOTE, f"{side} has {len(dead)} unused op(s) the other side "
                    f"does not: {detail}", dead[0] if side == "reference" else None,
                    dead[0] if side == "port" else None)
    dup_r = [n for n in ctx.ref.nodes if n.live and n.idx not in al.r2p and n.hash in al.port_hashes
             and n.op.name != "assume"]
    dup_p = [n for n in ctx.port.nodes if n.live and n.idx not in al.p2r and n.hash in al.ref_hashes
             and n.op.name != "assume"]
    for side, dups in (("reference", dup_r), ("port", dup_p)):
        if dups:
            names = ", ".join(sorted({n.op.name for n in dups}))
            ctx.add("benign", "cse", Severity.NOTE, f"{side} computes {len(dups)} value(s) twice that the other "
                    f"side computes once ({names})", dups[0] if side == "reference" else None,
                    dups[0] if side == "port" else None)


def check_fusion(ctx: _Ctx) -> None:
    """fma(a, b, c) on one side, addf(mulf(a, b), c) on the other: one rounding instead of two."""
    al = ctx.al

    def fmas(nodes: list[Node], status: dict[int, RowStatus]) -> list[Node]:
        return [n for n in nodes if n.op.name == "fma" and status[n.idx] in _CANDIDATE]

    def mul_adds(nodes: list[Node], status: dict[int, RowStatus]) -> list[Node]:
        return [n for n in nodes if n.op.name == "addf" and status[n.idx] in _CANDIDATE and any(
            v.node is not None and v.node.op.name == "mulf" for v in n.operands)]

    for fused_side, split_side in (("reference", "port"), ("port", "reference")):
        if fused_side == "reference":
            fused, split = fmas(ctx.ref.nodes, al.status_r), mul_adds(ctx.port.nodes, al.status_p)
            nf, ns = max(1, len(ctx.ref.nodes)), max(1, len(ctx.port.nodes))
        else:
            fused, split = fmas(ctx.port.nodes, al.status_p), mul_adds(ctx.ref.nodes, al.status_r)
            nf, ns = max(1, len(ctx.port.nodes)), max(1, len(ctx.ref.nodes))
        for f in fused:
            if not split:
                break
            best = min(split, key=lambda a: abs(a.idx / ns - f.idx / nf))
            split.remove(best)
            r, p = (f, best) if fused_side == "reference" else (best, f)
            ctx.add("math", "fma", Severity.WARNING,
                    f"the {fused_side} fuses a multiply-add into one fma (one rounding); the {split_side} computes "
                    f"mulf then addf (two roundings): results may differ in the last bit", r, p,
                    "fma" if fused_side == "reference" else "mulf+addf",
                    "mulf+addf" if fused_side == "reference" else "fma")


_EXPLAINING = (Severity.ERROR, Severity.WARNING)
_CANDIDATE = (RowStatus.CHANGED, RowStatus.REF_ONLY, RowStatus.PORT_ONLY)


def _unexplained(nodes: list[Node], status: dict[int, RowStatus], mentioned: set[int],
                 partner: dict[int, Node]) -> list[Node]:
    """Differing ops no finding accounts for. A finding explains the op it names, what that op
    consumes if it exists only for it (upstream), and type changes that merely follow (downstream)."""

    def candidate(n: Node) -> bool:
        return (status[n.idx] in _CANDIDATE and n.live and not n.address_only and n.op.name != "assume"
                and n.op.name not in TOKEN_OPS)

    def types_only(n: Node) -> bool:
        q = partner.get(n.idx)
        return q is not None and q.attrs_key == n.attrs_key

    if not any(status[n.idx] in _CANDIDATE for n in nodes):
        return []
    # identical ops neither need nor pass on an explanation: walk only the others
    nodes = [n for n in nodes if status[n.idx] != RowStatus.SAME]
    expl: set[int] = set()
    for _ in range(4):
        before = len(expl)
        for n in nodes:  # downstream
            if n.idx in expl:
                continue
            st = status[n.idx]
            if n.op.line in mentioned:
                expl.add(n.idx)
            elif (st == RowStatus.DOWNSTREAM or n.transparent or (st == RowStatus.CHANGED and types_only(n))) and any(
                    v.node is not None and v.node.idx in expl for v in n.operands):
                expl.add(n.idx)
            elif n.parent is not None and n.parent.idx in expl and st == RowStatus.CHANGED and types_only(n):
                expl.add(n.idx)
        for n in reversed(nodes):  # upstream
            if n.idx in expl or status[n.idx] not in _CANDIDATE:
                continue
            users = [u for u in n.users if u.live]
            if users and all(u.idx in expl or status[u.idx] == RowStatus.BENIGN for u in users):
                expl.add(n.idx)
        if len(expl) == before:
            break
    left = [n for n in nodes if candidate(n) and n.idx not in expl]
    # report the last op of an unexplained chain: an input used only by other reported ops is part
    # of their message
    left_ids = {n.idx for n in left}
    return [n for n in left if not (n.users and all(u.idx in left_ids for u in n.users if u.live))]


def check_structure(ctx: _Ctx) -> None:
    """Every difference must be accounted for: differing ops that no check explains are errors."""
    if ctx.ref.hash == ctx.port.hash:
        return
    al = ctx.al
    ment_r = {f.ref_line for f in ctx.findings if f.ref_line is not None}
    ment_p = {f.port_line for f in ctx.findings if f.port_line is not None}
    un_r = _unexplained(ctx.ref.nodes, al.status_r, ment_r, al.r2p)
    un_p = _unexplained(ctx.port.nodes, al.status_p, ment_p, al.p2r)
    reported = 0
    seen_pairs: set[int] = set()
    for n in un_r:
        if reported >= 10:
            break
        p = al.r2p.get(n.idx)
        if p is not None:
            seen_pairs.add(p.idx)
            ctx.add("structure", "changed", Severity.ERROR,
                    f"{n.op.name} differs: reference `{_strip_names(n.op.text)}` vs port `{_strip_names(p.op.text)}`",
                    n, p, _strip_names(n.op.text), _strip_names(p.op.text))
        else:
            ctx.add("structure", "ref_only", Severity.ERROR,
                    f"reference computes `{_strip_names(n.op.text)}`; the port has nothing like it", n, None,
                    _strip_names(n.op.text), "missing")
        reported += 1
    for n in un_p:
        if reported >= 10:
            break
        if n.idx in seen_pairs:
            continue
        q = al.p2r.get(n.idx)
        if q is not None:
            ctx.add("structure", "changed", Severity.ERROR,
                    f"{n.op.name} differs: reference `{_strip_names(q.op.text)}` vs port `{_strip_names(n.op.text)}`",
                    q, n, _strip_names(q.op.text), _strip_names(n.op.text))
        else:
            ctx.add("structure", "port_only", Severity.ERROR,
                    f"port computes `{_strip_names(n.op.text)}`; the reference has nothing like it", None, n,
                    "missing", _strip_names(n.op.text))
        reported += 1
    left = len(un_r) + len(un_p) - reported - len(seen_pairs)
    if left > 0:
        ctx.add("structure", "more", Severity.ERROR, f"and {left} more differing op(s) (see the side-by-side view)")
    if reported or any(f.severity in _EXPLAINING and f.category not in ("assumptions", "hints", "benign")
                       for f in ctx.findings):
        return
    # nothing differs locally, yet the graphs differ: operands are wired differently
    bad = []
    for r in ctx.ref.nodes:
        if al.status_r[r.idx] == RowStatus.DOWNSTREAM and not r.address_only:
            ups = [v for v, w in zip(r.operands, al.r2p[r.idx].operands) if v.hash != w.hash]
            if ups and all(v.node is None or al.status_r.get(v.node.idx) == RowStatus.SAME for v in ups):
                bad.append(r)
    for r in bad[:5]:
        p = al.r2p[r.idx]
        rv = f"{r.op.name}({', '.join(render(v, ctx.ref) for v in r.operands)})"
        pv = f"{p.op.name}({', '.join(render(v, ctx.port) for v in p.operands)})"
        ctx.add("structure", "dataflow", Severity.ERROR,
                f"{r.op.name} takes different inputs: reference computes {rv}, the port {pv} (operands swapped "
                f"or wired to other values)", r, p, rv, pv)
    if not bad:
        ctx.add("structure", "dataflow", Severity.ERROR, "the entries' dataflow graphs differ (see the side-by-side "
                "view)")


_NAME_RE = re.compile(r"%[A-Za-z0-9_$.-]+(?:#[0-9]+)?")


def _strip_names(text: str) -> str:
    return _NAME_RE.sub("%", text)[:200]


def check_signature(ctx: _Ctx) -> None:
    def ptr_types(ce: CanonEntry) -> list[str]:
        return [ce.args[k].type for k, _ in sorted(ce.ptr_ordinal.items(), key=lambda kv: kv[1])]

    rp, pp = ptr_types(ctx.ref), ptr_types(ctx.port)
    if rp != pp:
        ctx.findings.append(Finding(
            category="entries", check="entries.signature", severity=Severity.ERROR, entry=ctx.entry,
            message=f"array parameters are ({_t(rp)}) in the reference but ({_t(pp)}) in the port",
            ref_line=ctx.ref.entry.line, port_line=ctx.port.entry.line, ref=_t(rp), port=_t(pp)))


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------


def _is_mem(n: Node) -> bool:
    return n.op.name in MEM_LOADS or n.op.name in MEM_WRITES


def infer_array_order(ref: CanonEntry, port: CanonEntry, al: Alignment,
                      port_path: str | None = None) -> dict[int, int] | None:
    """If the port's memory ops touch array #j where the reference's touch #i, consistently, the
    port declares its arrays in another order (cutile-rs puts `&mut` outputs first): return the
    port-ordinal -> reference-ordinal map, else None. Memory ops are paired for this with every
    array made anonymous, so loads pair in the order the kernels issue them."""
    mismatch = False
    for r in ref.nodes:
        p = al.r2p.get(r.idx)
        if _is_mem(r) and p is not None and _is_mem(p) and _Mem(r, ref).base != _Mem(p, port).base:
            mismatch = True
            break
    if not mismatch:
        rb = sorted((_Mem(n, ref).dir, _Mem(n, ref).base) for n in ref.nodes if _is_mem(n) and n.live)
        pb = sorted((_Mem(n, port).dir, _Mem(n, port).base) for n in port.nodes if _is_mem(n) and n.live)
        if rb == pb:
            return None
    anon_r = canonicalize(ref.entry, None, array_map={o: 0 for o in ref.ptr_ordinal.values()})
    anon_p = canonicalize(port.entry, port_path, array_map={o: 0 for o in port.ptr_ordinal.values()})
    try:
        anon = Alignment(anon_r, anon_p)
        fwd: dict[int, int] = {}
        back: dict[int, int] = {}
        for r in ref.nodes:
            if not _is_mem(r):
                continue
            ap = anon.r2p.get(r.idx)
            p = port.nodes[ap.idx] if ap is not None else None
            if p is None or not (p.op.name in MEM_LOADS or p.op.name in MEM_WRITES):
                continue
            rb, pb = _Mem(r, ref).base, _Mem(p, port).base
            if rb is None or pb is None:
                continue
            if fwd.setdefault(rb, pb) != pb or back.setdefault(pb, rb) != rb:
                return None
    finally:
        release(anon_r)
        release(anon_p)
    if all(k == v for k, v in fwd.items()):
        return None
    n_ref, n_port = len(ref.ptr_ordinal), len(port.ptr_ordinal)
    if n_ref != n_port:
        return None
    free_ref = [o for o in range(n_ref) if o not in fwd]
    perm = {pb: rb for rb, pb in fwd.items()}
    for po in range(n_port):
        if po not in perm:
            if not free_ref:
                return None
            perm[po] = free_ref.pop(0)
    if sorted(perm) != list(range(n_port)) or sorted(perm.values()) != list(range(n_ref)):
        return None
    rtypes = {o: ref.args[k].type for k, o in ref.ptr_ordinal.items()}
    ptypes = {o: port.args[k].type for k, o in port.ptr_ordinal.items()}
    if any(rtypes.get(perm[po]) != ty for po, ty in ptypes.items()):
        return None
    return perm


def diff_entries(ref: CanonEntry, port: CanonEntry, entry_name: str | None = None,
                 port_path: str | None = None) -> tuple[list[Finding], list[AlignedRow]]:
    name = entry_name or ref.name
    al = Alignment(ref, port)
    perm = infer_array_order(ref, port, al, port_path)
    if not perm:
        return _diff_aligned(name, ref, port, al, perm)
    remapped = canonicalize(port.entry, port_path, array_map=perm)
    try:
        return _diff_aligned(name, ref, remapped, Alignment(ref, remapped), perm)
    finally:
        release(remapped)


def _diff_aligned(name: str, ref: CanonEntry, port: CanonEntry, al: Alignment,
                  perm: dict[int, int] | None) -> tuple[list[Finding], list[AlignedRow]]:
    ctx = _Ctx(name, ref, port, al)
    if perm:
        desc = ", ".join(f"reference #{v} = port #{k}" for k, v in sorted(perm.items(), key=lambda kv: kv[1])
                         if k != v)
        ctx.findings.append(Finding(
            category="entries", check="entries.array_order", severity=Severity.NOTE, entry=name,
            ref_line=ref.entry.line, port_line=port.entry.line,
            message=f"the port takes its arrays in another order ({desc}); compared with that mapping, which "
                    f"the host wrapper must follow"))
    check_signature(ctx)
    check_entry_hints(ctx)
    check_assumptions(ctx)
    check_memory(ctx)
    check_pairs(ctx)
    check_fusion(ctx)
    check_benign(ctx)
    check_structure(ctx)
    hdr_status = RowStatus.SAME if ref.hash == port.hash and ref.entry.hints == port.entry.hints else RowStatus.CHANGED
    rows = [AlignedRow(entry=name, depth=0, status=hdr_status, ref_line=ref.entry.line, ref_text=ref.entry.text,
                       port_line=port.entry.line, port_text=port.entry.text, category="entries")]
    rows.extend(al.rows(name))
    return ctx.findings, rows


def group_findings(findings: list[Finding]) -> list[FindingGroup]:
    by_cat: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_cat[f.category].append(f)
    order = list(CATEGORIES)
    groups = []
    for cat in sorted(by_cat, key=lambda c: (order.index(c) if c in order else len(order), c)):
        fs = sorted(by_cat[cat], key=lambda f: (SEVERITY_RANK[f.severity], f.entry or "", f.ref_line or 0,
                                                f.port_line or 0, f.check, f.message))
        worst = min((f.severity for f in fs), key=lambda s: SEVERITY_RANK[s])
        groups.append(FindingGroup(category=cat, description=CATEGORIES.get(cat, cat), severity=worst, findings=fs))
    return groups


def verdict_of(findings: list[Finding]) -> Verdict:
    if any(f.severity == Severity.ERROR for f in findings):
        return Verdict.FAIL_FIXABLE
    if findings:
        return Verdict.PASS_WITH_NOTES
    return Verdict.PASS


_gc_lock = threading.Lock()
_gc_depth = 0
_gc_was_enabled = False


@contextmanager
def _gc_paused():
    """Keep Python's cyclic garbage collector out of a diff. A diff builds ~100k small objects that
    all stay alive until it ends, so every automatic collection in between traverses a growing heap
    for nothing (it roughly doubled the time of a 1,000-op diff and made it erratic). The canonical
    entries' cycles are broken explicitly (`canon.release`) so the diff leaves no cyclic garbage
    behind. Nested and concurrent diffs share one pause; the collector's previous state is restored."""
    global _gc_depth, _gc_was_enabled
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_was_enabled:
                gc.enable()


def diff_modules(ref: Module, port: Module) -> IRDiffReport:
    with _gc_paused():
        canon_r = {id(e): canonicalize(e, ref.path) for e in ref.entries}
        canon_p = {id(e): canonicalize(e, port.path) for e in port.entries}
        try:
            return _diff_canonical(ref, port, canon_r, canon_p)
        finally:
            for ce in (*canon_r.values(), *canon_p.values()):
                release(ce)


def _diff_canonical(ref: Module, port: Module, canon_r: dict[int, CanonEntry],
                    canon_p: dict[int, CanonEntry]) -> IRDiffReport:
    findings: list[Finding] = []
    rows: list[AlignedRow] = []
    entries: list[EntryPair] = []
    n_ref_ops = n_port_ops = 0
    for ce in canon_r.values():
        n_ref_ops += len(ce.nodes)
    for ce in canon_p.values():
        n_port_ops += len(ce.nodes)
    identical = 0
    for r, p, rule in match_entries(ref.entries, port.entries):
        if r is None or p is None:
            e = r or p
            entries.append(EntryPair(ref=r.name if r else None, port=p.name if p else None, rule=rule,
                                     ref_line=r.line if r else None, port_line=p.line if p else None))
            if r is not None:
                findings.append(Finding(category="entries", check="entries.missing", severity=Severity.ERROR,
                                        entry=r.name, ref_line=r.line,
                                        message=f"reference entry {r.name} has no counterpart in the port"))
            else:
                # Code the reference does not have is code nothing verified: never a pass (issue #8: 9,679
                # extra entries used to come out PASS_WITH_NOTES).
                findings.append(Finding(category="entries", check="entries.extra", severity=Severity.ERROR,
                                        entry=e.name, port_line=p.line,
                                        message=f"port entry {p.name} has no counterpart in the reference; "
                                                "remove it or add it to the reference"))
            continue
        cr, cp = canon_r[id(r)], canon_p[id(p)]
        same = cr.hash == cp.hash
        identical += same
        entries.append(EntryPair(ref=r.name, port=p.name, rule=rule, identical=same, ref_line=r.line,
                                 port_line=p.line))
        if rule == "position":
            findings.append(Finding(category="entries", check="entries.position", severity=Severity.NOTE,
                                    entry=r.name, ref_line=r.line, port_line=p.line,
                                    message=f"reference entry {r.name} matched to port entry {p.name} by position"))
        f, rw = diff_entries(cr, cp, r.name, port.path)
        findings.extend(f)
        rows.extend(rw)
    if ref.has_debug_info or port.has_debug_info:
        sides = " and ".join(s for s, m in (("reference", ref), ("port", port)) if m.has_debug_info)
        findings.append(Finding(category="benign", check="benign.debug_info", severity=Severity.NOTE,
                                message=f"debug locations in the {sides} were ignored"))
    for m, side in ((ref, "reference"), (port, "port")):
        if m.top_ops:
            names = ", ".join(sorted({o.name for o in m.top_ops}))
            findings.append(Finding(category="structure", check="structure.top_level", severity=Severity.NOTE,
                                    message=f"{side} has top-level ops outside entries ({names}); not compared"))
    counts = defaultdict(int)
    for row in rows:
        counts[f"rows_{row.status.value}"] += 1
    stats = {"ref_entries": len(ref.entries), "port_entries": len(port.entries), "identical_entries": identical,
             "ref_ops": n_ref_ops, "port_ops": n_port_ops, **counts}
    return IRDiffReport(verdict=verdict_of(findings), ref_path=ref.path, port_path=port.path, entries=entries,
                        groups=group_findings(findings), rows=rows, stats=stats)


def diff_texts(ref_text: str, port_text: str, ref_path: str | None = None,
               port_path: str | None = None) -> IRDiffReport:
    with _gc_paused():
        return diff_modules(parse_text(ref_text, ref_path), parse_text(port_text, port_path))


def diff_files(ref_path: str | Path, port_path: str | Path) -> IRDiffReport:
    with _gc_paused():
        return diff_modules(parse_file(ref_path), parse_file(port_path))
