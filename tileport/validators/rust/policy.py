"""Untrusted-code policy: kernel sources come from a model, so tileport refuses, before cargo runs, anything that
could act on the build machine at compile time or at load time, or smuggle files into the build.

Why these rules: building Rust runs code (build scripts, proc macros) and links code that can run before
`main` (`#[link_section = ".init_array"]`); `include_str!`/`include_bytes!`/`#[path]` read arbitrary files into
the build; `env!` leaks the build environment. A cutile kernel needs none of this: it is `use cutile::core::*`
plus tile arithmetic. So kernel.rs is checked against an allowlist of attributes and a denylist of macros,
keywords and host APIs, on tokens (comments and string contents are skipped, raw identifiers normalised).
`unsafe` is allowed by default (deny_unsafe=True refuses it): cutile 0.5.0 kernels need it for padded views
other than zero (`make_partition_view(.., padding::NegInf, ..)`), pointer gathers and unchecked accesses, and
nothing in kernel.rs ever runs on the build machine: the IR dump only re-parses the captured source text, and
the attribute allowlist keeps load-time constructors out. Device-side misuse shows up in the correctness stage,
which runs each conversion's GPU work in a child process.
The crate tree itself must be exactly what tileport generated: no build.rs, no edited Cargo.toml, no extra files,
no symlinks, no `.cargo/config.toml` or rust-toolchain file.

Every refusal is a `Diagnostic` with source `policy`, so the writer agent sees it like a compiler error.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from tileport.validators.rust.crate import HOST_FILE, IGNORED_DIRS, KERNEL_FILE, CrateLayout, generated_files
from tileport.validators.rust.diagnostics import Diagnostic, DiagnosticSource

MAX_SOURCE_BYTES = 256 * 1024

# Macros that read files or the environment, emit raw machine code, or build macros (which could hide tokens).
FORBIDDEN_MACROS = {
    "include": "reads another file into the build",
    "include_str": "reads another file into the build",
    "include_bytes": "reads another file into the build",
    "env": "reads the build environment",
    "option_env": "reads the build environment",
    "asm": "emits raw machine code",
    "global_asm": "emits raw machine code",
    "naked_asm": "emits raw machine code",
    "llvm_asm": "emits raw machine code",
    "concat_idents": "builds identifiers the policy cannot see",
    "macro_rules": "defines macros, which a kernel does not need",
}

# Identifiers that name host effects. A kernel has no use for any of them; a host file may not spawn
# processes, touch files or the network either.
HOST_EFFECT_IDENTS = {
    "process": "std::process (spawning programs)",
    "Command": "std::process::Command (spawning programs)",
    "fs": "std::fs (file system access)",
    "File": "std::fs::File (file system access)",
    "OpenOptions": "std::fs::OpenOptions (file system access)",
    "net": "std::net (network access)",
    "TcpStream": "std::net (network access)",
    "TcpListener": "std::net (network access)",
    "UdpSocket": "std::net (network access)",
    "set_var": "std::env::set_var (changing the environment)",
    "remove_var": "std::env::remove_var (changing the environment)",
    "libc": "the libc crate (raw system calls)",
}

# Crate roots a kernel must not name at all (cutile::core is fine; `core` alone is not).
KERNEL_FORBIDDEN_ROOTS = {"std", "alloc", "proc_macro", "core"}

# Attributes allowed in kernel.rs, by path. Anything else (path, link_section, no_mangle, export_name, used,
# link, cfg_attr, proc-macro derives of other crates, ...) is refused.
KERNEL_ATTRS = {"allow", "warn", "deny", "expect", "forbid", "inline", "doc", "must_use", "cfg", "rustfmt::skip",
                "entry", "derive"}
HOST_EXTRA_ATTRS = {"no_mangle", "repr", "test"}
# cutile 0.5.0 gives kernels a tensor's base pointer and shape but no accessor for its strides, which a kernel
# needs to build a sliced view (`x.slice(...)` in cuTile Python) in-kernel. A body-less declaration
# `#[cuda_tile::compiler_op(name = "return_type_meta_field", type_meta_field = "strides")]` reads that field of
# the tensor's compile-time metadata (exactly how cutile's own `get_tensor_base` / `get_tensor_shape_meta` are
# declared). The module macro strips the attribute, nothing runs on the build machine; only this exact form
# (read one metadata field) is allowed, every other compiler_op is refused.
META_FIELD_OP = "cuda_tile::compiler_op"
META_FIELDS = {"strides", "shape", "base", "token"}
BUILTIN_DERIVES = {"Clone", "Copy", "Debug", "Default", "PartialEq", "Eq", "PartialOrd", "Ord", "Hash"}


# --------------------------------------------------------------------------------------------------------- lexer


@dataclass(frozen=True)
class Token:
    kind: str  # ident | punct | literal | lifetime
    text: str
    line: int
    col: int  # 1-based


class LexError(ValueError):
    def __init__(self, message: str, line: int, col: int):
        super().__init__(message)
        self.line, self.col = line, col


def tokenize(src: str) -> list[Token]:
    """A Rust lexer good enough for policy checks: skips comments and literal contents, keeps positions."""
    toks: list[Token] = []
    i, n, line, col = 0, len(src), 1, 1

    def advance(k: int) -> None:
        nonlocal i, line, col
        for _ in range(k):
            if i < n and src[i] == "\n":
                line, col = line + 1, 1
            else:
                col += 1
            i += 1

    def skip_quoted(quote: str) -> None:  # at the opening quote
        advance(1)
        while i < n and src[i] != quote:
            advance(2 if src[i] == "\\" else 1)
        if i >= n:
            raise LexError("unterminated literal", line, col)
        advance(1)

    while i < n:
        c = src[i]
        start_line, start_col = line, col
        if c.isspace():
            advance(1)
        elif src.startswith("//", i):
            while i < n and src[i] != "\n":
                advance(1)
        elif src.startswith("/*", i):
            depth = 0
            while i < n:
                if src.startswith("/*", i):
                    depth += 1
                    advance(2)
                elif src.startswith("*/", i):
                    depth -= 1
                    advance(2)
                    if depth == 0:
                        break
                else:
                    advance(1)
            if depth:
                raise LexError("unterminated block comment", start_line, start_col)
        elif c in "rbc" and _raw_string_start(src, i):
            j = i + (2 if src[i:i + 2] in ("br", "cr") else 1)
            hashes = 0
            while j < n and src[j] == "#":
                hashes += 1
                j += 1
            end = src.find('"' + "#" * hashes, j + 1)
            if end < 0:
                raise LexError("unterminated raw string", line, col)
            advance(end + 1 + hashes - i)
            toks.append(Token("literal", "<raw string>", start_line, start_col))
        elif c in "bc" and i + 1 < n and src[i + 1] == '"':
            advance(1)
            skip_quoted('"')
            toks.append(Token("literal", "<string>", start_line, start_col))
        elif c == '"':
            skip_quoted('"')
            toks.append(Token("literal", "<string>", start_line, start_col))
        elif c == "b" and i + 1 < n and src[i + 1] == "'":
            advance(1)
            skip_quoted("'")
            toks.append(Token("literal", "<char>", start_line, start_col))
        elif c == "'":
            # char literal ('a', '\n', '\u{1F}') or lifetime/label ('a, 'static)
            if i + 1 < n and src[i + 1] == "\\":
                skip_quoted("'")
                toks.append(Token("literal", "<char>", start_line, start_col))
            elif i + 2 < n and src[i + 2] == "'":
                advance(3)
                toks.append(Token("literal", "<char>", start_line, start_col))
            else:
                advance(1)
                s = i
                while i < n and (src[i].isalnum() or src[i] == "_"):
                    advance(1)
                toks.append(Token("lifetime", "'" + src[s:i], start_line, start_col))
        elif c.isalpha() or c == "_" or ord(c) > 127:
            if src.startswith("r#", i) and i + 2 < n and (src[i + 2].isalpha() or src[i + 2] == "_"):
                advance(2)  # raw identifier r#name is the identifier `name`
            s = i
            while i < n and (src[i].isalnum() or src[i] == "_" or ord(src[i]) > 127):
                advance(1)
            toks.append(Token("ident", src[s:i], start_line, start_col))
        elif c.isdigit():
            s = i
            hexa = src.startswith(("0x", "0X"), i)
            while i < n:
                ch = src[i]
                if ch.isalnum() or ch == "_":
                    advance(1)
                elif ch == "." and i + 1 < n and src[i + 1].isdigit() and "." not in src[s:i]:
                    advance(1)
                elif ch in "+-" and not hexa and src[i - 1] in "eE":
                    advance(1)
                else:
                    break
            toks.append(Token("literal", src[s:i], start_line, start_col))
        elif src.startswith("::", i):
            advance(2)
            toks.append(Token("punct", "::", start_line, start_col))
        else:
            advance(1)
            toks.append(Token("punct", c, start_line, start_col))
    return toks


def _raw_string_start(src: str, i: int) -> bool:
    """r"..", r#".."#, br"..", cr".." (but not the raw identifier r#name)."""
    if src.startswith(("br", "cr"), i):
        j = i + 2
    elif src[i] == "r":
        j = i + 1
    else:
        return False
    while j < len(src) and src[j] == "#":
        j += 1
    return j < len(src) and src[j] == '"'


