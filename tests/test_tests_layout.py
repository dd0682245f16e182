"""tests/ mirrors the package, so a newcomer finds the test of a module where the module is: the tests of
tileport/<a>/<b>/ live in tests/<a>/<b>/, those of top-level modules (config, service) in tests/. Beside them only
the shared support (conftest, fakes/, gitconv, hostile/, ir_kernels/), recorded data (data/) and whole-pipeline runs
(e2e/)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
PKG = TESTS.parent / "tileport"
SUPPORT = {"data", "fakes", "hostile", "ir_kernels", "e2e", "__pycache__", "__snapshots__"}


def test_every_test_directory_mirrors_a_package_directory():
    strays = []
    for d in sorted(p for p in TESTS.rglob("*") if p.is_dir()):
        rel = d.relative_to(TESTS)
        if rel.parts[0] in SUPPORT or "__snapshots__" in rel.parts or "__pycache__" in rel.parts:
            continue
        if not (PKG / rel).is_dir():
            strays.append(str(rel))
    assert not strays, f"test directories with no tileport/ package of that path: {strays}"


def test_test_files_live_in_a_mirrored_directory_and_have_unique_names():
    files = [p for p in TESTS.rglob("test_*.py") if not {"data", "__pycache__"} & set(p.relative_to(TESTS).parts)]
    names = [p.name for p in files]
    assert len(files) > 50 and len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    loose = [p.name for p in files if p.parent == TESTS and not (PKG / f"{p.stem[len('test_'):]}.py").is_file()
             and p.name not in {"test_layering.py", "test_tests_layout.py"}]
    assert not loose, f"tests at the top of tests/ for no top-level module (move them beside their package): {loose}"
