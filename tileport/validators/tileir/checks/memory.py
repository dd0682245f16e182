"""memory: loads, stores and atomics compared pair by pair (view vs pointer, target array, dtype, tile shape,
ordering, padding, dim map, index, masks, atomic mode) and their token ordering."""

from __future__ import annotations

from tileport.validators.tileir.canon import LOOPS, MEM_LOADS, MEM_WRITES, CanonEntry, Node, Val, and_terms, base_arg, render
from tileport.validators.tileir.checks.context import Ctx
from tileport.validators.tileir.checks.hints import check_op_hints
from tileport.validators.tileir.checks.masks import compare_masks, masked_lanes_unobservable
from tileport.validators.tileir.checks.pointers import compare_addresses
from tileport.validators.tileir.findings import RowStatus, Severity
from tileport.validators.tileir.parse import type_info

class Mem:
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


def _compare_masks(ctx: Ctx, rm: Mem, pm: Mem) -> None:
    rt = f"{rm.mask_terms} condition(s)" if rm.mask is not None else "no mask"
    pt = f"{pm.mask_terms} condition(s)" if pm.mask is not None else "no mask"
    r, p = rm.node, pm.node
    mv = compare_masks(rm.mask, pm.mask, ctx.ref, ctx.port)
    if mv.lost or mv.added:
        what = []
        if mv.lost:
            what.append("the port lacks " + ", ".join(f"`{t}`" for t in mv.lost))
        if mv.added:
            what.append("the port adds " + ", ".join(f"`{t}`" for t in mv.added))
        lanes = "reads out of bounds or loses data" if mv.lost else "drops lanes the reference keeps"
        ctx.add("memory", "mask", Severity.ERROR,
                f"{rm.what()} is masked by {rt} in the reference and {pt} in the port: {'; '.join(what)} (the "
                f"port {lanes})", r, p, rt, pt)
    elif mv.host:
        ctx.add("memory", "mask_bound", Severity.WARNING,
                f"{rm.what()}: " + "; ".join(mv.host) + ": the same bounds when the host passes those values (the "
                "host stage's correctness tests confirm it)", r, p, rt, pt)


def _is_zero(v: Val) -> bool:
    v = v.stripped
    return v.splat is not None and v.splat[1] == "0"


def _block_axes(vals: list[Val], depth: int = 0) -> set[int]:
    """The block-id axes (0 = x, 1 = y, 2 = z) the values read, through integer arithmetic."""
    axes: set[int] = set()
    for v in vals:
        v = v.stripped
        n = v.node
        if n is None or depth > 8:
            continue
        if n.op.name == "get_tile_block_id":
            axes.add(v.index)
        else:
            axes |= _block_axes(list(n.operands), depth + 1)
    return axes


def _vanishes_on_one_block(v: Val, free: set[int], depth: int = 0) -> bool:
    """v is 0 whenever the block ids of the `free` axes are 0: such a block id, 0, a product with such a factor, a
    sum of such terms (a slab's offset `bid(y) * tiles_per_slab` is one)."""
    v = v.stripped
    if v.splat is not None:
        return v.splat[1] == "0"
    n = v.node
    if n is None or depth > 8:
        return False
    if n.op.name == "get_tile_block_id":
        return v.index in free
    if n.op.name == "muli":
        return any(_vanishes_on_one_block(o, free, depth + 1) for o in n.operands)
    if n.op.name == "addi":
        return all(_vanishes_on_one_block(o, free, depth + 1) for o in n.operands)
    return False


def _equal_on_one_block(a: Val, b: Val, free: set[int], depth: int = 0) -> bool:
    """a and b are the same index when the block ids of the `free` axes (those the reference's index never reads)
    are 0, i.e. the launch grid has extent 1 there: b == a, or b == a + t (either side) with t vanishing then."""
    if a.hash == b.hash:
        return True
    if depth > 8:
        return False
    if (_is_zero(a) or _is_zero(b)) and _vanishes_on_one_block(a, free) and _vanishes_on_one_block(b, free):
        return True
    for x, y in ((a, b), (b, a)):
        n = y.stripped.node
        if n is not None and n.op.name == "addi" and len(n.operands) == 2:
            u, w = n.operands
            if (_vanishes_on_one_block(u, free) and _equal_on_one_block(x, w, free, depth + 1)) or (
                    _vanishes_on_one_block(w, free) and _equal_on_one_block(x, u, free, depth + 1)):
                return True
    return False


def _pad_text(v: Val | None) -> str:
    if v is None:
        return "none"
    if v.splat is not None:
        return v.splat[1]
    return render(v)


