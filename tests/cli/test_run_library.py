"""`tileport run DIR`: every op file of a library converted (real stages: A, a real cargo build at B, D BLOCKED(env)
without a GPU), then one summary row per op read back from the store, as `--json`. The library has an op module, a
kernel-only module whose test launches it through a wrapper, the wrapper and a test tree: only the two kernel
modules are converted."""

from __future__ import annotations

import json

import git
import pytest

from tests.conftest import REPO, run_cli

VECTOR_ADD = REPO / "examples" / "vector_add.py"
ENV = {"PYTHONPATH": str(REPO)}


@pytest.fixture(autouse=True)
def _no_gpu():
    from tileport.config import Config
    from tileport.validators.gpu import preflight

    if not preflight.missing(Config()):
        pytest.skip("a GPU is here: D is not BLOCKED(env)")


@pytest.mark.slow
def test_run_a_library_directory_converts_its_op_files_and_prints_the_summary(tmp_path):
    project = tmp_path / "proj"
    pkg = project / "mylib"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "vector_add.py").write_text(VECTOR_ADD.read_text())
    (pkg / "helpers.py").write_text("import cuda.tile as ct\n\n\ndef launch(k, grid, *args):\n"
                                    "    ct.launch(None, grid, k, args)\n")
    (project / "tests").mkdir()
    (project / "tests" / "test_vector_add.py").write_text("def test_nothing():\n    pass\n")
    (project / "tileport.toml").write_text('targets = ["sm_90"]\n')
    g = git.Repo.init(project, initial_branch="main")
    g.git.add(A=True)
    g.index.commit("init", author=git.Actor("t", "t@t"), committer=git.Actor("t", "t@t"))
    run = run_cli("run", "mylib", "--json", "--repo", str(project), "--model", "none", cwd=project, env=ENV,
                  timeout=900)
    doc = json.loads(run.stdout)
    rows = {r["op"]: r for r in doc["ops"]}
    assert list(rows) == ["vector_add.py"], run.stderr  # helpers.py launches but defines no kernel
    r = rows["vector_add.py"]
    assert r["analysed"] == "yes" and r["compiled"] == "COMPILED" and r["conversion"] is not None
    assert r["gates"] == {"A": True, "B": True, "D": False, "E": False}
    assert doc["totals"]["compiled"] == 1 and run.returncode == 3, run.stderr[-2000:]
    # the draft state and configurations come from the analysis the conversion committed (they read "-" and
    # "0 complete drafts" before, although B compiled the complete draft)
    assert r["draft"] == "complete" and doc["totals"]["complete_drafts"] == 1
    assert isinstance(r["configurations"], int)
