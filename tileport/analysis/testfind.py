"""Which of the op's own tests and scripts stage A runs: `--tests`, `[analysis] tests`, and those it finds.

Found: `test_<op>.py` (and `<op>_test.py`) under the nearest `tests/` or `test/` directory above the op that has one
(looking no higher than its project root: the first ancestor with a `pyproject.toml`, `setup.py`, `setup.cfg` or
`.git`). A path
that does not exist is a one-line error naming it.
"""

from __future__ import annotations

from pathlib import Path

from tileport.errors import UserError

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
TEST_DIRS = ("tests", "test")
SKIP_PARTS = {".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist", ".tox"}
MAX_UP = 6
MAX_FOUND = 20


def search_roots(op: Path) -> list[Path]:
    """The op's directory and its ancestors, nearest first, up to the project root (a directory with a
    pyproject.toml, setup.py, setup.cfg or .git) or MAX_UP levels."""
    out = []
    for cand in [op.resolve().parent, *op.resolve().parents[1:]][:MAX_UP]:
        out.append(cand)
        if any((cand / m).exists() for m in PROJECT_MARKERS):
            break
    return out


def discover(op: Path) -> list[Path]:
    """The op's tests: test_<op>.py (or <op>_test.py) in the nearest `tests/` (or `test/`) tree above it that has
    one, then the test files of the project that import the op's module, or a module of its package that imports it
    (an autograd.Function or nn.Module wrapper over a kernel-only module), also through a package `__init__` that
    re-exports the wrapper's names."""
    names = {f"test_{op.stem}.py", f"{op.stem}_test.py"}
    found: list[Path] = []
    roots = search_roots(op)
    for root in roots:
        for p in _test_files(root):
            if p.name in names:
                found.append(p)
        if found:
            break
    dotted, top = dotted_name(op)
    project = top if "." in dotted else roots[-1]  # the directory holding the op's top package
    found.extend(p for p in importing_tests(op, project) if p not in found)
    if not found:  # no test reaches it: the project's scripts that import it (benchmarks) launch it
        found.extend(importing_tests(op, project, dirs=SCRIPT_DIRS, scripts=True))
    return found[:MAX_FOUND]


SCRIPT_DIRS = ("benchmarks", "benchmark", "bench", "perf", "scripts", "examples")


def _test_files(root: Path, dirs: tuple[str, ...] = TEST_DIRS, scripts: bool = False) -> list[Path]:
    out = []
    for tdir in dirs:
        base = root / tdir
        if base.is_dir():
            out.extend(p for p in sorted(base.rglob("*.py"))
                       if not SKIP_PARTS & set(p.relative_to(root).parts)
                       and (scripts and p.name != "__init__.py"
                            or p.name.startswith("test_") or p.name.endswith("_test.py")))
    return out


def dotted_name(path: Path) -> tuple[str, Path]:
    """(the module's dotted name, the directory its top package sits in) — the stem alone outside a package."""
    path = path.resolve()
    parts = [path.stem] if path.name != "__init__.py" else []
    d = path.parent
    while (d / "__init__.py").is_file() and d.name.isidentifier():
        parts.insert(0, d.name)
        d = d.parent
    return ".".join(parts), d


def _imports(path: Path, dotted: str) -> tuple[set[str], dict[str, str]]:
    """(modules and `module.name`s the file imports, name -> module it takes that name from)."""
    import ast

    try:
        tree = ast.parse(path.read_text(encoding="utf-8-sig", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return set(), {}
    pkg = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
    mods: set[str] = set()
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".") if pkg else []
                up = up[: len(up) - (node.level - 1)] if node.level > 1 else up
                base = ".".join([*up, *([base] if base else [])])
            mods.add(base)
            for a in node.names:
                mods.add(f"{base}.{a.name}")
                names[a.asname or a.name] = base
    return mods, names


def importing_tests(op: Path, project: Path, limit: int = 2000, dirs: tuple[str, ...] = TEST_DIRS,
                    scripts: bool = False) -> list[Path]:
    """Test files under the project's test trees (`scripts`: any script under `dirs`) that reach the op's module by
    import (see `discover`)."""
    dotted, top = dotted_name(op)
    if "." not in dotted:
        targets = {dotted}
        exports: dict[str, dict[str, str]] = {}
    else:
        pkg_dir = top / dotted.split(".")[0]
        modules: dict[str, tuple[set[str], dict[str, str]]] = {}
        for i, p in enumerate(sorted(pkg_dir.rglob("*.py"))):
            if i >= limit or SKIP_PARTS & set(p.relative_to(top).parts):
                break
            name, _ = dotted_name(p)
            modules[name] = _imports(p, name)
        targets = {dotted}
        for _ in range(2):  # wrappers of the op, and wrappers of those
            targets |= {m for m, (imps, _) in modules.items()
                        if not m.endswith("__init__") and m != dotted.split(".")[0] and imps & targets
                        and (modules_is_module(m, modules))}
        exports = {m: names for m, (_, names) in modules.items()}
    out = []
    for p in _test_files(project, dirs, scripts):
        if p.resolve() == op.resolve():
            continue
        imps, names = _imports(p, "")
        if imps & targets or any(f"{m}.{n}" in targets or exports.get(m, {}).get(n) in targets
                                 for n, m in names.items()):
            out.append(p)
    return out


def modules_is_module(name: str, modules: dict) -> bool:
    """A plain module (its package `__init__`s re-export; they are matched through their exports instead)."""
    return not any(other.startswith(name + ".") for other in modules)


def resolve(op: Path, given: list[str], configured: list[str], find: bool) -> list[Path]:
    """The sources to run, in order, without duplicates: given (--tests), then configured, then found."""
    out: list[Path] = []
    for origin, items in (("--tests", given), ("[analysis] tests in tileport.toml", configured)):
        for item in items:
            p = Path(item).expanduser()
            if not p.exists():
                raise UserError(f"{item}: no such test file or directory (from {origin}); pass a pytest file or "
                                "directory, or a script that launches the op")
            if p.is_file() and p.suffix != ".py":
                raise UserError(f"{item}: not a Python file (from {origin}); pass a pytest file or directory, or a "
                                ".py script that launches the op")
            out.append(p.resolve())
    if find:
        out.extend(p.resolve() for p in discover(op))
    return list(dict.fromkeys(out))


__all__ = ["discover", "resolve", "search_roots"]


def with_tests(config, tests: list[str] | None):
    """The config with `tests` (e.g. `tileport run --tests`) added to `[analysis] tests`, as absolute paths (stage A
    may run in a conversion's worktree); each must exist."""
    if not tests:
        return config
    for t in tests:
        if not Path(t).expanduser().exists():
            raise UserError(f"--tests {t}: no such test file or directory; pass a pytest file or directory, or a "
                            "script that launches the op")
    paths = [*config.analysis.tests, *(str(Path(t).expanduser().resolve()) for t in tests)]
    return config.model_copy(update={"analysis": config.analysis.model_copy(update={"tests": paths})})