def check_memory(ctx: Ctx) -> None:
    al = ctx.al
    rmem = {n.idx: Mem(n, ctx.ref) for n in ctx.ref.nodes if n.live and (n.op.name in MEM_LOADS or
                                                                        n.op.name in MEM_WRITES)}
    pmem = {n.idx: Mem(n, ctx.port) for n in ctx.port.nodes if n.live and (n.op.name in MEM_LOADS or
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


def _compare_mem(ctx: Ctx, rm: Mem, pm: Mem) -> None:
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
            if rm.padding is None:
                # the reference leaves out-of-bounds lanes undefined, so nothing it computes may depend on them:
                # a port that defines them is at least as defined
                ctx.add("memory", "padding", Severity.NOTE,
                        f"{rm.what()} leaves out-of-bounds elements undefined in the reference; the port pads them "
                        f"with {pm.padding} (at least as defined: cannot change a result the reference defines)",
                        r, p, "none", pm.padding)
            else:
                ctx.add("memory", "padding", Severity.ERROR,
                        f"{rm.what()} pads out-of-bounds elements with {rm.padding} in the reference but "
                        f"{pm.padding or 'nothing (undefined)'} in the port: results that read those lanes change",
                        r, p, rm.padding, pm.padding or "none")
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
            free = {0, 1, 2} - _block_axes(list(rvals))
            grid = len(rvals) == len(pvals) and all(_equal_on_one_block(a, b, free) for a, b in zip(rvals, pvals))
            if grid:
                ctx.add("memory", "index_grid", Severity.WARNING,
                        f"{rm.what()} is indexed [{ri}] in the reference but [{pi}] in the port: the same only when "
                        f"the launch grid has extent 1 in that dimension (check the host launch); the port also reads that "
                        f"block id on its access path, which cost 1.5-3 % on one-block-per-SM kernels (H100): keep the "
                        f"reference's index", r, p, ri, pi)
            else:
                ctx.add("memory", "index", Severity.ERROR,
                        f"{rm.what()} is indexed [{ri}] in the reference but [{pi}] in the port", r, p, ri, pi)
    else:
        if rm.index != pm.index and r.operands and p.operands:
            got = compare_addresses(r.operands[0], p.operands[0], ctx.ref, ctx.port)
            if got is not None and not got[2] and got[0] != got[1]:
                ctx.add("memory", "address", Severity.ERROR,
                        f"{rm.what()} addresses base + {got[0]} in the reference but base + {got[1]} in the port "
                        f"(other elements are read or written)", r, p, got[0], got[1])
            elif got is not None and got[2]:
                ctx.add("memory", "address_stride", Severity.WARNING,
                        f"{rm.what()} multiplies by " + "; ".join(got[2]) + ": the same elements when the host "
                        "passes that stride (the host stage's correctness tests confirm it)", r, p)
        if (rm.mask is None) != (pm.mask is None) or rm.mask_terms != pm.mask_terms or (
                rm.mask is not None and pm.mask is not None and rm.mask.hash != pm.mask.hash):
            _compare_masks(ctx, rm, pm)
        if rm.dir == "load":
            rpad, ppad = _pad_text(rm.pad_value), _pad_text(pm.pad_value)
            seen_by = masked_lanes_unobservable(p, pm.mask) if rpad != ppad else "no"
            if rpad != ppad and seen_by == "no":
                # what the port stores is then decided by its masks alone, which the mask check judges
                ctx.add("memory", "padding", Severity.NOTE,
                        f"{rm.what()} fills masked-off lanes with {rpad} in the reference but {ppad} in the port; "
                        f"the port never lets those lanes reach memory (every use is lane-wise and stored under the "
                        f"load's own conditions), so its padding cannot change a result", r, p, rpad, ppad)
            elif rpad != ppad and seen_by == "host":
                ctx.add("memory", "padding_host", Severity.WARNING,
                        f"{rm.what()} fills masked-off lanes with {rpad} in the reference but {ppad} in the port; "
                        f"the port stores every use lane-wise under bounds on the same indices but against other "
                        f"parameters than the load's, so those lanes stay unstored when the host passes equal "
                        f"shapes (the host stage's correctness tests confirm it)", r, p, rpad, ppad)
            elif rpad != ppad:
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
    check_op_hints(ctx, r, p)


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


def _loop_carried(n: Node) -> bool:
    """n's token operands reach, through token-only ops (join_tokens), a token that a loop around n carries from
    one iteration to the next: n is ordered after the writes of the loop's earlier iterations."""
    stack, seen = list(n.tok_operands), set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if v.node is None:
            if v.owner_node is not None and v.owner_node.op.name in LOOPS:
                return True
        elif v.node.op.name not in MEM_LOADS and v.node.op.name not in MEM_WRITES:
            stack.extend(v.node.tok_operands)
    return False


def _check_tokens(ctx: Ctx, rmem: dict[int, Mem], pmem: dict[int, Mem]) -> None:
    al = ctx.al
    rmemo: dict[int, frozenset] = {}
    pmemo: dict[int, frozenset] = {}
    for rm in rmem.values():
        r = rm.node
        p = al.partner(r)
        if p is None or p.idx not in pmem:
            continue
        if rm.dir != "load" and _loop_carried(r) and not _loop_carried(p):
            # cuTile Python threads an array's token through every loop that writes it; cutile 0.5 carries none
            # through a plain range loop (compile_expression.rs: only dim and mapped-partition loops set up token
            # accumulators), so each iteration's store reads the token from before the loop
            ctx.add("memory", "loop_tokens", Severity.WARNING,
                    f"reference orders the {rm.what()} (line {r.op.line}) after the previous iteration's writes "
                    "through the token its loop carries; the port's store reads a token from before the loop, so "
                    "its iterations' stores are unordered: tileiras schedules them differently (a persistent "
                    "matmul: 968 SASS instructions and 4 TMA stores against the reference's 904 and 2). Thread "
                    "the token: a view made in the loop with make_partition_view_mut(.., tok), then "
                    "tok = get_partition_token_mut(&view) after its store", r, p, "carried", "from before the loop")
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
