"""Untrusted-code policy: kernel sources come from a model, so tileport refuses, before cargo runs, anything that
could act on the build machine at compile time or at load time, or smuggle files into the build.

The code is judged on a real Rust syntax tree (tree-sitter-rust, pinned; `syntax_policy.py`) against an
ALLOWLIST of what a cutile kernel may contain, never on a token denylist:

- text: Rust skips characters as whitespace that other lexers do not (U+200E/U+200F, U+2028/U+2029, U+0085),
  and bidi/format controls make code read differently from how it compiles. None may appear anywhere, and code
  outside comments and string literals must be ASCII (so identifiers cannot be look-alikes);
- the tree must parse without errors: what the policy cannot read, it does not pass;
- items: only `fn`, `const`, `struct`, `enum`, `type`, `impl`, `trait`, `use` and inline `mod name { .. }`
  (kernel.rs: one `#[cutile::module] pub mod` at the top; a device global `static X: Global<..>`); no other
  `static` (where `#[link_section]` sits), `union`,
  `extern` blocks or ABIs, `extern crate`, macro definitions or `mod name;`;
- attributes: a short list per file (KERNEL_ATTRS, HOST_ATTRS); `no_mangle`, `export_name`, `link_section`,
  `used`, `link`, `cfg_attr`, `path` and anything in `unsafe(...)` are not on it;
- macros: a short list per file (KERNEL_MACROS, HOST_MACROS), checked also inside other macros' arguments;
  `include*!`, `env!`, `asm!`, `global_asm!`, `macro_rules!` are not on it;
- paths: the only crates a conversion crate can name are std/core (the prelude), cutile and cutile_compiler
  (tileport writes the manifest). A kernel may name only cutile's kernel API (`cutile::core`, ...); host.rs may
  use std except `std::{process, fs, net, env, os, arch, ffi, intrinsics}`, and must name a module (no
  `use std::*`, no `use std as s`);
- raw identifiers (`r#name`) are refused: a kernel needs none, and they dress up names.

`unsafe` is allowed by default (deny_unsafe=True refuses it): cutile 0.5.0 kernels need it for padded views
other than zero (`make_partition_view(.., padding::NegInf, ..)`), pointer gathers and unchecked accesses. The
policy is the first layer; every build and every binary built from model-written code also runs in a sandbox
(tileport.exec.sandbox), so a gap here is not an escape.
The crate tree itself must be exactly what tileport generated: no build.rs, no edited Cargo.toml, no extra files,
no symlinks, no `.cargo/config.toml` or rust-toolchain file; a port directory holds plain files only.

Every refusal is a `Diagnostic` with source `policy`, at file:line:col, so the writer agent sees it like a
compiler error.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tileport.validators.rust.crate import HOST_FILE, IGNORED_DIRS, KERNEL_FILE, CrateLayout, generated_files
from tileport.validators.rust.diagnostics import Diagnostic, DiagnosticSource
from tileport.validators.rust.syntax_policy import (MAX_SOURCE_BYTES, _check_structure, _Judge, _parser,
                                                    check_source)

__all__ = ["check_crate", "check_crate_tree", "check_port_dir", "check_source", "read_plain", "MAX_SOURCE_BYTES"]


def check_port_dir(port: Path) -> list[Diagnostic]:
    """A port directory (what a model wrote) holds plain files and plain directories only: links are never
    followed and their targets never read, FIFOs and devices are never opened."""
    diags = []
    try:
        entries = sorted(os.scandir(port), key=lambda e: e.name)
    except OSError as e:
        return [_tree("TP-SOURCE", f"cannot list {port}: {e.strerror}", str(port))]
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            diags.append(_tree("TP-SYMLINK", f"{entry.name} is a symbolic link; a port holds plain files only "
                               "(not followed)", entry.name))
        elif not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            diags.append(_tree("TP-NOT-REGULAR", f"{entry.name} is not a regular file (FIFO, socket or device); a "
                               "port holds plain files only (not opened)", entry.name))
    return diags


def read_plain(path: Path, limit: int = MAX_SOURCE_BYTES * 4) -> bytes:
    """Read a regular file without following a link and without blocking on a FIFO; OSError otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


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
            elif not stat.S_ISREG(p.lstat().st_mode):
                diags.append(_tree("TP-NOT-REGULAR", f"{rel} is not a regular file (FIFO, socket or device); "
                                   "conversion crates hold plain files only", rel))
            elif rel == "build.rs":
                diags.append(_tree("TP-BUILD-SCRIPT", "build.rs is not allowed: a build script runs arbitrary code "
                                   "on the build machine", rel))
            elif f.startswith("rust-toolchain"):
                diags.append(_tree("TP-CARGO-CONFIG", f"{rel} would switch the Rust toolchain; not allowed", rel))
            elif rel in expected:
                try:
                    same = read_plain(p).decode("utf-8") == expected[rel]
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
    if any(d.code in ("TP-SYMLINK", "TP-NOT-REGULAR") for d in diags):
        return diags  # never read through a link
    spec = layout.spec
    kernel = layout.root / KERNEL_FILE
    if kernel.is_file():
        try:
            src = read_plain(kernel).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            diags.append(_tree("TP-SOURCE", f"{KERNEL_FILE} is not UTF-8 text", KERNEL_FILE))
        else:
            diags.extend(check_source(src, KERNEL_FILE, deny_unsafe=deny_unsafe, module=spec.module,
                                      entries=[e.name for e in spec.entries if (e.module or spec.module) == spec.module]))
            if not any(d.code in ("TP-UNICODE", "TP-SOURCE") for d in diags):
                for other in sorted({e.module for e in spec.entries if e.module and e.module != spec.module}):
                    judge = _Judge(src, KERNEL_FILE, False, deny_unsafe)
                    diags.extend(_check_structure(judge, _parser().parse(judge.data).root_node, other,
                                                  [e.name for e in spec.entries if e.module == other]))
    host = layout.root / HOST_FILE
    if spec.host and host.is_file():
        try:
            diags.extend(check_source(read_plain(host).decode("utf-8"), HOST_FILE, host=True))
        except (OSError, UnicodeDecodeError):
            diags.append(_tree("TP-SOURCE", f"{HOST_FILE} is not UTF-8 text", HOST_FILE))
    return diags
