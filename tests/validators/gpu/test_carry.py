"""What a gate pack carries for the op's own tests, read from stage A's analysis: the op's package, the tests,
their conftest files and helpers (however they import them), the pytest config, a size report; a one-line refusal
naming anything missing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO
from tileport.validators.gpu.carry import copy_into, plan

TUNE = REPO / "corpora" / "tilekit" / "tune"
HELDOUT = REPO / "corpora" / "tilekit" / "heldout"


def analysis(op: Path, tests: list[Path], sources: list[str] | None = None) -> dict:
    return {"source": {"path": str(op)}, "tests": [str(t) for t in tests],
            "capture": {"sources": sources if sources is not None else [str(t) for t in tests]}}


def test_a_package_op_carries_its_package_tests_conftest_and_the_helpers_they_import(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(TUNE, proj)
    (proj / "pyproject.toml").write_text("[tool.pytest.ini_options]\naddopts = '-n 8'\n")
    op = proj / "tilekit" / "ops" / "scale_add.py"
    c = plan(analysis(op, [proj / "tests" / "ops" / "test_scale_add.py"]))
    assert c.root == proj.resolve() and c.module == "tilekit.ops.scale_add" and c.import_root == "."
    assert c.refusal() is None
    parts = c.files
    assert parts["tests/ops/test_scale_add.py"] == "tests" and parts["tests/conftest.py"] == "tests"
    assert parts["tests/helpers/compare.py"] == "helpers"  # `from helpers.compare import` (a conftest dir on sys.path)
    assert parts["tilekit/config.py"] == "package" and parts["tilekit/utils.py"] == "package"
    assert parts["pyproject.toml"] == "config"
    assert not any(p.startswith("tests/ops/test_rmsnorm") for p in parts)  # only the op's own tests travel
    assert [s.as_dict() for s in c.sources] == [{"kind": "pytest", "path": "tests/ops/test_scale_add.py"}]
    sizes = c.sizes()
    assert set(sizes) == {"package", "tests", "helpers", "config"} and all(v > 0 for v in sizes.values())
    assert "file(s)" in c.size_report() and "helpers" in c.size_report()
    copy_into(c, tmp_path / "out")
    assert (tmp_path / "out" / "tests" / "helpers" / "compare.py").read_text() == \
        (proj / "tests" / "helpers" / "compare.py").read_text()


def test_conftest_imports_and_helper_packages_travel_with_the_heldout_tests(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(HELDOUT, proj)
    (proj / ".git").mkdir()
    op = proj / "nanoops" / "ops" / "scaled_residual.py"
    c = plan(analysis(op, [proj / "tests" / "ops" / "test_scaled_residual.py"]))
    assert c.refusal() is None, c.refusal()
    assert {"tests/utils/tensors.py", "tests/utils/__init__.py", "tests/conftest.py",
            "nanoops/_common.py"} <= set(c.files)


def test_a_lone_module_with_a_main_block_carries_itself_and_runs_its_main(tmp_path):
    op = tmp_path / "01-vector-add.py"
    op.write_text("import helper_mod\nif __name__ == '__main__':\n    pass\n")
    (tmp_path / "helper_mod.py").write_text("X = 1\n")
    (tmp_path / ".git").mkdir()
    c = plan(analysis(op, [], sources=["01-vector-add.py __main__"]))
    assert c.module is None and c.op_file == "01-vector-add.py"
    assert [s.as_dict() for s in c.sources] == [{"kind": "main", "path": "01-vector-add.py"}]
    assert c.files == {"01-vector-add.py": "op", "helper_mod.py": "helpers"}


@pytest.mark.parametrize("what", ["gone", "relative"])
def test_anything_missing_is_one_line_naming_it(tmp_path, what):
    proj = tmp_path / "proj"
    shutil.copytree(TUNE, proj)
    op = proj / "tilekit" / "ops" / "scale_add.py"
    test = proj / "tests" / "ops" / "test_scale_add.py"
    if what == "gone":
        a = analysis(op, [test])
        test.unlink()
    else:
        (proj / "tests" / "ops" / "__init__.py").write_text("")
        test.write_text("from .shared_cases import CASES\n" + test.read_text())
        a = analysis(op, [test])
    line = plan(a).refusal()
    assert line is not None and "\n" not in line and line.startswith("cannot pack the op's tests: missing ")
    assert ("test_scale_add.py" in line and "gone" in line) if what == "gone" else ".shared_cases" in line


def test_no_tests_at_all_is_refused_with_the_way_to_give_them(tmp_path):
    op = TUNE / "tilekit" / "ops" / "scale_add.py"
    line = plan(analysis(op, [], sources=[])).refusal()
    assert "--tests PATH" in line
