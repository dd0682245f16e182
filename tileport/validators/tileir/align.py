"""Pairing two entries: entries by name / base name / position, and ops of a reference entry with ops of
a port entry (exact structural hashes first, then by role, then by similarity), each op given a status."""

from __future__ import annotations

import re
from collections import defaultdict

from tileport.validators.tileir.canon import TOKEN_OPS, CanonEntry, Node, Val
from tileport.validators.tileir.findings import AlignedRow, RowStatus
from tileport.validators.tileir.parse import Entry

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


# assumptions are compared as facts and token plumbing as ordering facts: never paired by similarity
_UNPAIRED_KINDS = frozenset({"assume"}) | TOKEN_OPS
# a constant is judged by where it is used: paired only by role, never by resemblance to another constant
_NO_SIMILARITY = _UNPAIRED_KINDS | {"constant"}
_ANCHOR_OPS = frozenset({"if", "for", "loop", "reduce", "scan", "mmaf", "mmai", "yield", "continue", "break", "return"})


def _is_anchor(n: Node) -> bool:
    # an `if` that only selects a value (an integer form: a clamp) is arithmetic, not control flow
    return n.effect or n.is_load or (n.op.name in _ANCHOR_OPS and n.form is None)


def _family(n: Node) -> str:
    """Ops that compute one integer form pair whatever form each side wrote (mini with an if/yield clamp)."""
    return f"form:{n.form.computes}" if n.form is not None else n.family


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
        # ops that anchor a kernel (memory ops, loops, branches, reductions, MMAs, terminators) pair by similarity;
        # what feeds them pairs by role, from user to operand (a loop's step with that loop's step, a compare
        # with the compare in the same place); only then the rest by similarity, constants never
        self._pair_similar(anchors=True)
        self._pair_by_role()
        self._pair_similar(anchors=False)
        self._pair_by_role()
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
        # ops a normalised form consumes (transparent) pair last: the form's own op pairs with the other side's
        for r in sorted(self.ref.nodes, key=lambda n: n.transparent):
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

    def _pair_by_role(self) -> None:
        """Operands of paired ops pair with the operands in the same place (users before producers)."""
        r2p = self.r2p
        p2r = self.p2r
        for r in reversed(self.ref.nodes):
            p = r2p.get(r.idx)
            if p is None or r.hash == p.hash or len(r.operands) != len(p.operands):
                continue
            for ro, po in zip(r.operands, p.operands):
                a, b = ro.node, po.node
                if (a is None or b is None or a.idx in r2p or b.idx in p2r or a.transparent or b.transparent
                        or _family(a) != _family(b) or a.op.name in _UNPAIRED_KINDS or not a.live or not b.live):
                    continue
                if a.op.name == "constant" and a.local[2] != b.local[2]:
                    continue  # a constant pairs only with a constant of the same type
                self.pair(a, b)

    def _pair_similar(self, anchors: bool = False) -> None:
        buckets: dict[str, list[Node]] = defaultdict(list)
        for p in self.port.nodes:
            if p.idx not in self.p2r and p.live and p.op.name not in _NO_SIMILARITY and not p.transparent and (
                    not anchors or _is_anchor(p)):
                buckets[_family(p)].append(p)
        nr = max(1, len(self.ref.nodes))
        np_ = max(1, len(self.port.nodes))
        for r in self.ref.nodes:
            if r.idx in self.r2p or not r.live or r.transparent or r.op.name in _NO_SIMILARITY or (
                    anchors and not _is_anchor(r)):
                continue
            cands = buckets.get(_family(r))
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
                elif r.form is not None and p.form is not None and r.form.computes == p.form.computes and \
                        r.op.result_types == p.op.result_types:
                    st = RowStatus.DOWNSTREAM  # one integer form written two ways: only its inputs differ
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