# -------------------------------------------------------------------------------------------------------- checks


def _diag(code: str, message: str, file: str, tok: Token | None, lines: list[str], level: str = "error",
          notes: list[str] | None = None) -> Diagnostic:
    line = tok.line if tok else None
    col = tok.col if tok else None
    snippet = lines[line - 1] if line and line <= len(lines) else None
    rendered = f"{level}[{code}]: {message}"
    if line:
        rendered += f"\n  --> {file}:{line}:{col}"
        if snippet is not None:
            rendered += f"\n   | {snippet}"
    return Diagnostic(source=DiagnosticSource.POLICY, level=level, code=code, message=message, file=file,
                      line=line, col=col, snippet=snippet, rendered=rendered, notes=notes or [])


def _attribute_path(toks: list[Token], k: int) -> tuple[str, int]:
    """Path of the attribute whose `[` is at k; returns (path, index after the path)."""
    parts, j = [], k + 1
    while j < len(toks):
        t = toks[j]
        if t.kind == "ident":
            parts.append(t.text)
            j += 1
            if j < len(toks) and toks[j].text == "::":
                j += 1
                continue
        break
    return "::".join(parts), j


def _matching(toks: list[Token], k: int, open_: str, close: str) -> int:
    depth = 0
    for j in range(k, len(toks)):
        if toks[j].text == open_:
            depth += 1
        elif toks[j].text == close:
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


