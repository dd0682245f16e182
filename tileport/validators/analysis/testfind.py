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
    """The nearest `tests/` (or `test/`) tree above the op that has a test_<op>.py: its matching files."""
    names = {f"test_{op.stem}.py", f"{op.stem}_test.py"}
    for root in search_roots(op):
        found: list[Path] = []
        for tdir in TEST_DIRS:
            base = root / tdir
            if not base.is_dir():
                continue
            for p in sorted(base.rglob("*.py")):
                if p.name in names and not SKIP_PARTS & set(p.relative_to(root).parts):
                    found.append(p)
        if found:
            return found[:MAX_FOUND]
    return []


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
