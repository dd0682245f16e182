"""`tileport run` and the dashboard's entry point (`tileport` alone, headless without a terminal) end with the one
exit-code rule (`service.exit_code`) for the same outcomes: real child processes, the real vector_add op (A, a
real cargo build at B, D BLOCKED(env) without a GPU) and an op with no kernel (A fails twice: FAILED).

The bug this guards: `run` preferred 1 over 3 while the headless dashboard took the maximum (3 over 1)."""

from __future__ import annotations

import git
import pytest

from tests.conftest import REPO, run_cli

VECTOR_ADD = REPO / "examples" / "vector_add.py"
NO_KERNEL = "import cuda.tile as ct\n\n\ndef not_a_kernel(x):\n    return x\n"
CONFIG = 'targets = ["sm_90"]\n'
ENV = {"PYTHONPATH": str(REPO)}


def _ops(d, names):
    d.mkdir(parents=True)
    for name in names:
        (d / name).write_text(VECTOR_ADD.read_text() if name == "vector_add.py" else NO_KERNEL)


@pytest.fixture(autouse=True)
def _no_gpu():
    from tileport.config import Config
    from tileport.validators.gpu import preflight

    if not preflight.missing(Config()):
        pytest.skip("a GPU is here: D is not BLOCKED(env)")


@pytest.mark.slow
@pytest.mark.parametrize("names, code", [(["vector_add.py"], 3), (["vector_add.py", "no_kernel.py"], 1)],
                         ids=["blocked", "blocked-and-failed"])
def test_run_and_the_headless_dashboard_exit_the_same(tmp_path, names, code):
    project = tmp_path / "proj"
    _ops(project, names)
    (project / "tileport.toml").write_text(CONFIG)
    g = git.Repo.init(project, initial_branch="main")
    g.index.add([*names, "tileport.toml"])
    g.index.commit("init", author=git.Actor("t", "t@t"), committer=git.Actor("t", "t@t"))
    run = run_cli("run", *names, "--repo", str(project), "--model", "none", cwd=project, env=ENV, timeout=600)
    assert ": BLOCKED (D BLOCKED: the environment must be fixed first)" in run.stdout, run.stdout + run.stderr

    here = tmp_path / "here"  # the dashboard converts ./examples in a scratch repository under ./.tileport
    _ops(here / "examples", names)
    (here / "tileport.toml").write_text(CONFIG)
    dash = run_cli(cwd=here, env=ENV, timeout=600)
    assert "no terminal for the dashboard" in dash.stdout, dash.stdout + dash.stderr
    assert ": blocked (D BLOCKED: the environment must be fixed first)" in dash.stdout, dash.stdout + dash.stderr

    assert (run.returncode, dash.returncode) == (code, code), run.stdout + dash.stdout
