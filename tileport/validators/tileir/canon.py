"""Canonical form of a Tile IR entry: a structural hash per op and per value.

The hash of an op is built from its name, its attributes, its types, the hashes of its operands
and the hashes of its regions, never from SSA names or textual position. Consequences:

* renaming values changes nothing; independent ops may be printed in any order;
* two identical computations get the same hash, so duplicated constants and CSE do not matter;
* a block is hashed as the sorted multiset of its side-effecting ops (stores, atomics, prints,
  asserts, terminators) plus the set of its loads. Ops with control effects (an `if` that
  breaks out of a loop, `assert`) are ordering barriers: effects keep their position relative
  to barriers but may be reordered between them;
* memory ordering is carried by tokens. Token operands are left out of value hashes (the
  token plumbing of two compilers differs) and compared separately as ordering facts;
* benign noise is normalised away: `assume` ops are transparent (their predicates are kept as
  facts for the assumptions check), a reshape/broadcast of a splat constant is that constant,
  identity reshapes/broadcasts/conversions vanish, commutative operands are sorted, dead ops
  never reach a hash, and debug locations are not part of the syntax tree at all.
"""

from __future__ import annotations

import functools
import hashlib
import re
import struct
from dataclasses import dataclass, field

from tileport.validators.tileir import intforms
from tileport.validators.tileir.parse import (MEMO_SIZE, Entry, Op, Region, TileIRParseError, normalize_type,
                                              type_info)

# ---------------------------------------------------------------------------------------------
# Op classification
# ---------------------------------------------------------------------------------------------

TERMINATORS = frozenset({"yield", "continue", "break", "return"})
ESCAPING = frozenset({"continue", "break", "return"})
LOOPS = frozenset({"for", "loop"})
MEM_LOADS = frozenset({"load_view_tko", "load_ptr_tko", "multimem_load_reduce_view_tko"})
MEM_WRITES = frozenset({"store_view_tko", "store_ptr_tko", "atomic_rmw_tko", "atomic_cas_tko",
                        "atomic_red_view_tko", "multimem_store_view_tko", "multimem_reduce_view_tko"})
OTHER_EFFECTS = frozenset({"print_tko", "print", "assert", "memory_fence_alias_tko", "gdc_wait_tko",
                           "gdc_launch_dependents_tko", "global"})
BARRIERS: frozenset[str] = frozenset()
# effects that do not change what a kernel computes (runtime checks, debug prints): live, compared
# by the checks, but left out of block hashes so a compiler-inserted bounds check is not a difference
UNHASHED_EFFECTS = frozenset({"assert", "print_tko", "print"})
TOKEN_OPS = frozenset({"make_token", "join_tokens"})
_REGION_OPS = frozenset({"if", "for", "loop", "reduce", "scan"})
COMMUTATIVE = frozenset({"addf", "addi", "mulf", "muli", "andi", "ori", "xori", "maxf", "minf", "maxi",
                         "mini", "mulhii", "join_tokens"})
MMA = frozenset({"mmaf", "mmai", "mmaf_scaled", "mma_scaled"})
REDUCTIONS = frozenset({"reduce", "scan"})
CONVERSIONS = frozenset({"ftof", "itof", "ftoi", "exti", "trunci", "bitcast", "ptr_to_int", "int_to_ptr",
                         "ptr_to_ptr"})
MATH = frozenset({"exp", "exp2", "log", "log2", "rsqrt", "sqrt", "tanh", "tan", "sin", "cos", "sinh", "cosh",
                  "atan2", "fpowf", "fpowi", "divf", "fma", "addf", "subf", "mulf", "negf", "absf", "remf",
                  "floor", "ceil", "maxf", "minf"})
ELEMENTWISE = frozenset({
    "addf", "subf", "mulf", "divf", "remf", "negf", "absf", "fma", "maxf", "minf", "exp", "exp2", "log", "log2",
    "rsqrt", "sqrt", "tanh", "tan", "sin", "cos", "sinh", "cosh", "atan2", "fpowf", "fpowi", "floor", "ceil",
    "addi", "subi", "muli", "divi", "remi", "negi", "absi", "andi", "ori", "xori", "shli", "shri", "maxi", "mini",
    "mulhii", "cmpf", "cmpi", "select", "ftof", "itof", "ftoi", "exti", "trunci", "bitcast", "isnan",
})
VIEWS = frozenset({"make_tensor_view", "make_partition_view", "make_strided_view", "make_gather_scatter_view",
                   "get_index_space_shape", "get_tensor_shape"})

