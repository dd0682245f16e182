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
   Equivalent integer forms (`tileir.intforms`) hash alike; parameters are named by role.
3. **Alignment** (`tileir.align`): ops with equal hashes are paired; then anchors (memory ops,
   loops, branches, MMAs) by similarity and their operands by role; constants only by role.
   Where the reference was compiled for fixed sizes the port computes from parameters
   (`tileir.specialise`), the port is canonicalised again with those values read as the constants.
   Status per op: same, changed (its own attributes or types differ), downstream (identical op fed
   by a changed value), ref_only, port_only, benign.
4. **Checks** (`tileir.checks`, one module per category; each finding carries its consequence:
   values, speed, host or neither, and its severity follows it): memory, mma, reduction, math, loops, assumptions,
   conversions, hints, entries, structure; `benign` collects dead code, CSE duplicates, extra
   `assume bounded` and debug info. If two entries differ and no check can say why, a
   `structure.dataflow` error names the first differing ops: a difference never passes silently.
"""

from __future__ import annotations

import gc
import threading
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

from tileport.validators.tileir import specialise
from tileport.validators.tileir.align import Alignment, base_name, match_entries
from tileport.validators.tileir.canon import MEM_LOADS, MEM_WRITES, CanonEntry, Node, canonicalize, release
from tileport.validators.tileir.checks import CHECKS
from tileport.validators.tileir.checks.context import Ctx
from tileport.validators.tileir.checks.memory import Mem
from tileport.validators.tileir.findings import (
    CATEGORIES, SEVERITY_RANK, AlignedRow, Consequence, EntryPair, Finding, FindingGroup, IRDiffReport, RowStatus,
    Severity,
    Verdict,
)
from tileport.validators.tileir.parse import Module, parse_file, parse_text

__all__ = ["CATEGORIES", "SEVERITY_RANK", "AlignedRow", "Alignment", "Consequence", "EntryPair", "Finding",
           "FindingGroup",
           "IRDiffReport", "RowStatus", "Severity", "Verdict", "base_name", "diff_entries", "diff_files",
           "diff_modules", "diff_texts", "group_findings", "match_entries", "verdict_of"]

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
        if _is_mem(r) and p is not None and _is_mem(p) and Mem(r, ref).base != Mem(p, port).base:
            mismatch = True
            break
    if not mismatch:
        rb = sorted((Mem(n, ref).dir, Mem(n, ref).base) for n in ref.nodes if _is_mem(n) and n.live)
        pb = sorted((Mem(n, port).dir, Mem(n, port).base) for n in port.nodes if _is_mem(n) and n.live)
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
            rb, pb = Mem(r, ref).base, Mem(p, port).base
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
                 port_path: str | None = None, target: str | None = None) -> tuple[list[Finding], list[AlignedRow]]:
    name = entry_name or ref.name
    al = Alignment(ref, port)
    perm = infer_array_order(ref, port, al, port_path)
    current, made = port, []
    if perm:
        current = canonicalize(port.entry, port_path, array_map=perm)
        made.append(current)
        al = Alignment(ref, current)
    strip = _only_padding_the_reference_leaves_undefined(ref, current, al)
    if strip:
        # compare what is computed from those loads, not the padding (checks/memory notes it)
        ref = canonicalize(ref.entry, None, strip_padding=True)
        current = canonicalize(port.entry, port_path, array_map=perm or None, strip_padding=True)
        made += [ref, current]
        al = Alignment(ref, current)
    # a reference specialised on values the port takes at run time: read those port values as the constants
    subst: dict = {}
    found: list = []
    for _ in range(3):
        more, what = specialise.find(ref, current, al.r2p)
        more = {k: v for k, v in more.items() if k not in subst}
        if not more:
            break
        subst.update(more)
        found.extend(w for w in what if (w[0].op.line, 0) in more)
        current = canonicalize(port.entry, port_path, array_map=perm or None, subst=subst, strip_padding=strip)
        made.append(current)
        al = Alignment(ref, current)
    try:
        return _diff_aligned(name, ref, current, al, perm, target, found)
    finally:
        for ce in made:
            release(ce)


def _only_padding_the_reference_leaves_undefined(ref: CanonEntry, port: CanonEntry, al: Alignment) -> bool:
    """Paired view loads differ in padding, and every such difference is one the reference leaves undefined."""
    some = False
    for r in ref.nodes:
        p = al.r2p.get(r.idx)
        if r.op.name != "load_view_tko" or p is None or p.op.name != "load_view_tko" or not r.operands:
            continue
        rp, pp = Mem(r, ref).padding, Mem(p, port).padding
        if rp != pp:
            if rp is not None:
                return False
            some = True
    return some


def _diff_aligned(name: str, ref: CanonEntry, port: CanonEntry, al: Alignment,
                  perm: dict[int, int] | None, target: str | None = None,
                  specialised: list | None = None) -> tuple[list[Finding], list[AlignedRow]]:
    ctx = Ctx(name, ref, port, al, target)
    for node, lit, expr in (specialised or [])[:8]:
        ctx.findings.append(Finding(
            category="structure", check="structure.specialised", severity=Severity.WARNING, entry=name,
            port_line=node.op.line, ref=lit, port=expr,
            message=f"the reference was compiled for a fixed value: it has the constant {lit} where the port computes "
                    f"{expr} from parameters it folds away; the same kernel when the host passes values that give "
                    f"{lit}"))
    if specialised and len(specialised) > 8:
        ctx.findings.append(Finding(
            category="structure", check="structure.specialised", severity=Severity.WARNING, entry=name,
            message=f"and {len(specialised) - 8} more values the reference has as constants and the port computes"))
    if perm:
        desc = ", ".join(f"reference #{v} = port #{k}" for k, v in sorted(perm.items(), key=lambda kv: kv[1])
                         if k != v)
        ctx.findings.append(Finding(
            category="entries", check="entries.array_order", severity=Severity.NOTE, entry=name,
            ref_line=ref.entry.line, port_line=port.entry.line,
            message=f"the port takes its arrays in another order ({desc}); compared with that mapping, which "
                    f"the host wrapper must follow"))
    for check in CHECKS:
        check(ctx)
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


def diff_modules(ref: Module, port: Module, target: str | None = None) -> IRDiffReport:
    """`target` (e.g. "sm_90"): the GPU target both modules were compiled for; hints are judged by the values
    that apply there. None: every target either side names is judged."""
    with _gc_paused():
        canon_r = {id(e): canonicalize(e, ref.path) for e in ref.entries}
        canon_p = {id(e): canonicalize(e, port.path) for e in port.entries}
        try:
            return _diff_canonical(ref, port, canon_r, canon_p, target)
        finally:
            for ce in (*canon_r.values(), *canon_p.values()):
                release(ce)


def _diff_canonical(ref: Module, port: Module, canon_r: dict[int, CanonEntry],
                    canon_p: dict[int, CanonEntry], target: str | None = None) -> IRDiffReport:
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
        f, rw = diff_entries(cr, cp, r.name, port.path, target)
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
    return IRDiffReport(verdict=verdict_of(findings), ref_path=ref.path, port_path=port.path, target=target,
                        entries=entries,
                        groups=group_findings(findings), rows=rows, stats=stats)


def diff_texts(ref_text: str, port_text: str, ref_path: str | None = None,
               port_path: str | None = None, target: str | None = None) -> IRDiffReport:
    with _gc_paused():
        return diff_modules(parse_text(ref_text, ref_path), parse_text(port_text, port_path), target)


def diff_files(ref_path: str | Path, port_path: str | Path, target: str | None = None) -> IRDiffReport:
    with _gc_paused():
        return diff_modules(parse_file(ref_path), parse_file(port_path), target)