_META_ARGS = [re.compile(r'^\(\s*name\s*=\s*"return_type_meta_field"\s*,\s*type_meta_field\s*=\s*"(\w+)"\s*\)$'),
              re.compile(r'^\(\s*type_meta_field\s*=\s*"(\w+)"\s*,\s*name\s*=\s*"return_type_meta_field"\s*\)$')]


def _is_meta_field_read(args: list[Token], lines: list[str]) -> bool:
    """The attribute's arguments are `(name = "return_type_meta_field", type_meta_field = "<field>")` (either
    order) with a known field, nothing else. Read from the source text: the lexer drops string contents."""
    if len(args) < 2 or args[0].text != "(" or args[-1].text != ")":
        return False
    first, last = args[0], args[-1]
    if first.line != last.line:  # keep it simple: one line
        return False
    text = lines[first.line - 1][first.col - 1:last.col]
    for rx in _META_ARGS:
        m = rx.match(text)
        if m:
            return m.group(1) in META_FIELDS
    return False


def check_source(src: str, file: str = KERNEL_FILE, *, host: bool = False, deny_unsafe: bool = False,
                 module: str | None = None, entries: list[str] | tuple[str, ...] = ()) -> list[Diagnostic]:
    """Policy diagnostics for one model-written file (kernel.rs by default; host.rs with host=True)."""
    lines = src.splitlines()
    if len(src.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        return [_diag("TP-SOURCE", f"{file} is larger than {MAX_SOURCE_BYTES // 1024} KiB", file, None, lines)]
    if "\x00" in src:
        return [_diag("TP-SOURCE", f"{file} contains NUL bytes", file, None, lines)]
    try:
        toks = tokenize(src)
    except LexError as e:
        return [_diag("TP-SOURCE", f"cannot read {file}: {e}", file, Token("punct", "", e.line, e.col), lines)]

    diags: list[Diagnostic] = []
    allowed_attrs = KERNEL_ATTRS | (HOST_EXTRA_ATTRS if host else set())
    for k, t in enumerate(toks):
        nxt = toks[k + 1] if k + 1 < len(toks) else None
        prev = toks[k - 1] if k else None
        if t.kind == "ident":
            if nxt is not None and nxt.text == "!" and t.text in FORBIDDEN_MACROS:
                diags.append(_diag("TP-FORBIDDEN-MACRO", f"`{t.text}!` is not allowed: it {FORBIDDEN_MACROS[t.text]}",
                                   file, t, lines))
            elif t.text == "extern":
                is_abi = nxt is not None and nxt.kind == "literal"
                if not (host and is_abi):
                    what = "extern crate" if nxt is not None and nxt.text == "crate" else "extern blocks and ABIs"
                    diags.append(_diag("TP-EXTERN", f"`{what}` is not allowed in {file}", file, t, lines,
                                       notes=["help: kernels use only `use cutile::core::*;`"]))
            elif t.text == "unsafe" and deny_unsafe:
                diags.append(_diag("TP-UNSAFE", f"`unsafe` is not allowed in {file} (deny_unsafe)", file, t, lines,
                                   notes=["help: write the kernel with cutile's safe tile API"]))
            elif t.text in HOST_EFFECT_IDENTS and not (prev and prev.text == "."):
                diags.append(_diag("TP-HOST-API", f"`{t.text}` is not allowed: {HOST_EFFECT_IDENTS[t.text]}",
                                   file, t, lines))
            elif not host and t.text in KERNEL_FORBIDDEN_ROOTS and not (prev and prev.text == "::"
                                                                         and k >= 2 and toks[k - 2].text == "cutile"):
                diags.append(_diag("TP-HOST-API", f"`{t.text}` is not allowed in a kernel: only cutile's API "
                                   "(`use cutile::core::*;`) is available", file, t, lines))
            elif t.text == "mod" and nxt is not None and nxt.kind == "ident":
                after = toks[k + 2] if k + 2 < len(toks) else None
                if after is not None and after.text == ";":
                    diags.append(_diag("TP-MODULE-FILE", f"`mod {nxt.text};` loads another file; write the module "
                                       "inline (`mod name { ... }`)", file, t, lines))
        elif t.text == "#" and nxt is not None and (nxt.text == "[" or (nxt.text == "!" and k + 2 < len(toks)
                                                                         and toks[k + 2].text == "[")):
            open_at = k + 1 if nxt.text == "[" else k + 2
            path, after = _attribute_path(toks, open_at)
            close = _matching(toks, open_at, "[", "]")
            head = path.split("::")[0]
            if head == "cutile":
                if path == "cutile::entry" and after < len(toks) and toks[after].text == "]":
                    diags.append(_diag("TP-BARE-ENTRY", "`#[cutile::entry]` without parentheses; write "
                                       "`#[cutile::entry()]`", file, t, lines, level="warning"))
                continue
            if path == META_FIELD_OP and not host:
                if not _is_meta_field_read(toks[after:close], lines):
                    diags.append(_diag("TP-ATTRIBUTE", f"`#[{path}(...)]` is allowed only as `#[{path}(name = "
                                       "\"return_type_meta_field\", type_meta_field = \"strides\")]` (or shape, "
                                       "base, token)", file, t, lines))
                continue
            if path not in allowed_attrs:
                diags.append(_diag("TP-ATTRIBUTE", f"attribute `#[{path or '?'}]` is not allowed in {file}", file,
                                   t, lines, notes=[f"help: allowed: cutile::*, {', '.join(sorted(allowed_attrs))}"]))
            elif path == "derive":
                for d in toks[after:close]:
                    if d.kind == "ident" and d.text not in BUILTIN_DERIVES:
                        diags.append(_diag("TP-ATTRIBUTE", f"`#[derive({d.text})]` is not allowed; only the "
                                           "standard derives are", file, d, lines))
    if not host and module is not None:
        diags.extend(_check_structure(toks, lines, file, module, entries))
    return diags


def _check_structure(toks: list[Token], lines: list[str], file: str, module: str,
                     entries: list[str] | tuple[str, ...]) -> list[Diagnostic]:
    """The names the spec promises must exist, so the writer gets a clear message instead of an error in the
    generated IR-dump program."""
    diags = []
    mod_tok = None
    for k, t in enumerate(toks[:-1]):
        if t.text == "mod" and toks[k + 1].text == module:
            mod_tok = t
            is_pub = k >= 1 and (toks[k - 1].text == "pub" or toks[k - 1].text == ")")
            if not is_pub:
                diags.append(_diag("TP-NO-MODULE", f"module `{module}` must be public: `pub mod {module}`", file,
                                   t, lines))
            break
    if mod_tok is None:
        diags.append(_diag("TP-NO-MODULE", f"{file} must define `#[cutile::module] pub mod {module} {{ ... }}` "
                           "(the module named in the spec)", file, None, lines))
    if not any(t.text == "#" and k + 3 < len(toks) and toks[k + 2].text == "cutile" and toks[k + 4].text == "module"
               for k, t in enumerate(toks[:-4])):
        diags.append(_diag("TP-NO-MODULE", f"`pub mod {module}` needs the `#[cutile::module]` attribute", file,
                           mod_tok, lines))
    for entry in entries:
        if not any(t.text == "fn" and toks[k + 1].text == entry for k, t in enumerate(toks[:-1])):
            diags.append(_diag("TP-NO-ENTRY", f"entry `{entry}` named in the spec is not defined: write "
                               f"`#[cutile::entry()] fn {entry}<...>(...)` inside `{module}`", file, mod_tok, lines))
    return diags


def check_crate_tree(layout: CrateLayout) -> list[Diagnostic]:
    """The crate must be what tileport generated plus the model's files; nothing else, no links."""
    root = layout.root
    expected = generated_files(layout)
    model = {KERNEL_FILE} | ({HOST_FILE} if layout.spec.host else set())
    diags: list[Diagnostic] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir == Path("."):
            dirnames[:] = [d for d in dirnames if d not in IGNORED_DIRS]
        for d in list(dirnames):
            p = Path(dirpath) / d
            rel = (rel_dir / d).as_posix()
            if p.is_symlink():
                diags.append(_tree("TP-SYMLINK", f"{rel} is a symbolic link; conversion crates hold plain files only", rel))
                dirnames.remove(d)
            elif d == ".cargo":
                diags.append(_tree("TP-CARGO-CONFIG", f"{rel}/ would change how cargo builds (runner, rustflags, "
                                   "env); it is not allowed in a conversion crate", rel))
                dirnames.remove(d)
        for f in filenames:
            p = Path(dirpath) / f
            rel = (rel_dir / f).as_posix()
            if p.is_symlink():
                diags.append(_tree("TP-SYMLINK", f"{rel} is a symbolic link; conversion crates hold plain files only", rel))
            elif rel == "build.rs":
                diags.append(_tree("TP-BUILD-SCRIPT", "build.rs is not allowed: a build script runs arbitrary code "
                                   "on the build machine", rel))
            elif f.startswith("rust-toolchain"):
                diags.append(_tree("TP-CARGO-CONFIG", f"{rel} would switch the Rust toolchain; not allowed", rel))
            elif rel in expected:
                try:
                    same = p.read_text(encoding="utf-8") == expected[rel]
                except (OSError, UnicodeDecodeError):
                    same = False
                if not same:
                    what = ("Cargo.toml was edited (dependencies, features, build settings are tileport's)"
                            if rel == "Cargo.toml" else f"{rel} is generated by tileport and was edited")
                    diags.append(_tree("TP-EDITED", what, rel))
            elif rel not in model:
                diags.append(_tree("TP-UNEXPECTED-FILE", f"unexpected file {rel}: the model writes only "
                                   f"{' and '.join(sorted(model))}", rel))
    for rel in expected:
        if not (root / rel).is_file():
            diags.append(_tree("TP-EDITED", f"{rel} (generated by tileport) is missing", rel))
    if not (root / KERNEL_FILE).is_file():
        diags.append(_tree("TP-SOURCE", f"{KERNEL_FILE} is missing", KERNEL_FILE))
    return diags


def _tree(code: str, message: str, rel: str) -> Diagnostic:
    return Diagnostic(source=DiagnosticSource.POLICY, level="error", code=code, message=message, file=rel,
                      rendered=f"error[{code}]: {message}")


def check_crate(layout: CrateLayout, *, deny_unsafe: bool = False) -> list[Diagnostic]:
    """Everything the policy says about a crate: the tree, then each model-written file."""
    diags = check_crate_tree(layout)
    if any(d.code in ("TP-SYMLINK",) for d in diags):
        return diags  # never read through a link
    spec = layout.spec
    kernel = layout.root / KERNEL_FILE
    if kernel.is_file():
        try:
            src = kernel.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            diags.append(_tree("TP-SOURCE", f"{KERNEL_FILE} is not UTF-8 text", KERNEL_FILE))
        else:
            diags.extend(check_source(src, KERNEL_FILE, deny_unsafe=deny_unsafe, module=spec.module,
                                      entries=[e.name for e in spec.entries if (e.module or spec.module) == spec.module]))
            for other in sorted({e.module for e in spec.entries if e.module and e.module != spec.module}):
                diags.extend(d for d in _check_structure(tokenize(src), src.splitlines(), KERNEL_FILE, other,
                                                         [e.name for e in spec.entries if e.module == other]))
    host = layout.root / HOST_FILE
    if spec.host and host.is_file():
        try:
            diags.extend(check_source(host.read_text(encoding="utf-8"), HOST_FILE, host=True))
        except UnicodeDecodeError:
            diags.append(_tree("TP-SOURCE", f"{HOST_FILE} is not UTF-8 text", HOST_FILE))
    return diags
