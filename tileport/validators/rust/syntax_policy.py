"""The syntax-tree half of the untrusted-code policy (see tileport.validators.rust.policy for the rules and why):
one model-written Rust file, parsed with tree-sitter-rust (pinned), judged against allowlists of items,
attributes, macros and crate paths, after a scan of its characters. Returns `Diagnostic`s at file:line:col."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

import tree_sitter_rust
from tree_sitter import Language, Node, Parser

from tileport.validators.rust.crate import KERNEL_FILE
from tileport.validators.rust.diagnostics import Diagnostic, DiagnosticSource

MAX_SOURCE_BYTES = 256 * 1024
MAX_DIAGNOSTICS = 50  # per file: enough for a writer to fix, bounded for a hostile one

# Characters Rust's lexer treats as whitespace (Pattern_White_Space) beyond ASCII; str.isspace() disagrees on some.
RUST_EXTRA_WHITESPACE = {"\u0085": "NEXT LINE", "\u200e": "LEFT-TO-RIGHT MARK", "\u200f": "RIGHT-TO-LEFT MARK",
                         "\u2028": "LINE SEPARATOR", "\u2029": "PARAGRAPH SEPARATOR"}

# Item kinds a file may declare (tree-sitter-rust node types). Anything else that is an item is refused.
# (Every grammar node kind ending in _item / _declaration / _definition is an item; it must be on this list.)
ALLOWED_ITEMS = {"function_item", "function_signature_item", "const_item", "struct_item", "enum_item",
                 "type_item", "impl_item", "trait_item", "use_declaration", "mod_item", "attribute_item",
                 "inner_attribute_item", "let_declaration", "field_declaration"}
ITEM_WHY = {"static_item": "`static` items are not allowed (statics carry load-time sections)",
            "union_item": "`union` is not allowed",
            "foreign_mod_item": "`extern` blocks are not allowed (they bind host symbols)",
            "extern_crate_declaration": "`extern crate` is not allowed (the crates are tileport's)",
            "macro_definition": "defining macros is not allowed (they hide code from the policy)"}
ITEM_CODES = {"foreign_mod_item": "TP-EXTERN", "extern_crate_declaration": "TP-EXTERN",
              "macro_definition": "TP-FORBIDDEN-MACRO"}
# At the top of kernel.rs: the module and imports.
KERNEL_TOP_ITEMS = {"mod_item", "use_declaration", "attribute_item", "inner_attribute_item", "line_comment",
                    "block_comment"}

# Attributes, by path. cutile::module / cutile::entry / cutile::foreign are the kernel macros; `inout` marks a
# foreign function's in-out parameter.
COMMON_ATTRS = {"allow", "warn", "deny", "expect", "forbid", "inline", "doc", "must_use", "cfg", "rustfmt::skip",
                "derive"}
# cuda_tile::global marks a device global; the variadic_* markers generate trait impls over tuple arities. All are
# read and removed by cutile's module macro (pinned with the crate); none reaches the linker.
KERNEL_ATTRS = COMMON_ATTRS | {"cutile::module", "cutile::entry", "cutile::foreign", "inout", "cuda_tile::global",
                               "cuda_tile::variadic_trait", "cuda_tile::variadic_trait_impl",
                               "cuda_tile::variadic_impl"}
HOST_ATTRS = COMMON_ATTRS | {"repr"}
INNER_ATTRS = {"allow", "warn", "deny", "expect", "forbid", "doc"}
BUILTIN_DERIVES = {"Clone", "Copy", "Debug", "Default", "PartialEq", "Eq", "PartialOrd", "Ord", "Hash"}
# cutile 0.5.0 gives kernels a tensor's base pointer and shape but no accessor for its strides, which a kernel
# needs to build a sliced view (`x.slice(...)` in cuTile Python) in-kernel. A body-less declaration
# `#[cuda_tile::compiler_op(name = "return_type_meta_field", type_meta_field = "strides")]` reads that field of
# the tensor's compile-time metadata (exactly how cutile's own `get_tensor_base` / `get_tensor_shape_meta` are
# declared). The module macro strips the attribute, nothing runs on the build machine; only this exact form
# (read one metadata field) is allowed, every other compiler_op is refused.
META_FIELD_OP = "cuda_tile::compiler_op"
META_FIELDS = {"strides", "shape", "base", "token"}
_META_ARGS = [re.compile(r'^\(name="return_type_meta_field",type_meta_field="(\w+)"\)$'),
              re.compile(r'^\(type_meta_field="(\w+)",name="return_type_meta_field"\)$')]

# Macros, by name (the last path segment; a qualified macro path is also checked as a path).
KERNEL_MACROS = {"shape", "const_shape", "const_array", "cuda_tile_assert", "cuda_tile_print", "unreachable",
                 "unimplemented", "todo", "panic", "assert", "assert_eq", "assert_ne", "debug_assert",
                 "debug_assert_eq", "debug_assert_ne", "concat", "stringify"}
HOST_MACROS = KERNEL_MACROS | {"println", "print", "eprintln", "eprint", "format", "format_args", "write",
                               "writeln", "vec", "matches"}
MACRO_WHY = {"include": "reads another file into the build", "include_str": "reads another file into the build",
             "include_bytes": "reads another file into the build", "env": "reads the build environment",
             "option_env": "reads the build environment", "asm": "emits raw machine code",
             "global_asm": "emits raw machine code", "naked_asm": "emits raw machine code",
             "macro_rules": "defines macros, which hide code from the policy"}

# Crates a conversion crate can name (tileport writes its manifest; `extern crate` is refused): the prelude's
# std/core, and the two dependencies.
KNOWN_CRATES = {"std", "core", "alloc", "proc_macro", "test", "cutile", "cutile_compiler"}
KERNEL_CUTILE_MODULES = {"core", "tileir", "half", "num_traits"}
HOST_EFFECT_MODULES = {"process": "spawning programs", "fs": "file system access", "net": "network access",
                       "env": "the process environment", "os": "OS-specific system calls",
                       "arch": "raw machine instructions", "ffi": "foreign (C) calls",
                       "intrinsics": "compiler intrinsics"}

_STRINGY = {"string_literal", "raw_string_literal", "char_literal", "line_comment", "block_comment"}
_SCOPED = {"scoped_identifier", "scoped_type_identifier"}


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_rust.language()))


@dataclass
class _Judge:
    src: str
    file: str
    host: bool
    deny_unsafe: bool
    data: bytes = b""
    lines: list[str] = field(default_factory=list)
    diags: list[Diagnostic] = field(default_factory=list)
    seen: set = field(default_factory=set)

    def __post_init__(self) -> None:
        self.data = self.src.encode("utf-8", "surrogatepass")
        self.lines = self.src.split("\n")  # Rust counts lines by \n only (not str.splitlines' U+2028 etc.)

    # ------------------------------------------------------------------------------------------- reporting

    def at(self, node: Node) -> tuple[int, int]:
        row, byte_col = node.start_point
        line_bytes = self.data.split(b"\n")[row] if row < self.data.count(b"\n") + 1 else b""
        return row + 1, len(line_bytes[:byte_col].decode("utf-8", "replace")) + 1

    def report(self, code: str, message: str, node: Node | None = None, *, pos: tuple[int, int] | None = None,
               level: str = "error", notes: list[str] | None = None) -> None:
        line, col = pos if pos else (self.at(node) if node is not None else (None, None))
        key = (code, line, col)
        if key in self.seen or len(self.diags) >= MAX_DIAGNOSTICS:
            return
        self.seen.add(key)
        self.diags.append(_diag(code, message, self.file, line, col, self.lines, level=level, notes=notes))

    def text(self, node: Node) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    # ------------------------------------------------------------------------------------------------ text

    def check_text(self) -> bool:
        """Characters that change what the compiler reads. False: do not judge the tree (it would mislead)."""
        ok = True
        for i, line in enumerate(self.lines):
            for j, ch in enumerate(line):
                if ch.isascii() and (ch.isprintable() or ch in "\t\r"):
                    continue
                name = RUST_EXTRA_WHITESPACE.get(ch)
                cat = unicodedata.category(ch)
                if name:
                    why = f"U+{ord(ch):04X} {name}, which Rust reads as whitespace"
                elif cat == "Cf" and not (ch == "\ufeff" and i == 0 and j == 0):
                    why = f"U+{ord(ch):04X} {unicodedata.name(ch, 'FORMAT CONTROL')}, an invisible format control"
                elif cat in ("Cc", "Cs", "Co", "Cn"):
                    why = f"U+{ord(ch):04X}, a control or unassigned character"
                else:
                    continue
                ok = False
                self.report("TP-UNICODE", f"{why}, is not allowed anywhere in {self.file}", pos=(i + 1, j + 1),
                            notes=["help: write the code in plain ASCII"])
        return ok

    # ------------------------------------------------------------------------------------------------ tree

    def walk(self, root: Node) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            t = node.type
            if node.is_error or node.is_missing:
                what = "missing " + t if node.is_missing else "unreadable code"
                self.report("TP-SYNTAX", f"{self.file} does not parse here ({what}); the policy passes only code "
                            "it can read", node)
                continue
            if t in _STRINGY:
                continue
            if node.child_count == 0:
                self.leaf(node)
                continue
            handler = getattr(self, "on_" + t, None)
            verdict = handler(node) if handler is not None else None
            if verdict is False:
                continue  # handler judged the whole subtree
            if isinstance(verdict, list):
                stack.extend(reversed(verdict))  # handler chose what to descend into
                continue
            if t.endswith(("_item", "_declaration", "_definition")) and t not in ALLOWED_ITEMS:
                why = ITEM_WHY.get(t, f"`{_kind(node)}` items are not allowed")
                self.report(ITEM_CODES.get(t, "TP-ITEM"), why + f" in {self.file}", node)
            stack.extend(reversed(node.children))

    def leaf(self, node: Node) -> None:
        text = self.text(node)
        if not text.isascii():
            self.report("TP-UNICODE", f"non-ASCII code `{text}` is not allowed in {self.file} (only inside "
                        "comments and string literals)", node)
        elif node.type == "identifier" and text.startswith("r#"):
            self.report("TP-RAW-IDENT", f"raw identifier `{text}` is not allowed in {self.file}; use a plain name",
                        node)
        elif node.type == "unsafe" and self.deny_unsafe:
            self.report("TP-UNSAFE", f"`unsafe` is not allowed in {self.file} (deny_unsafe)", node,
                        notes=["help: write the kernel with cutile's safe tile API"])

    # items

    def on_source_file(self, node: Node) -> None:
        if self.host:
            return
        for child in node.named_children:
            if child.type not in KERNEL_TOP_ITEMS and child.type not in ITEM_WHY and not child.is_error:
                self.report("TP-ITEM", f"`{_kind(child)}` at the top of {self.file}: the file holds "
                            "`#[cutile::module] pub mod NAME { ... }` and `use cutile::...` only", child)

    def on_mod_item(self, node: Node) -> None:
        if node.child_by_field_name("body") is None:
            name = node.child_by_field_name("name")
            self.report("TP-MODULE-FILE", f"`mod {self.text(name) if name else '?'};` loads another file; write "
                        "the module inline (`mod name { ... }`)", node)

    def on_static_item(self, node: Node) -> bool | None:
        """A kernel's device global (`static NAME: Global<A, { [] }> = Global::new(..);`, cutile's global memory)
        is the one static allowed: immutable, of cutile's `Global` type, in kernel.rs."""
        ty = node.child_by_field_name("type")
        base = ty.child_by_field_name("type") if ty is not None and ty.type == "generic_type" else None
        mutable = any(c.type == "mutable_specifier" for c in node.children)
        if not self.host and not mutable and base is not None and self.text(base) == "Global":
            return list(node.children)  # a device global: judged like any other item (attributes, value)
        self.report("TP-ITEM", ITEM_WHY["static_item"] + f" in {self.file}" +
                    ("" if self.host else " (except a device global `static NAME: Global<..> = Global::new(..)`)"),
                    node)
        return False

    def on_function_modifiers(self, node: Node) -> None:
        for child in node.children:
            if child.type == "extern_modifier":
                self.report("TP-EXTERN", f"`{self.text(child)}` functions are not allowed in {self.file} (a "
                            "foreign ABI exports or binds host symbols)", child)

    def on_foreign_mod_item(self, node: Node) -> bool:
        self.report("TP-EXTERN", ITEM_WHY["foreign_mod_item"] + f" in {self.file}", node)
        return False

    def on_extern_crate_declaration(self, node: Node) -> bool:
        self.report("TP-EXTERN", ITEM_WHY["extern_crate_declaration"] + f" in {self.file}", node,
                    notes=["help: kernels use only `use cutile::core::*;`"])
        return False

    def on_macro_definition(self, node: Node) -> bool:
        self.report("TP-FORBIDDEN-MACRO", ITEM_WHY["macro_definition"] + f" in {self.file}", node)
        return False

    # attributes

    def on_attribute_item(self, node: Node) -> list[Node]:
        return self._attribute(node, inner=False)

    def on_inner_attribute_item(self, node: Node) -> list[Node]:
        return self._attribute(node, inner=True)

    def _attribute(self, item: Node, inner: bool) -> list[Node]:
        """Judge the attribute's path here; descend only into its arguments and value (macros, raw names)."""
        attr = next((c for c in item.named_children if c.type == "attribute"), None)
        if attr is None:
            return []
        self._attribute_path(item, attr, inner)
        return [c for c in (attr.child_by_field_name("arguments"), attr.child_by_field_name("value"))
                if c is not None]

    def _attribute_path(self, item: Node, attr: Node, inner: bool) -> None:
        head = attr.named_children[0] if attr.named_children else None
        path = self.text(head) if head is not None and head.type in ("identifier", "scoped_identifier") else "?"
        path = re.sub(r"\s+", "", path)
        args = attr.child_by_field_name("arguments")
        shown = f"#{'!' if inner else ''}[{path}" + ("(...)" if args is not None else "") + "]"
        if path == "unsafe":
            inner_name = self.text(args).strip("() \t\n") if args is not None else ""
            self.report("TP-ATTRIBUTE", f"attribute `#[unsafe({inner_name})]` is not allowed in {self.file}: "
                        "unsafe attributes act on symbols and sections", item)
            return
        allowed = INNER_ATTRS if inner else (HOST_ATTRS if self.host else KERNEL_ATTRS)
        if path == META_FIELD_OP and not self.host and not inner:
            norm = re.sub(r"\s+", "", self.text(args)) if args is not None else ""
            m = next((rx.match(norm) for rx in _META_ARGS if rx.match(norm)), None)
            if not (m and m.group(1) in META_FIELDS):
                self.report("TP-ATTRIBUTE", f"`#[{path}(...)]` is allowed only as `#[{path}(name = "
                            "\"return_type_meta_field\", type_meta_field = \"strides\")]` (or shape, base, token)",
                            item)
            return
        if path not in allowed:
            self.report("TP-ATTRIBUTE", f"attribute `{shown}` is not allowed in {self.file}", item,
                        notes=[f"help: allowed: {', '.join(sorted(allowed))}"])
            return
        if path == "cutile::entry" and args is None:
            self.report("TP-BARE-ENTRY", "`#[cutile::entry]` without parentheses; write `#[cutile::entry()]`",
                        item, level="warning")
        if path == "derive" and args is not None:
            for d in args.named_children:
                if d.type != "identifier" or self.text(d) not in BUILTIN_DERIVES:
                    self.report("TP-ATTRIBUTE", f"`#[derive({self.text(d)})]` is not allowed; only the standard "
                                "derives are", d)

    # macros

    def on_macro_invocation(self, node: Node) -> None:
        mac = node.child_by_field_name("macro")
        if mac is None:
            return
        name_node = mac.child_by_field_name("name") if mac.type == "scoped_identifier" else mac
        self._macro(self.text(name_node) if name_node is not None else self.text(mac), mac)

    def _macro(self, name: str, node: Node) -> None:
        bare = name[2:] if name.startswith("r#") else name
        allowed = HOST_MACROS if self.host else KERNEL_MACROS
        if bare in allowed:
            return
        why = MACRO_WHY.get(bare, "is not on the list of macros a " + ("host file" if self.host else "kernel") +
                            " may use")
        self.report("TP-FORBIDDEN-MACRO", f"`{bare}!` is not allowed: it {why}" if bare in MACRO_WHY
                    else f"`{bare}!` {why}", node, notes=[f"help: allowed: {', '.join(sorted(allowed))}"])

    def on_token_tree(self, node: Node) -> None:
        """Macro arguments are tokens, not a tree: judge what they could expand to."""
        toks = [c for c in node.children]
        for k, tok in enumerate(toks):
            nxt = toks[k + 1] if k + 1 < len(toks) else None
            prev = toks[k - 1] if k else None
            if tok.type == "identifier" and nxt is not None and nxt.type == "!":
                self._macro(self.text(tok), tok)
            elif tok.type == "#" and nxt is not None and (nxt.type == "token_tree" or nxt.type == "!"):
                self.report("TP-ATTRIBUTE", "attributes inside macro arguments are not allowed", tok)
            elif tok.type == "identifier" and nxt is not None and nxt.type == "::" and (
                    prev is None or prev.type not in ("::", ".")):
                segs = [self.text(tok)]
                j = k + 1
                while j + 1 < len(toks) and toks[j].type == "::" and toks[j + 1].type == "identifier":
                    segs.append(self.text(toks[j + 1]))
                    j += 2
                self._path([s.removeprefix("r#") for s in segs], [tok, *toks[k + 2:j:2]], glob=False)
            elif tok.type == "::" and (prev is None or prev.type not in ("identifier", "self", "super", "crate")) \
                    and nxt is not None and nxt.type == "identifier":
                self._path(["::", self.text(nxt).removeprefix("r#")], [tok, nxt], glob=False)

    # paths

    def on_scoped_identifier(self, node: Node) -> None:
        self._scoped(node)

    def on_scoped_type_identifier(self, node: Node) -> None:
        self._scoped(node)

    def _scoped(self, node: Node) -> None:
        parent = node.parent
        if parent is not None and parent.type in _SCOPED and parent.child_by_field_name("path") == node:
            return  # judged with the outermost path
        if parent is not None and parent.type in ("use_declaration", "use_wildcard", "scoped_use_list",
                                                  "use_as_clause", "use_list", "macro_invocation"):
            if parent.type != "macro_invocation":
                return  # judged with the use tree
        segs, nodes = self._segments(node)
        if segs:
            self._path(segs, nodes, glob=False)

    def _segments(self, node: Node) -> tuple[list[str], list[Node]]:
        segs: list[str] = []
        nodes: list[Node] = []
        cur: Node | None = node
        while cur is not None and cur.type in _SCOPED:
            name = cur.child_by_field_name("name")
            if name is not None:
                segs.append(self.text(name))
                nodes.append(name)
            path = cur.child_by_field_name("path")
            if path is None:  # `::name`: a crate from the extern prelude
                segs.append("::")
                nodes.append(cur)
                break
            cur = path
        else:
            if cur is not None:
                if cur.type in ("identifier", "type_identifier", "crate", "self", "super", "metavariable"):
                    segs.append(self.text(cur))
                    nodes.append(cur)
                else:
                    return [], []  # <T as Trait>::x, generic_type::x: the inner paths are judged on their own
        segs.reverse()
        nodes.reverse()
        return [s.removeprefix("r#") for s in segs], nodes

    def on_use_declaration(self, node: Node) -> None:
        arg = node.child_by_field_name("argument")
        if arg is not None:
            self._use_tree(arg, [], [])

    def _use_tree(self, node: Node, prefix: list[str], nodes: list[Node]) -> None:
        t = node.type
        if t in ("identifier", "crate", "self", "super", "metavariable") or t in _SCOPED:
            segs, ns = self._segments(node) if t in _SCOPED else ([self.text(node)], [node])
            if t == "self" and prefix:
                segs, ns = [], []  # `use a::{self}` is `a`
            self._path(prefix + segs, nodes + ns, glob=False, use=True)
        elif t == "use_wildcard":
            inner = next((c for c in node.named_children), None)
            segs, ns = (self._segments(inner) if inner is not None and inner.type in _SCOPED else
                        (([self.text(inner)], [inner]) if inner is not None else ([], [])))
            self._path(prefix + segs, nodes + ns, glob=True, use=True, at=node)
        elif t == "use_as_clause":
            path = node.child_by_field_name("path")
            alias = node.child_by_field_name("alias")
            allowed = HOST_MACROS if self.host else KERNEL_MACROS
            if alias is not None and self.text(alias).removeprefix("r#") in allowed:
                self.report("TP-FORBIDDEN-MACRO", f"`use ... as {self.text(alias)}` renames something onto the name "
                            "of an allowed macro; import under another name", alias)
            if path is not None:
                self._use_tree(path, prefix, nodes)
        elif t == "scoped_use_list":
            path = node.child_by_field_name("path")
            segs, ns = ([], [])
            if path is not None:
                segs, ns = self._segments(path) if path.type in _SCOPED else ([self.text(path)], [path])
            lst = node.child_by_field_name("list")
            for child in (lst.named_children if lst is not None else []):
                self._use_tree(child, prefix + segs, nodes + ns)
        elif t == "use_list":
            for child in node.named_children:
                self._use_tree(child, prefix, nodes)

    def _path(self, segs: list[str], nodes: list[Node], *, glob: bool, use: bool = False,
              at: Node | None = None) -> None:
        if not segs:
            return
        root = segs[0]
        k = 1 if root == "::" else 0
        crate = segs[k] if k < len(segs) else None
        if crate is None:
            return
        is_crate = root == "::" or crate in KNOWN_CRATES
        if not is_crate:
            return  # a local name, a generic, a primitive or a cutile import: resolved inside this crate
        shown = "::".join(s for s in segs if s != "::")
        second = segs[k + 1] if k + 1 < len(segs) else None
        node_of = lambda i: nodes[i] if i < len(nodes) else (at or nodes[-1])  # noqa: E731
        if crate in ("std", "core", "alloc") and second in HOST_EFFECT_MODULES:
            self.report("TP-HOST-API", f"`{second}` is not allowed: {crate}::{second} "
                        f"({HOST_EFFECT_MODULES[second]})", node_of(k + 1))
            return
        if not self.host:
            if crate == "cutile" and (second in KERNEL_CUTILE_MODULES or (second is None and use and False)):
                return
            self.report("TP-HOST-API", f"`{shown}{'::*' if glob else ''}` is not allowed in a kernel: only cutile's "
                        f"kernel API (cutile::{{{', '.join(sorted(KERNEL_CUTILE_MODULES))}}}) is available",
                        node_of(k), notes=["help: `use cutile::core::*;`"])
            return
        if crate == "cutile":
            return
        if crate in ("std", "core", "alloc") and second is not None and not (glob and second is None):
            return
        self.report("TP-HOST-API", f"`{shown}{'::*' if glob else ''}` is not allowed in {self.file}: name a module "
                    f"(std::io, std::sync, ...) and not " + ("the crate itself" if crate in ("std", "core", "alloc")
                                                             else f"the crate `{crate}`"), node_of(k))


