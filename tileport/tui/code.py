"""What the code view shows, read from the conversion's git worktree: the port's kernel.rs at a commit, the
Python op beside it, which Rust entry ports which Python kernel (from spec.json), and diffs (the branch against
its base, one attempt against the one before). Read-only; the real git does every read."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from tileport import service


@dataclass(frozen=True)
class EntryMap:
    entry: str  # the Rust entry in kernel.rs
    kernel: str  # the Python kernel it ports
    rust_line: int | None
    python_line: int | None
    variants: tuple[str, ...]

    def text(self, op: str) -> str:
        r = f"kernel.rs:{self.rust_line}" if self.rust_line else "kernel.rs"
        p = f"{op}.py:{self.python_line}" if self.python_line else f"{op}.py"
        return f"{self.entry} ({r}) <-> {self.kernel} ({p})  variants {', '.join(self.variants) or '-'}"


def _git(worktree: Path, *args: str) -> tuple[bool, str]:
    return service.read_git(worktree, *args)


def port_dir(op_path: str) -> str:
    return f"ports/{Path(op_path).stem}"


def show(worktree: Path, commit: str, path: str) -> str | None:
    ok, text = _git(worktree, "show", f"{commit}:{path}")
    return text if ok else None


def _line_of(text: str, pattern: str) -> int | None:
    rx = re.compile(pattern)
    for i, line in enumerate(text.splitlines(), start=1):
        if rx.search(line):
            return i
    return None


def entry_map(spec_text: str | None, rust: str, python: str) -> list[EntryMap]:
    """Rust entry <-> Python kernel, as spec.json pairs them (`entries[].variants[].reference.kernel`)."""
    try:
        spec = json.loads(spec_text or "{}")
    except ValueError:
        return []
    out = []
    for e in spec.get("entries", []) if isinstance(spec, dict) else []:
        if not isinstance(e, dict):
            continue
        name = str(e.get("name", "?"))
        variants = [v for v in e.get("variants", []) if isinstance(v, dict)]
        kernels = sorted({str((v.get("reference") or {}).get("kernel", "?")) for v in variants}) or ["?"]
        for k in kernels:
            out.append(EntryMap(name, k, _line_of(rust, rf"\bfn\s+{re.escape(name)}\b"),
                                _line_of(python, rf"^\s*def\s+{re.escape(k)}\b"),
                                tuple(str(v.get("name", "?")) for v in variants
                                      if str((v.get("reference") or {}).get("kernel", "?")) == k)))
    return out


@dataclass(frozen=True)
class CodeSides:
    rust: str | None
    python: str | None
    entries: list[EntryMap]
    commit: str


def sides(worktree: Path, commit: str, op_path: str) -> CodeSides:
    d = port_dir(op_path)
    rust = show(worktree, commit, f"{d}/kernel.rs")
    try:
        python = Path(op_path).read_text(encoding="utf-8")
    except OSError:
        python = None
    spec = show(worktree, commit, f"{d}/spec.json")
    return CodeSides(rust, python, entry_map(spec, rust or "", python or ""), commit)


def branch_diff(worktree: Path, base: str, head: str, op_path: str) -> str:
    ok, text = _git(worktree, "diff", "--stat", "--patch", f"{base}..{head}", "--", port_dir(op_path),
                    f":(exclude){port_dir(op_path)}/.tileport")
    return text if ok else f"git diff failed: {text}"


def attempt_diff(worktree: Path, older: str, newer: str, op_path: str) -> str:
    d = port_dir(op_path)
    ok, text = _git(worktree, "diff", f"{older}..{newer}", "--", f"{d}/kernel.rs", f"{d}/spec.json", f"{d}/host.rs")
    return text if ok else f"git diff failed: {text}"