# Families: ops of different names that can stand for one another in a port (paired, then judged).
FAMILIES: dict[str, str] = {
    "exp": "exp", "exp2": "exp",
    "log": "log", "log2": "log",
    "rsqrt": "rsqrt", "sqrt": "rsqrt",
    "load_view_tko": "load", "load_ptr_tko": "load",
    "store_view_tko": "store", "store_ptr_tko": "store",
    "mmaf": "mma", "mmai": "mma",
    "for": "loop", "loop": "loop",
    "reduce": "reduce", "scan": "reduce",
    "negf": "subf", "negi": "subi",
}

# attributes that never enter a hash: tokens are compared as ordering facts, hints by the hints
# check, message strings are cosmetic.
_HASH_SKIP_ATTRS = frozenset({"token", "optimization_hints", "string"})
# attributes some printers spell out at their default value (cutile-rs' generic form)
_DEFAULT_ATTRS = frozenset({("rounding_mode", "0")})


def category_of(name: str) -> str:
    if name in MEM_LOADS or name in MEM_WRITES:
        return "memory"
    if name in MMA:
        return "mma"
    if name in REDUCTIONS:
        return "reduction"
    if name in LOOPS:
        return "loops"
    if name in CONVERSIONS:
        return "conversions"
    if name == "assume":
        return "assumptions"
    if name in MATH:
        return "math"
    if name in TOKEN_OPS:
        return "tokens"
    return "structure"


def _h(*parts: object) -> str:
    return hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).hexdigest()


# ---------------------------------------------------------------------------------------------
# Graph
# ---------------------------------------------------------------------------------------------


class Val:
    """An SSA value: an entry argument, a region argument or an op result."""

    __slots__ = ("name", "type", "hash", "node", "index", "arg_index", "is_token", "splat", "reshape_src",
                 "barg", "stripped", "nopad", "owner", "owner_node")

    def __init__(self, name: str, type_: str, hash_: str, node: "Node | None" = None, index: int = 0):
        self.name = name
        self.type = type_
        self.hash = hash_
        self.node = node
        self.index = index
        self.arg_index: int | None = None  # entry argument position
        self.is_token = type_ == "token"
        self.splat: tuple[str, str] | None = None  # (elem, literal) if a splat constant
        self.reshape_src: Val | None = None
        self.barg: tuple[int, int] | None = None  # (depth, position) for region arguments
        self.stripped: Val = self  # the value with assumes peeled off
        self.nopad: str | None = None  # partition views: hash of the view without its padding value
        self.owner: str | None = None  # region arguments: the op owning the region
        self.owner_node: "Node | None" = None  # ... and that op itself (a loop's bounds for its index)

    def __repr__(self) -> str:
        return f"Val({self.name}:{self.type})"


_STATIC: dict[str, tuple[str, bool, str]] = {}  # op name -> (category, is a load, family)


class Node:
    """One op of an entry with its canonical data."""

    __slots__ = ("op", "idx", "depth", "parent", "region_index", "hash", "local", "operands", "tok_operands",
                 "results", "category", "effect", "escapes", "barrier", "live", "regions_hash", "children",
                 "is_load", "family", "region_hashes", "entry", "data", "users", "attrs_key", "transparent",
                 "form", "form_inputs")

    def __init__(self, op: Op, idx: int, depth: int, parent: "Node | None", region_index: int):
        self.op = op
        self.idx = idx
        self.depth = depth
        self.parent = parent
        self.region_index = region_index
        self.hash = ""
        self.local = ""
        self.operands: list[Val] = []
        self.tok_operands: list[Val] = []
        self.results: list[Val] = []
        name = op.name
        static = _STATIC.get(name)
        if static is None:
            static = _STATIC[name] = (category_of(name), name in MEM_LOADS, FAMILIES.get(name, name))
        self.category, self.is_load, self.family = static
        self.effect = False
        self.escapes = False
        self.barrier = False
        self.live = False
        self.children: list[list[Node]] = []
        self.region_hashes: list[str] = []
        self.data = False  # its value reaches stored data / control (not only addresses and masks)
        self.users: list[Node] = []  # ops using one of its results
        # computes nothing of its own: an assume, an identity reshape, or a splat constant only
        # re-shaped into another splat
        self.transparent = False
        self.form = None  # intforms.Form: how this side wrote an integer form normalised before hashing
        self.form_inputs: tuple = ()

    @property
    def address_only(self) -> bool:
        """Live, but only computes pointers, indices or masks of memory ops."""
        return self.live and not self.data and self.op.name not in MEM_LOADS and self.op.name not in MEM_WRITES

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def line(self) -> int:
        return self.op.line

    def __repr__(self) -> str:
        return f"Node({self.op.name}@{self.op.line})"


@dataclass
class AssumeFact:
    pred: str  # "div_by", "bounded", ...
    args: str  # "16", "0, ?"
    target: Val  # the value the predicate is about (assumes peeled)
    node: Node


