"""A whole library: find its op files, analyse each with its own tests (`tileport analyze DIR`, `tileport run DIR`).

An op file is a module that defines kernels: `@ct.kernel` (also made inside a factory) or `@triton.jit`. Tests
(`tests/`, `test/`, `test_*.py`, `*_test.py`, `conftest.py`) and helper modules are not ops: a helper that launches a
kernel of another module (a wrapper, an autograd.Function, an nn.Module, a launch helper) is reached through the
tests of the module that defines the kernel, which `testfind.discover` finds by name and by import. A kernel-only
module is still an op: it is analysed through the tests (or benchmark scripts) that launch it. Files of the
repository's own tooling (virtual environments, build and cache directories, hidden directories) are not looked at.

Reading is by the syntax tree only: nothing is imported here.
"""

from __future__ import annotations

import ast
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tileport import limits
from tileport.errors import UserError
from tileport.analysis.testfind import SKIP_PARTS, TEST_DIRS

MAX_FILES = 5000
SKIP_DIRS = SKIP_PARTS | {"site-packages", ".mypy_cache", ".pytest_cache", ".ruff_cache", "out", ".tileport"}


@dataclass
class LibraryFile:
    path: Path
    kind: str  # "cutile" / "triton": an op; "wrapper": launches kernels of other modules; "helper": neither
    kernels: list[str] = field(default_factory=list)
    launches: bool = False
    note: str = ""


@dataclass
class Library:
    root: Path
    ops: list[LibraryFile]
    skipped: list[LibraryFile]  # wrappers and helpers that launch: reached through the ops' tests

    @property
    def kernel_only(self) -> list[LibraryFile]:
        return [o for o in self.ops if not o.launches]


def _decorator_name(d: ast.expr) -> str:
    target = d.func if isinstance(d, ast.Call) else d
    parts = []
    while isinstance(target, ast.Attribute):
        parts.insert(0, target.attr)
        target = target.value
    if isinstance(target, ast.Name):
        parts.insert(0, target.id)
    return ".".join(parts)


def _imports(tree: ast.Module) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def classify(path: Path) -> LibraryFile | None:
    """What the file is to the library (None: not Python source tileport can read)."""
    try:
        data = limits.read_bytes(path, "a library module", limits.SOURCE_BYTES)
        tree = ast.parse(data.decode("utf-8-sig"), filename=str(path))
    except (UserError, SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
        return None
    imports = _imports(tree)
    cutile = any(m == "cuda.tile" or m.startswith("cuda.tile.") for m in imports)
    triton = any(m == "triton" or m.startswith("triton.") for m in imports)
    kernels: list[str] = []
    kind = "helper"
    launches = False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                name = _decorator_name(d)
                if cutile and (name.endswith("ct.kernel") or name in ("kernel", "cuda.tile.kernel")
                               or name.endswith(".kernel") and name.split(".")[0] in ("ct", "cuda", "tile")):
                    kernels.append(node.name)
                    kind = "cutile"
                elif triton and name in ("triton.jit", "jit", "triton.autotune", "autotune") and kind != "cutile":
                    kernels.append(node.name)
                    kind = "triton"
        elif isinstance(node, ast.Call):
            fn = _decorator_name(node)
            if fn.endswith("launch") or fn.endswith("exhaustive_search"):
                launches = True
            if triton and isinstance(node.func, ast.Subscript):  # kernel[grid](...)
                launches = True
    if kind == "helper" and launches:
        kind = "wrapper"
    return LibraryFile(path=path, kind=kind, kernels=list(dict.fromkeys(kernels)), launches=launches)


def _is_test(rel: Path) -> bool:
    return bool(set(rel.parts[:-1]) & set(TEST_DIRS)) or rel.name.startswith("test_") or \
        rel.name.endswith("_test.py") or rel.name == "conftest.py"


def find_library(root: str | Path) -> Library:
    """Every op file under `root` (see the module doc); a one-line error when there is none."""
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{root}: not a directory; pass a library's directory (tileport analyze DIR) or an op file")
    ops: list[LibraryFile] = []
    skipped: list[LibraryFile] = []
    n = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            p = Path(dirpath) / name
            rel = p.relative_to(root)
            if _is_test(rel) or p.is_symlink():
                continue
            n += 1
            if n > MAX_FILES:
                raise UserError(f"{root}: more than {MAX_FILES} Python files; pass the library's package directory")
            f = classify(p)
            if f is None:
                continue
            if f.kind in ("cutile", "triton"):
                ops.append(f)
            elif f.kind == "wrapper":
                f.note = "launches kernels of other modules: reached through their tests"
                skipped.append(f)
    if not ops:
        raise UserError(f"{root}: no op files (no module defines a @ct.kernel or @triton.jit kernel); pass the "
                        "directory of a cuTile Python or Triton library")
    return Library(root=root, ops=ops, skipped=skipped)


@dataclass
class OpResult:
    path: Path
    kind: str
    analysis: object | None  # schema.Analysis
    error: str | None
    seconds: float
    tests: list[str] = field(default_factory=list)

    @property
    def analysed(self) -> bool:
        return self.analysis is not None and not getattr(self.analysis, "unresolved", [])


def out_name(root: Path, path: Path) -> str:
    """The op's output directory name under the library's out root: its path inside the library, dotted."""
    rel = path.relative_to(root).with_suffix("")
    return ".".join(rel.parts)


def analyze_library(lib: Library, *, out_root: Path, jobs: int = 1, on_done: Callable[[OpResult], None] | None = None,
                    **kwargs) -> list[OpResult]:
    """Analyse every op of the library into `<out_root>/<dotted path>/`, `jobs` at a time (each op in its own
    process, forked from the warm server unless `warm=False`); one op's failure does not stop the rest. kwargs go
    to `analyze_op` (targets, config, python, run_tileiras, tests, discover_tests, warm)."""
    kwargs.setdefault("warm", True)  # cuda-tile and torch imported once, not once per op (about 2 s each)
    def one(f: LibraryFile) -> OpResult:
        t0 = time.perf_counter()
        out = out_root / out_name(lib.root, f.path)
        try:
            if f.kind == "triton":
                from tileport.analysis.triton.pipeline import analyze_triton_op

                a = analyze_triton_op(f.path, out_dir=out, config=kwargs.get("config"), python=kwargs.get("python"))
                tests: list[str] = []
            else:
                a = _analyze(f.path, out, kwargs)
                tests = list(a.tests)
            r = OpResult(f.path, f.kind, a, None, time.perf_counter() - t0, tests)
        except UserError as e:  # EnvironmentBlocked included: a one-line reason per op
            r = OpResult(f.path, f.kind, None, " ".join(str(e).split()), time.perf_counter() - t0)
        except Exception as e:  # a tileport bug on this op: said on its line, the other ops still analysed
            r = OpResult(f.path, f.kind, None, f"tileport failed on it: {type(e).__name__}: "
                         f"{' '.join(str(e).split())[:200]} (a tileport bug; please report it with the op)",
                         time.perf_counter() - t0)
        if on_done is not None:
            on_done(r)
        return r

    def _analyze(path: Path, out: Path, kw: dict):
        from tileport.analysis.pipeline import analyze_op

        return analyze_op(path, out_dir=out, **kw)

    if jobs <= 1:
        return [one(f) for f in lib.ops]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, lib.ops))


__all__ = ["Library", "LibraryFile", "OpResult", "analyze_library", "classify", "find_library", "out_name"]
