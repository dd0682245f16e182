"""What a gate pack carries so the op's own tests run on the GPU host: the op's import root (its package), the test
files and scripts stage A ran, the conftest.py files above them, the local modules they import (helpers), and the
project's pytest configuration, all under one project root and at the same relative paths.

`plan(analysis)` reads stage A's analysis (the op source, `tests`, `capture.sources`) and returns a `Carry`: the
files with their sizes by part, the sources to run (pytest files, scripts, the op's `__main__` block), the directory
to put on `sys.path` and the op's dotted module name. Anything a source needs that is not there (a test file gone,
a relative import that resolves to no file) is listed in `missing`; `Carry.refusal()` is then one line naming it.
Third-party imports are the GPU host's business (its torch, cuda.tile, pytest); only imports that resolve to files
under the project root travel.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

from tileport.analysis.mainblock import has_main_block
from tileport.analysis.testfind import PROJECT_MARKERS, SKIP_PARTS

PYTEST_CONFIGS = ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini")
MAX_PACKAGE_BYTES = 48 << 20  # the op's package; past this the pack refuses (name the biggest files)
MAX_DATA_FILE_BYTES = 4 << 20  # a non-Python file in the package larger than this is left out (listed)
MAX_UP = 8


@dataclass(frozen=True)
class Source:
    """One thing the GPU host runs as the op's tests: `kind` pytest (a test file), script (run as __main__) or main
    (the op module's own `if __name__ == "__main__":` block); `path` relative to the project root."""

    kind: str
    path: str

    def as_dict(self) -> dict:
        return {"kind": self.kind, "path": self.path}


@dataclass
class Carry:
    root: Path  # the project root: every carried file keeps its path relative to it
    import_root: str  # relative to root: put on sys.path (the op's package parent, or the op's own directory)
    module: str | None  # the op's dotted name when it is in a package
    op_file: str  # relative to root
    sources: list[Source] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # relative path -> part (package, op, tests, helpers, config)
    left_out: list[str] = field(default_factory=list)  # files not carried, with why
    missing: list[str] = field(default_factory=list)  # what a source needs and is not there

    def sizes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for rel, part in self.files.items():
            out[part] = out.get(part, 0) + (self.root / rel).stat().st_size
        return out

    def size_report(self) -> str:
        s = self.sizes()
        parts = ", ".join(f"{k} {v / 1024:.1f} KiB" for k, v in sorted(s.items()))
        return f"{len(self.files)} file(s), {sum(s.values()) / 1024:.1f} KiB ({parts})"

    def refusal(self) -> str | None:
        if self.missing:
            return "cannot pack the op's tests: missing " + "; ".join(self.missing[:4]) + \
                (f" (+{len(self.missing) - 4} more)" if len(self.missing) > 4 else "")
        if not self.sources:
            return "the op has no tests to run (stage A found none): pass --tests PATH to `tileport analyze`/`run`"
        return None

    def manifest(self) -> dict:
        return {"import_root": self.import_root, "module": self.module, "op_file": self.op_file,
                "sources": [s.as_dict() for s in self.sources], "sizes": self.sizes(), "left_out": self.left_out}


def _get(analysis, key):
    return analysis.get(key) if isinstance(analysis, dict) else getattr(analysis, key, None)


def has_sources(analysis) -> bool:
    """Stage A found tests or scripts of the op, or the op has its own `__main__` block: D can run them."""
    source = _get(analysis, "source")
    path = Path(source["path"] if isinstance(source, dict) else source.path)
    return bool(_get(analysis, "tests")) or has_main_block(path)


def package_root(path: Path) -> tuple[Path, str] | None:
    """(directory to put on sys.path, dotted module name) when the op lives in a package, as stage A imports it."""
    from tileport.analysis.child import package_root as pr

    return pr(path)


def project_root(op: Path, others: list[Path]) -> Path:
    """The nearest ancestor of the op holding a project marker (pyproject.toml, setup.py, setup.cfg, .git) that
    also holds every other path; else the deepest directory holding them all."""
    paths = [op.resolve(), *(p.resolve() for p in others)]
    common = Path(os.path.commonpath([str(p if p.is_dir() else p.parent) for p in paths]))
    for cand in [common, *common.parents][:MAX_UP]:
        if any((cand / m).exists() for m in PROJECT_MARKERS):
            return cand
    return common


def _skip(rel: Path) -> bool:
    return bool(SKIP_PARTS & set(rel.parts)) or any(p.startswith(".") for p in rel.parts[:-1])


def _module_file(base: Path, dotted: str) -> Path | None:
    p = base.joinpath(*dotted.split("."))
    for cand in (p.with_suffix(".py"), p / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _imports(path: Path) -> list[tuple[int, str]]:
    """(level, dotted) of every import in the file; `from x import y` gives both x and x.y."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8-sig"))
    except (OSError, SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((0, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            out.append((node.level, mod))
            out.extend((node.level, f"{mod}.{a.name}" if mod else a.name) for a in node.names if a.name != "*")
    return out


def _local_imports(path: Path, search: list[Path], root: Path) -> tuple[list[Path], list[str]]:
    """Files under root that path's imports resolve to, and relative imports that resolve to nothing."""
    found, missing = [], []
    for level, dotted in _imports(path):
        if level:
            base = path.parent
            for _ in range(level - 1):
                base = base.parent
            if not dotted:
                continue
            f = _module_file(base, dotted)
            if f is None and "." not in dotted:
                missing.append(f"{path.relative_to(root)}: relative import {'.' * level}{dotted} (no such module)")
            elif f is not None:
                found.append(f)
            continue
        for base in search:
            f = _module_file(base, dotted)
            if f is not None:
                found.append(f)
                break
    return [f for f in found if root in f.resolve().parents], missing


def _conftests(test: Path, root: Path) -> list[Path]:
    out = []
    d = test.parent if test.is_file() else test
    while True:
        c = d / "conftest.py"
        if c.is_file():
            out.append(c)
        if d == root or root not in d.parents:
            break
        d = d.parent
    return out


def _pytest_base(test: Path) -> Path:
    """The directory pytest's default import mode puts on sys.path for a test file: the first one up without an
    __init__.py."""
    d = test.parent
    while (d / "__init__.py").is_file():
        d = d.parent
    return d


def plan(analysis) -> Carry:
    """What to carry for the op's tests (analysis: an Analysis, a dict or an analysis.json path)."""
    import json

    if isinstance(analysis, (str, Path)):
        analysis = json.loads(Path(analysis).read_text())
    get = (lambda k: analysis.get(k)) if isinstance(analysis, dict) else (lambda k: getattr(analysis, k, None))
    source = get("source")
    op = Path(source["path"] if isinstance(source, dict) else source.path).resolve()
    capture = get("capture")
    cap_sources = (capture.get("sources") if isinstance(capture, dict) else getattr(capture, "sources", None)) or []
    tests = [Path(t) for t in (get("tests") or [])]
    missing = [f"{t} (a test stage A ran; it is gone)" for t in tests if not t.exists()]
    tests = [t.resolve() for t in tests if t.exists()]
    pkg = package_root(op)
    import_root = pkg[0] if pkg else op.parent
    root = project_root(op, [import_root, *tests])
    carry = Carry(root=root, import_root=str(import_root.relative_to(root)) or ".", module=pkg[1] if pkg else None,
                  op_file=str(op.relative_to(root)), missing=missing)

    def add(p: Path, part: str) -> None:
        rel = str(p.resolve().relative_to(root))
        carry.files.setdefault(rel, part)

    # the op's import root: its whole top package (or, for a lone module, the op and what it imports)
    if pkg:
        top = import_root / pkg[1].split(".")[0]
        total = 0
        for p in sorted(top.rglob("*")):
            rel = p.relative_to(root)
            if not p.is_file() or p.is_symlink() or _skip(rel):
                continue
            size = p.stat().st_size
            if p.suffix != ".py" and size > MAX_DATA_FILE_BYTES:
                carry.left_out.append(f"{rel} ({size >> 20} MiB, not Python)")
                continue
            total += size
            add(p, "package")
        if total > MAX_PACKAGE_BYTES:
            carry.missing.append(f"room: the package {top.name} is {total >> 20} MiB (over {MAX_PACKAGE_BYTES >> 20})")
    add(op, "op" if not pkg else "package")
    # sources: pytest files (directories expand to their test files), scripts, the op's __main__ block
    from tileport.analysis.testrun import kind_of

    for t in tests:
        if t.is_dir():
            files = [p for p in sorted(t.rglob("*.py")) if (p.name.startswith("test_") or p.name.endswith("_test.py"))
                     and not _skip(p.relative_to(t))]
            carry.sources.extend(Source("pytest", str(p.relative_to(root))) for p in files)
        elif kind_of(t) == "test":
            carry.sources.append(Source("pytest", str(t.relative_to(root))))
        else:
            carry.sources.append(Source("script", str(t.relative_to(root))))
    if any(str(s).endswith(" __main__") for s in cap_sources) or has_main_block(op):
        carry.sources.append(Source("main", carry.op_file))
    carry.sources = list(dict.fromkeys(carry.sources))
    # what the sources need: conftests, local helpers (transitively), pytest config at the root
    todo: list[Path] = []
    for s in carry.sources:
        p = root / s.path
        if s.kind == "main":
            todo.append(p)
            continue
        add(p, "tests")
        todo.append(p)
        for c in _conftests(p, root):
            add(c, "tests")
            todo.append(c)
    for name in PYTEST_CONFIGS:
        if (root / name).is_file():
            add(root / name, "config")
    seen: set[Path] = set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        # what pytest's default import mode and the project put on sys.path: the test's base dir, every conftest
        # directory up to the root (conftest dirs are prepended), the import root
        ups = [d for d in [p.parent, *p.parent.parents] if d == root or root in d.parents]
        search = [_pytest_base(p), import_root, *ups]
        found, miss = _local_imports(p, search, root)
        carry.missing.extend(miss)
        for f in found:
            rel = str(f.resolve().relative_to(root))
            if rel not in carry.files:
                add(f, "helpers")
            # a helper inside a package needs the package's __init__ files on the way up
            d = f.parent
            while (d / "__init__.py").is_file() and root in d.parents:
                add(d / "__init__.py", carry.files.get(str((d / "__init__.py").relative_to(root)), "helpers"))
                d = d.parent
            todo.append(f)
    carry.missing = list(dict.fromkeys(carry.missing))
    return carry


def copy_into(carry: Carry, dest: Path) -> None:
    """Copy the carried files under dest, at their paths relative to the project root."""
    import shutil

    for rel in carry.files:
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(carry.root / rel, out)


__all__ = ["Carry", "Source", "plan", "copy_into", "project_root", "has_sources", "has_main_block"]