@dataclass
class CanonEntry:
    entry: Entry
    nodes: list[Node]  # program order, nested ops after their parent
    args: list[Val]
    body_hash: str
    hash: str  # body + argument types (no name, no hints)
    assumes: list[AssumeFact] = field(default_factory=list)
    dead: list[Node] = field(default_factory=list)
    ptr_ordinal: dict[int, int] = field(default_factory=dict)  # entry arg index -> ordinal among pointer args
    arg_roles: dict[int, str] = field(default_factory=dict)  # entry arg index -> "shape1(array #0)", ...

    @property
    def name(self) -> str:
        return self.entry.name


_PAD_TYPE_RE = re.compile(r"padding_value\s*=\s*[A-Za-z0-9_.+-]+,\s*")
_NUM_RE = re.compile(r"^[-+]?(?:0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)$")


def normalize_literal(lit: str) -> str:
    lit = lit.strip()
    if _NUM_RE.match(lit):
        try:
            if lit.lower().startswith(("0x", "-0x", "+0x")):
                return str(int(lit, 16))
            if re.match(r"^[-+]?[0-9]+$", lit):
                return str(int(lit))
            f = float(lit)
            return repr(f)
        except ValueError:
            return lit
    return lit


_const_cache: dict[str, tuple[str, str]] = {}


def _const_value(op: Op) -> tuple[str, str] | None:
    v = op.attrs.get("value")
    if v is None or ":" not in v:
        return None
    got = _const_cache.get(v)
    if got is None:
        elem, lit = v.split(":", 1)
        got = (elem.strip(), normalize_literal(lit))
        if len(_const_cache) < 100_000:
            _const_cache[v] = got
    return got


def _attr_key(op: Op) -> str:
    items = sorted((k, v if k != "identities" else ",".join(identity_values(v) or []))
                   for k, v in op.attrs.items() if k not in _HASH_SKIP_ATTRS and v != "%"
                   and (k, v) not in _DEFAULT_ATTRS)
    return ";".join(f"{k}={v}" for k, v in items)


_FLOAT_BITS = {"f32": (32, "f"), "f64": (64, "d"), "f16": (16, "e")}