def _kind(node: Node) -> str:
    return node.type.removesuffix("_item").removesuffix("_declaration").replace("_", " ")


def _diag(code: str, message: str, file: str, line: int | None, col: int | None, lines: list[str],
          level: str = "error", notes: list[str] | None = None) -> Diagnostic:
    snippet = lines[line - 1] if line and line <= len(lines) else None
    rendered = f"{level}[{code}]: {message}"
    if line:
        rendered += f"\n  --> {file}:{line}:{col}"
        if snippet is not None:
            rendered += f"\n   | {snippet}"
    return Diagnostic(source=DiagnosticSource.POLICY, level=level, code=code, message=message, file=file,
                      line=line, col=col, snippet=snippet, rendered=rendered, notes=notes or [])


def check_source(src: str, file: str = KERNEL_FILE, *, host: bool = False, deny_unsafe: bool = False,
                 module: str | None = None, entries: list[str] | tuple[str, ...] = ()) -> list[Diagnostic]:
    """Policy diagnostics for one model-written file (kernel.rs by default; host.rs with host=True)."""
    lines = src.split("\n")
    if len(src.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        return [_diag("TP-SOURCE", f"{file} is larger than {MAX_SOURCE_BYTES // 1024} KiB", file, None, None, lines)]
    if "\x00" in src:
        return [_diag("TP-SOURCE", f"{file} contains NUL bytes", file, None, None, lines)]
    judge = _Judge(src, file, host, deny_unsafe)
    if not judge.check_text():
        return judge.diags
    tree = _parser().parse(judge.data)
    judge.walk(tree.root_node)
    if not host and module is not None:
        judge.diags.extend(_check_structure(judge, tree.root_node, module, entries))
    return judge.diags


def _check_structure(judge: _Judge, root: Node, module: str, entries: list[str] | tuple[str, ...]) -> list[Diagnostic]:
    """The names the spec promises must exist, so the writer gets a clear message instead of an error in the
    generated IR-dump program."""
    out: list[Diagnostic] = []
    file, lines = judge.file, judge.lines

    def d(code: str, msg: str, node: Node | None) -> Diagnostic:
        line, col = judge.at(node) if node is not None else (None, None)
        return _diag(code, msg, file, line, col, lines)

    mod = None
    attrs: list[Node] = []
    pending: list[Node] = []
    for child in root.named_children:
        if child.type == "attribute_item":
            pending.append(child)
            continue
        if child.type == "mod_item":
            name = child.child_by_field_name("name")
            if name is not None and judge.text(name) == module:
                mod, attrs = child, pending
                break
        if child.type not in ("line_comment", "block_comment"):
            pending = []
    if mod is None:
        out.append(d("TP-NO-MODULE", f"{file} must define `#[cutile::module] pub mod {module} {{ ... }}` (the module "
                     "named in the spec)", None))
        return out
    if not any(c.type == "visibility_modifier" for c in mod.children):
        out.append(d("TP-NO-MODULE", f"module `{module}` must be public: `pub mod {module}`", mod))
    if not any(re.sub(r"\s+", "", judge.text(a)).startswith("#[cutile::module") for a in attrs):
        out.append(d("TP-NO-MODULE", f"`pub mod {module}` needs the `#[cutile::module]` attribute", mod))
    body = mod.child_by_field_name("body")
    names = set()
    stack = [body] if body is not None else []
    while stack:
        n = stack.pop()
        if n.type in ("function_item", "function_signature_item"):
            nm = n.child_by_field_name("name")
            if nm is not None:
                names.add(judge.text(nm))
        stack.extend(c for c in n.named_children if c.type in ("declaration_list", "function_item",
                                                                "function_signature_item", "mod_item"))
    for entry in entries:
        if entry not in names:
            out.append(d("TP-NO-ENTRY", f"entry `{entry}` named in the spec is not defined: write "
                         f"`#[cutile::entry()] fn {entry}<...>(...)` inside `{module}`", mod))
    return out
