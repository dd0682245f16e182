"""Entry signatures of a port's kernel.rs: what the C-ABI launcher must pass, read from the source.

Only what a host needs: the entry name, its generic parameters (element-type parameters and `const N: i32`), and
per parameter whether it is an input tensor (`&Tensor<T, {[dims]}>`), an output tensor (`&mut Tensor<...>`, which
cutile launches as a partition of the tensor, or whole when every dim is -1), a raw device pointer (`*mut T` /
`*const T` in an `unsafe` entry, which cutile launches as a `DevicePointer<T>`) or a scalar (`i32`, `f32`, ...), with
the tile dimensions as written (integers, const-generic names, or -1). Anything else (const array generics, other
types) is reported as a reason the template cannot decide; nothing is guessed.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

SCALAR_TYPES = ("i32", "i64", "u32", "u64", "f32", "f64", "bool", "i16", "u16", "i8", "u8")


class SignatureError(ValueError):
    """kernel.rs has an entry the generated host cannot launch (the message says which part)."""


@dataclass
class Param:
    name: str
    kind: str  # "in" (&Tensor) | "out" (&mut Tensor) | "ptr" (*mut T / *const T) | "scalar"
    elem: str  # element type as written: a type parameter name (E) or a concrete type (f32); scalars: the type
    dims: list[str] = field(default_factory=list)  # tile shape as written: "-1", "128", "TILE_N"


@dataclass
class Generic:
    name: str
    kind: str  # "type" | "const"


@dataclass
class EntrySig:
    module: str
    name: str
    generics: list[Generic]
    params: list[Param]
    unsafe: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


_ENTRY = re.compile(r"#\[\s*cutile::entry\s*(\([^\]]*\))?\s*\]\s*(pub\s+)?(unsafe\s+)?fn\s+([A-Za-z_]\w*)\s*")
_MODULE = re.compile(r"#\[\s*cutile::module[^\]]*\]\s*(pub\s+)?mod\s+([A-Za-z_]\w*)")
_POINTER = re.compile(r"^\*\s*(?:mut|const)\s+([A-Za-z_]\w*)$")
_TENSOR = re.compile(r"^&\s*(mut\s+)?Tensor\s*<\s*([A-Za-z_]\w*)\s*,\s*\{\s*\[(.*)\]\s*\}\s*>$", re.S)


def _strip_comments(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    return re.sub(r"//[^\n]*", "", src)


def _balanced(src: str, start: int, open_ch: str, close_ch: str) -> tuple[str, int]:
    """The text between src[start] == open_ch and its matching close_ch, and the index after it."""
    assert src[start] == open_ch
    depth, i = 0, start
    pairs = {"(": ")", "[": "]", "{": "}", "<": ">"}
    stack: list[str] = []
    while i < len(src):
        c = src[i]
        if c in pairs and (c != "<" or open_ch == "<" or stack):
            stack.append(pairs[c])
            depth += 1
        elif stack and c == stack[-1]:
            stack.pop()
            depth -= 1
            if depth == 0:
                return src[start + 1:i], i + 1
        elif c == ">" and src[i - 1] == "-":
            pass
        i += 1
    raise SignatureError(f"unbalanced {open_ch}{close_ch} in an entry signature")


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for c in text:
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _generic(text: str, entry: str) -> Generic | None:
    text = text.strip()
    if text.startswith("'"):
        return None  # a lifetime
    m = re.match(r"^const\s+([A-Za-z_]\w*)\s*:\s*(\w+)$", text)
    if m:
        if m.group(2) not in ("i32", "i64", "u32", "usize", "bool"):
            raise SignatureError(f"entry {entry}: const generic {m.group(1)}: {m.group(2)} is not a scalar")
        return Generic(m.group(1), "const")
    if text.startswith("const"):
        raise SignatureError(f"entry {entry}: const generic `{text}` (an array) cannot be bound by the host template")
    m = re.match(r"^([A-Za-z_]\w*)\s*(:.*)?$", text, re.S)
    if not m:
        raise SignatureError(f"entry {entry}: unreadable generic parameter `{text}`")
    return Generic(m.group(1), "type")


def _param(text: str, entry: str) -> Param:
    m = re.match(r"^(mut\s+)?([A-Za-z_]\w*)\s*:\s*(.+)$", text, re.S)
    if not m:
        raise SignatureError(f"entry {entry}: unreadable parameter `{text}`")
    name, ty = m.group(2), " ".join(m.group(3).split())
    t = _TENSOR.match(ty)
    if t:
        dims = [d.strip() for d in t.group(3).split(",") if d.strip()]
        return Param(name, "out" if t.group(1) else "in", t.group(2), dims)
    if ty in SCALAR_TYPES:
        return Param(name, "scalar", ty)
    ptr = _POINTER.match(ty)
    if ptr:
        return Param(name, "ptr", ptr.group(1))
    raise SignatureError(f"entry {entry}: parameter {name}: {ty} is neither &Tensor, &mut Tensor, a raw pointer nor a "
                         "scalar; the host template cannot launch it")


def parse_entries(source: str) -> list[EntrySig]:
    """Every `#[cutile::entry]` function of kernel.rs with its module name, in source order."""
    src = _strip_comments(source)
    modules = [(m.start(), m.group(2)) for m in _MODULE.finditer(src)]
    entries = []
    for m in _ENTRY.finditer(src):
        module = next((name for pos, name in reversed(modules) if pos < m.start()), None)
        if module is None:
            raise SignatureError(f"entry {m.group(4)} is outside a #[cutile::module]")
        i = m.end()
        generics: list[Generic] = []
        if i < len(src) and src[i] == "<":
            inner, i = _balanced(src, i, "<", ">")
            generics = [g for g in (_generic(t, m.group(4)) for t in _split_top(inner)) if g]
        while src[i].isspace():
            i += 1
        if src[i] != "(":
            raise SignatureError(f"entry {m.group(4)}: no parameter list")
        inner, i = _balanced(src, i, "(", ")")
        params = [_param(t, m.group(4)) for t in _split_top(inner)]
        if any(p.kind == "ptr" for p in params) and not m.group(3):
            raise SignatureError(f"entry {m.group(4)}: raw pointer parameters need an `unsafe fn` entry (cutile "
                                 "launches them only from unsafe entries)")
        entries.append(EntrySig(module, m.group(4), generics, params, unsafe=bool(m.group(3))))
    if not entries:
        raise SignatureError("kernel.rs has no #[cutile::entry] function")
    return entries