def identity_values(text: str | None) -> list[str] | None:
    """`[0xFF800000 : f32, 0 : i32]` -> ["-inf", "0"]: values compared across dtypes and encodings."""
    if text is None:
        return None


    out = []
    for item in text.strip("[] ").split(","):
        if ":" not in item:
            try:
                out.append(repr(float(item.strip())))
            except ValueError:
                out.append(item.strip())
            continue
        lit, ty = (x.strip() for x in item.rsplit(":", 1))
        val = lit
        try:
            if lit.lower().startswith("0x"):
                bits = int(lit, 16)
                if ty in _FLOAT_BITS:
                    width, code = _FLOAT_BITS[ty]
                    val = repr(struct.unpack(code, bits.to_bytes(width // 8, "little"))[0])
                elif ty == "bf16":
                    val = repr(struct.unpack("f", (bits << 16).to_bytes(4, "little"))[0])
                else:
                    val = str(bits)
            elif ty.startswith(("f", "bf")):
                val = repr(float(lit))
            else:
                val = str(int(lit))
        except (ValueError, struct.error, OverflowError):
            val = lit
        out.append(val)
    return out


def _types_key(op: Op) -> str:
    return _types_key_of(op.name, tuple(op.in_types), tuple(op.out_types))


@functools.lru_cache(maxsize=MEMO_SIZE)
def _types_key_of(name: str, in_types: tuple[str, ...], out_types: tuple[str, ...]) -> str:
    ins = [t for t in in_types if t != "token"]
    outs = [t for t in out_types if t != "token"]
    if name in ELEMENTWISE:
        # elementwise results do not depend on unit dimensions: 1x1 and scalar tiles are alike
        ins = [squeeze(t) for t in ins]
        outs = [squeeze(t) for t in outs]
    elif name == "broadcast" and len(ins) == 1 and len(outs) == 1:
        ins = [_left_pad(ins[0], outs[0])]
    return ",".join(ins) + "->" + ",".join(outs)


_TILE_SHAPE_RE = re.compile(r"^tile<((?:(?:\?|[0-9]+)x)*)([^x<>]*(?:<.*>)?)>$")


@functools.lru_cache(maxsize=MEMO_SIZE)
def squeeze(t: str) -> str:
    """`tile<1x2048x1xf32>` -> `tile<2048xf32>`: the same elements in the same order."""
    m = _TILE_SHAPE_RE.match(t)
    if not m or not m.group(1):
        return t
    dims = [d for d in m.group(1).split("x") if d and d != "1"]
    return f"tile<{''.join(d + 'x' for d in dims)}{m.group(2)}>"


def _left_pad(t: str, like: str) -> str:
    """Broadcast operands align to the right: `tile<64xf32>` into rank 2 is `tile<1x64xf32>`."""
    m, n = _TILE_SHAPE_RE.match(t), _TILE_SHAPE_RE.match(like)
    if not m or not n:
        return t
    dims = [d for d in m.group(1).split("x") if d]
    rank = len([d for d in n.group(1).split("x") if d])
    dims = ["1"] * (rank - len(dims)) + dims
    return f"tile<{''.join(d + 'x' for d in dims)}{m.group(2)}>"


class _Builder:
    def __init__(self, entry: Entry, path: str | None, array_map: dict[int, int] | None = None,
                 subst: dict[tuple[int, int], tuple[str, str]] | None = None, strip_padding: bool = False):
        self.entry = entry
        self.path = path
        self.array_map = array_map
        self.subst = subst or {}
        self.strip_padding = strip_padding
        self.nodes: list[Node] = []
        self.env: dict[str, Val] = {}
        self.scopes: list[list] = [[]]
        self.assumes: list[AssumeFact] = []
        self.signs = intforms.Signs()

    def error(self, msg: str, op: Op) -> TileIRParseError:
        return TileIRParseError(msg, path=self.path, line=op.line, col=op.col)

    def define(self, name: str, val: Val, undo: list) -> None:
        undo.append((name, self.env.get(name)))
        self.env[name] = val

    def build(self) -> CanonEntry:
        undo: list = []
        args: list[Val] = []
        ptr_ordinal, roles = arg_roles(self.entry, self.array_map)
        for k, (name, ty) in enumerate(self.entry.args):
            v = Val(name, ty, _h("arg", roles[k], ty))
            v.arg_index = k
            args.append(v)
            self.define(name, v, undo)
        body_hash = self.region(self.entry.body, 1, None, 0, [], bind_args=False)
        # unused scalar parameters (a calling convention passing more) do not matter; used ones
        # enter through the body by role, pointer parameters are part of the signature
        arg_key = ",".join(args[k].type for k in sorted(ptr_ordinal))
        ce = CanonEntry(self.entry, self.nodes, args, body_hash, _h("entry", arg_key, body_hash),
                        self.assumes, ptr_ordinal=ptr_ordinal, arg_roles=roles)
        ce.dead = mark_liveness(self.nodes)
        mark_data(self.nodes)
        for n in self.nodes:
            if (n.op.name in ("constant", "reshape", "broadcast") and n.results and n.results[0].splat is not None
                    and n.users and all(u.op.name in ("reshape", "broadcast") for u in n.users)):
                n.transparent = True
        return ce

    def region(self, region: Region, depth: int, parent: Node | None, rindex: int, sink: list[Node],
               bind_args: bool = True) -> str:
        undo: list = []
        self.scopes.append(undo)
        arg_types = []
        if bind_args:
            pos = 0
            for name, ty in region.args:
                if ty == "token":
                    v = Val(name, ty, "token")
                    v.owner_node = parent  # a token a loop carries from one iteration to the next (memory.tokens)
                else:
                    v = Val(name, ty, _h("barg", depth, pos, ty))
                    v.barg = (depth, pos)
                    v.owner = parent.op.name if parent is not None else None
                    v.owner_node = parent
                    arg_types.append(ty)
                    pos += 1
                self.define(name, v, undo)
        effects: list[tuple[int, int, str]] = []
        loads: set[str] = set()
        epoch = 0
        for op in region.ops:
            node = self.op(op, depth, parent, rindex)
            sink.append(node)
            if node.barrier:
                epoch += 1
                effects.append((epoch, 0, node.hash))
            elif (node.effect or node.op.name in TERMINATORS) and node.op.name not in UNHASHED_EFFECTS:
                effects.append((epoch, 1, node.hash))
            elif node.is_load:
                loads.add(node.hash)
        if parent is not None and (not region.ops or region.ops[-1].name not in TERMINATORS):
            # MLIR elides a terminator without operands; make it explicit so both printers agree
            implicit = "yield" if parent.op.name not in LOOPS else "continue"
            effects.append((epoch, 1, _h(implicit, "", "->", "", "")))
        self.scopes.pop()
        for name, old in reversed(undo):
            if old is None:
                self.env.pop(name, None)
            else:
                self.env[name] = old
        effects.sort()
        return _h("region", ",".join(arg_types), "|".join(f"{e}:{b}:{h}" for e, b, h in effects),
                  ",".join(sorted(loads)))

    def op(self, op: Op, depth: int, parent: Node | None, rindex: int) -> Node:
        node = Node(op, len(self.nodes), depth, parent, rindex)
        self.nodes.append(node)
        env = self.env
        for name in op.operands:
            v = env.get(name)
            if v is None:
                raise self.error(f"use of undefined value {name} in '{op.name}'", op)
            if v.is_token:
                node.tok_operands.append(v)
            else:
                node.operands.append(v)
            if v.node is not None:
                v.node.users.append(node)
        # regions first: the op's hash depends on them
        region_hashes = []
        for k, region in enumerate(op.regions):
            children: list[Node] = []
            region_hashes.append(self.region(region, depth + 1, node, k, children))
            node.children.append(children)
        node.region_hashes = region_hashes
        name = op.name
        # effects and control
        if name in MEM_WRITES or name in OTHER_EFFECTS or (name.endswith("_tko") and name not in MEM_LOADS):
            node.effect = True
        elif not op.results and name not in TERMINATORS and name not in _REGION_OPS and name not in TOKEN_OPS:
            node.effect = True  # an unknown op with no results can only be there for its effect
        if name in BARRIERS:
            node.barrier = True
        for children in node.children:
            for ch in children:
                if ch.effect:
                    node.effect = True
                if ch.escapes or ch.op.name in ESCAPING:
                    if name not in LOOPS:
                        node.escapes = True
        if node.escapes:
            node.effect = True
            node.barrier = True

        attr_key = _attr_key(op)
        types_key = _types_key(op)
        if self.strip_padding and "padding_value" in types_key:
            types_key = _PAD_TYPE_RE.sub("", types_key)
        # compared only within one run: plain tuples, no hashing needed
        node.local = (name, attr_key, types_key, len(op.regions))
        node.attrs_key = (name, attr_key, len(op.regions))
        results = op.results
        rtypes = op.result_types

        # --- transparent and folded ops ------------------------------------------------------
        fwd: Val | None = None
        if name == "assume" and node.operands:
            target = node.operands[-1]
            pred = next((k for k, v in op.attrs.items() if k not in _HASH_SKIP_ATTRS), "?")
            self.assumes.append(AssumeFact(pred, op.attrs.get(pred, ""), target.stripped, node))
            fwd = target
            node.hash = _h("assume", pred, op.attrs.get(pred, ""), target.stripped.hash)
        elif name in ("muli", "addi", "subi", "mulf", "addf") and len(node.operands) == 2 and rtypes \
                and all(squeeze(v.type) == squeeze(rtypes[0]) for v in node.operands) and not op.attrs.get(
                    "rounding") and "flush_to_zero" not in op.attrs:
            # identities (x*1, x+0, x-0): frontends differ in whether they fold them, e.g. cuTile Python's
            # `Array.slice` offset `start * stride` with start 0 and a unit stride, or `full(0.0) + x`. For floats
            # x * 1.0 is exact and x + 0.0 differs only in turning -0.0 into +0.0
            a, b = node.operands
            unit = ("1.0" if name == "mulf" else "0.0") if name.endswith("f") else ("1" if name == "muli" else "0")
            if b.splat is not None and b.splat[1] == unit:
                fwd = a
            elif a.splat is not None and a.splat[1] == unit and name != "subi":
                fwd = b
            if fwd is not None:
                node.hash = _h("identity", name, fwd.hash)
        elif name in ("reshape", "broadcast", "ftof") and len(node.operands) == 1 and rtypes:
            src = node.operands[0]
            if src.type == rtypes[0] or (name != "ftof" and squeeze(src.type) == squeeze(rtypes[0])):
                fwd = src
                node.hash = _h("identity", name, src.hash)
            elif src.splat is not None and name != "ftof":
                elem, lit = src.splat
                h = _h("const", elem, lit, squeeze(rtypes[0]))
                node.hash = h
                v = Val(results[0], rtypes[0], h, node, 0)
                v.splat = src.splat
                self.define_result(v)
                node.results = [v]
                return node
            elif name == "reshape" and src.reshape_src is not None:
                base = src.reshape_src
                if squeeze(base.type) == squeeze(rtypes[0]):
                    fwd = base
                    node.hash = _h("identity", name, base.hash)
                else:
                    h = _h("reshape", base.hash, rtypes[0])
                    node.hash = h
                    v = Val(results[0], rtypes[0], h, node, 0)
                    v.reshape_src = base
                    self.define_result(v)
                    node.results = [v]
                    return node
        if fwd is not None:
            node.transparent = True
        if fwd is not None and results:
            v = Val(results[0], rtypes[0] if rtypes else fwd.type, fwd.hash, node, 0)
            v.splat = fwd.splat
            v.reshape_src = fwd.reshape_src
            v.stripped = fwd.stripped
            v.arg_index = fwd.arg_index
            v.barg = fwd.barg
            self.define_result(v)
            node.results = [v]
            return node

        # --- general op ----------------------------------------------------------------------
        if name == "constant":
            cv = _const_value(op)
            lit = cv if cv is not None else ("?", op.attrs.get("value", ""))
            node.hash = _h("const", lit[0], lit[1], squeeze(rtypes[0]) if rtypes else "?")
        elif name == "get_index_space_shape" and len(node.operands) == 1 and node.operands[0].nopad:
            # the index space of a view does not depend on its padding value
            node.hash = _h(name, _PAD_TYPE_RE.sub("", types_key), node.operands[0].nopad)
        elif name in intforms.FORM_OPS and (nh := intforms.normalize(node, self.signs, _h)) is not None:
            node.hash = nh
        else:
            ohs = [v.hash for v in node.operands]
            if name in COMMUTATIVE:
                ohs.sort()
            node.hash = _h(name, attr_key, types_key, ",".join(ohs), ",".join(region_hashes))
        for k, rname in enumerate(results):
            ty = rtypes[k] if k < len(rtypes) else "?"
            if ty == "token":
                v = Val(rname, ty, "token", node, k)
            elif self.subst and (op.line, k) in self.subst and len(results) == 1:
                # a value the reference folded to a constant (`specialise`): read as that constant
                elem, lit = self.subst[(op.line, k)]
                node.hash = _h("const", elem, lit, squeeze(ty))
                v = Val(rname, ty, node.hash, node, k)
                v.splat = (elem, lit)
            else:
                v = Val(rname, ty, _h(node.hash, k) if len(results) > 1 else node.hash, node, k)
                if name == "constant":
                    v.splat = _const_value(op)
                elif name == "reshape" and node.operands:
                    v.reshape_src = node.operands[0]
                elif name == "make_partition_view":
                    v.nopad = _h("pview", _PAD_TYPE_RE.sub("", ty), ",".join(o.hash for o in node.operands))
            self.define_result(v)
            node.results.append(v)
        return node

    def define_result(self, v: Val) -> None:
        # results live until the end of the enclosing region
        self.define(v.name, v, self.scopes[-1])


@functools.lru_cache(maxsize=1024)
def python_array_layout(name: str, n_args: int) -> tuple[tuple[int, int], ...] | None:
    """For an entry cuTile Python compiled (a mangled `<kernel>_K<cc>_...` name): (pointer argument index, ndim)
    per array parameter, read with cuda.tile's own demangler; None for other names or when the layout does not
    account for exactly `n_args` arguments (then roles come from the dataflow alone)."""
    if "_K" not in name:
        return None
    try:
        from cuda.tile.compilation import ArrayConstraint, ScalarConstraint, demangle_kernel_name

        _, sig = demangle_kernel_name(name)
    except Exception:  # not a cuTile Python name, or cuda-tile absent / changed: fall back to the dataflow
        return None
    out: list[tuple[int, int]] = []
    k = 0
    for param in sig.parameters:
        if isinstance(param, ArrayConstraint):
            out.append((k, param.ndim))
            k += 1 + 2 * param.ndim
        elif isinstance(param, ScalarConstraint):
            k += 1
        elif type(param).__name__ != "ConstantConstraint":
            return None  # lists, tuples, pointers...: layout not known here
    return tuple(out) if k == n_args else None


def arg_roles(entry: Entry, array_map: dict[int, int] | None = None) -> tuple[dict[int, int], dict[int, str]]:
    """Name entry arguments by what they are, not where they sit: pointer arguments by their order
    among pointers, shape/stride scalars by the tensor view they describe, other scalars by their
    order among the rest. Two calling conventions that pass the same things compare equal."""
    index = {name: k for k, (name, _) in enumerate(entry.args)}
    ptr_ordinal: dict[int, int] = {}
    for k, (_, ty) in enumerate(entry.args):
        if "ptr<" in ty:
            ptr_ordinal[k] = len(ptr_ordinal)
    if array_map:
        ptr_ordinal = {k: array_map.get(o, o) for k, o in ptr_ordinal.items()}
    roles: dict[int, str] = {k: f"array #{o}" for k, o in ptr_ordinal.items()}
    # cuTile Python's calling convention says which scalars describe which array (its mangled entry name
    # encodes the signature): each array passes its pointer, then its shape, then its strides
    layout = python_array_layout(entry.name, len(entry.args))
    if layout:
        for ptr_arg, ndim in layout:
            if ptr_arg not in ptr_ordinal:
                break
            o = ptr_ordinal[ptr_arg]
            for d in range(ndim):
                roles[ptr_arg + 1 + d] = f"shape{d}(array #{o})"
                roles[ptr_arg + 1 + ndim + d] = f"stride{d}(array #{o})"
    root: dict[str, str] = {}  # value name -> the argument it is (through assumes)

    def arg_of(name: str) -> int | None:
        return index.get(root.get(name, name))

    for op in entry.body.ops:
        if op.name == "assume" and op.results and op.operands:
            root[op.results[0]] = root.get(op.operands[-1], op.operands[-1])
        elif op.name == "offset" and op.results and op.operands and arg_of(op.operands[0]) in ptr_ordinal:
            # a sliced view's base (cuTile Python's `Array.slice`): still a view of that array
            root[op.results[0]] = root.get(op.operands[0], op.operands[0])
        elif op.name == "make_tensor_view" and op.operands:
            base = arg_of(op.operands[0])
            if base is None or base not in ptr_ordinal:
                continue
            rest = iter(op.operands[1:])
            for key in ("shape", "strides"):
                dims = [d.strip() for d in op.attrs.get(key, "").strip("[] ").split(",") if d.strip()]
                for d, item in enumerate(dims):
                    if item != "%":
                        continue
                    k = arg_of(next(rest, ""))
                    if k is not None and k not in roles:
                        roles[k] = f"{key.rstrip('s')}{d}(array #{ptr_ordinal[base]})"
    # other scalars: by type, in order, counting only those the body uses (conventions differ in
    # what unused extras they pass)
    used: set[str] = set()
    stack = [entry.body]
    while stack:
        region = stack.pop()
        for op in region.ops:
            used.update(op.operands)
            stack.extend(op.regions)
    per_type: dict[str, int] = {}
    for k, (name, ty) in enumerate(entry.args):
        if k in roles:
            continue
        if name in used:
            n = per_type.get(ty, 0)
            per_type[ty] = n + 1
            roles[k] = f"scalar {ty.removeprefix('tile<').removesuffix('>')} #{n}"
        else:
            roles[k] = f"unused arg{k}"
    return ptr_ordinal, roles


def mark_liveness(nodes: list[Node]) -> list[Node]:
    """Mark live ops (effects, loads, terminators of live ops and what they use); return the dead ones."""
    work: list[Node] = []
    for n in nodes:
        if n.effect or n.is_load or n.op.name == "return":
            work.append(n)
    while work:
        n = work.pop()
        if n.live:
            continue
        n.live = True
        for v in n.operands:
            if v.node is not None and not v.node.live:
                work.append(v.node)
        for v in n.tok_operands:
            if v.node is not None and not v.node.live:
                work.append(v.node)
        if n.parent is not None and not n.parent.live:
            work.append(n.parent)
        for children in n.children:
            for ch in children:
                if ch.op.name in TERMINATORS and not ch.live:
                    work.append(ch)
    # assume ops feeding live values are live through forwarding; an assume whose result is
    # unused but whose target is used is still "dead" (benign)
    return [n for n in nodes if not n.live]


def _data_operands(n: Node) -> list[Val]:
    """The operands of n whose values become data (not addresses) when n itself is data or an effect."""
    name = n.op.name
    ops = n.operands
    if name in MEM_LOADS:
        return []
    if name == "store_view_tko":
        return ops[:1]
    if name == "store_ptr_tko":
        return ops[1:2]
    if name.startswith("atomic"):
        vals = ops[1:]
        if vals and vals[-1].type.endswith("xi1>") or (vals and vals[-1].type == "tile<i1>"):
            vals = vals[:-1]
        return vals
    return ops


def mark_data(nodes: list[Node]) -> None:
    """Mark ops whose results flow into data: stored values, control, terminators, effects."""
    work: list[Node] = []
    for n in nodes:
        if n.live and (n.effect or n.op.name in TERMINATORS):
            work.append(n)
    while work:
        n = work.pop()
        if n.data:
            continue
        n.data = True
        for v in _data_operands(n):
            d = v.node
            if d is not None and not d.data:
                work.append(d)
        # an op is data if anything in its regions is
        if n.parent is not None and not n.parent.data:
            work.append(n.parent)


def clear_caches() -> None:
    """Forget memoised type/constant normalisations (benchmarks measure cold runs with this)."""
    for memo in (_types_key_of, squeeze, normalize_type, type_info):
        memo.cache_clear()
    for cache in (_const_cache, _STATIC):
        cache.clear()


def release(ce: CanonEntry) -> None:
    """Break the reference cycles of a canonical entry (node <-> result values, parent <-> children,
    users, a value's `stripped` pointing at itself) so that it is freed by reference counting as soon
    as it is dropped, instead of leaving tens of thousands of objects to the cyclic garbage collector.
    Only for entries nothing else will use again: the entry is unusable afterwards."""
    for v in ce.args:
        v.stripped = v.node = v.reshape_src = None
    for n in ce.nodes:
        for vals in (n.operands, n.tok_operands, n.results):
            for v in vals:
                v.stripped = v.node = v.reshape_src = v.owner_node = None
        n.parent = n.children = n.users = n.operands = n.tok_operands = n.results = n.form = None
        n.form_inputs = ()
    for fact in ce.assumes:
        fact.node = fact.target = None
    ce.nodes = ce.dead = ce.args = ce.assumes = []


def canonicalize(entry: Entry, path: str | None = None, array_map: dict[int, int] | None = None,
                 subst: dict[tuple[int, int], tuple[str, str]] | None = None,
                 strip_padding: bool = False) -> CanonEntry:
    """Canonical form of one entry. `array_map` renumbers pointer parameters (ordinal -> ordinal),
    for a port that takes its arrays in another order than the reference; `subst` reads the results of the
    ops at the given (line, result index) as constants (a reference specialised where the port is general);
    `strip_padding` hashes view types without their padding value (both sides, once the only padding differences
    are lanes the reference leaves undefined: then what is computed from them can be compared)."""
    return _Builder(entry, path, array_map, subst, strip_padding).build()


# ---------------------------------------------------------------------------------------------
# Helpers the checks use
# ---------------------------------------------------------------------------------------------

_BASE_THROUGH = frozenset({"make_partition_view", "make_tensor_view", "make_strided_view",
                           "make_gather_scatter_view", "offset", "broadcast", "reshape", "assume", "ptr_to_ptr"})


def base_arg(v: Val) -> int | None:
    """The entry argument a view or pointer value is derived from (through views, offsets, assumes)."""
    seen = 0
    while v is not None and seen < 64:
        if v.arg_index is not None and (v.node is None or v.node.op.name == "assume"):
            return v.arg_index
        n = v.node
        if n is None:
            return None
        if n.op.name not in _BASE_THROUGH:
            return None
        if n.op.name == "assume":
            v = n.operands[-1] if n.operands else None
        else:
            v = n.operands[0] if n.operands else None
        seen += 1
    return None


def render(v: Val, ce: CanonEntry | None = None, depth: int = 3) -> str:
    """A short, name-free rendering of the expression computing v (for messages)."""
    if v.splat is not None and (v.node is None or v.node.op.name in ("constant", "reshape", "broadcast")):
        return v.splat[1]
    if v.node is None:
        if v.arg_index is not None:
            role = ce.arg_roles.get(v.arg_index) if ce is not None else None
            return role if role and not role.startswith("unused") else f"arg{v.arg_index}"
        if v.barg is not None:
            pos = v.barg[1]
            if v.owner == "for":
                return "for.index" if pos == 0 else f"for.iter{pos - 1}"
            return f"{v.owner or 'region'}.arg{pos}"
        return v.name
    n = v.node
    if n.op.name == "assume" and n.operands:
        return render(n.operands[-1], ce, depth)
    if n.op.name == "get_tile_block_id":
        return f"bid({'xyz'[v.index] if v.index < 3 else v.index})"
    if n.op.name == "get_num_tile_blocks":
        return f"num_blocks({'xyz'[v.index] if v.index < 3 else v.index})"
    if n.op.name in MEM_LOADS and n.operands:
        arg = base_arg(n.operands[0])
        if arg is not None and ce is not None:
            arg = ce.ptr_ordinal.get(arg, arg)
        where = f"array #{arg}" if arg is not None else "?"
        kind = "load" if n.op.name == "load_view_tko" else "gather"
        return f"{kind}({where})"
    if n.op.name == "make_partition_view":
        t = type_info(n.op.result_types[0]) if n.op.result_types else None
        shape = "x".join(t.shape) if t else "?"
        return f"view(tile={shape})"
    if n.form is not None and n.form_inputs:
        # a normalised integer form reads as what it computes, whichever way it was written
        if depth <= 0:
            return f"{n.form.computes}(...)"
        return f"{n.form.computes}({', '.join(render(o, ce, depth - 1) for o in n.form_inputs)})"
    if depth <= 0:
        return f"{n.op.name}(...)"
    inner = ", ".join(render(o, ce, depth - 1) for o in n.operands)
    suffix = f"#{v.index}" if len(n.results) > 1 else ""
    return f"{n.op.name}({inner}){suffix}"


def and_terms(v: Val, limit: int = 64) -> int:
    """How many conjuncts an i1 mask is made of (andi trees flattened)."""
    n = v.node
    if n is None or n.op.name != "andi" or limit <= 0:
        return 1
    return sum(and_terms(o, limit - 1) for o in n.operands)
