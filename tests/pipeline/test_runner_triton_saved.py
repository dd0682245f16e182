"""`--triton` is saved with the conversion: stage A pairs the op with that Triton twin on every run, also when it runs
again in another process (`tileport run --resume`, the dashboard's `r`), where nothing of the starting process is
left. Real stage A (analysis of a real cuTile op), real git, real store; the stages after A are the named fakes of
tests/fakes/stages.py (they stop nothing: each records a verdict in milliseconds)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.fakes.stages import FAKE_STAGES, op_repo
from tileport import service
from tileport.pipeline.stages import analyze
from tileport.config import Config
from tileport.errors import UserError
from tileport.store import queries

# a second process: a fresh runner on the same store reruns stage A (what `r` A in another dashboard does)
RERUN_A = """
import sys
from tests.fakes.stages import FAKE_STAGES
from tileport import service
from tileport.pipeline.stages import analyze
from tileport.config import Config
config = Config.model_validate({"caps": {"A": 2}})
runner = service.runner(config, repo=sys.argv[1], model="none", stages={**FAKE_STAGES, "A": analyze.run},
                        out=lambda line: None)
print(runner.rerun_stage(int(sys.argv[2]), "A").status)
"""


@pytest.fixture
def repo(tmp_path):
    """A repository with the cuTile rms_norm op as op.py, and its Triton twin where no name rule finds it."""
    repo = op_repo(tmp_path / "proj")
    shutil.copy(REPO / "examples" / "rms_norm.py", repo / "op.py")
    (repo / "twins").mkdir()
    shutil.copy(REPO / "examples" / "triton" / "rms_norm.py", repo / "twins" / "rms_norm_triton.py")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "rms_norm"], cwd=repo,
                   check=True)
    return repo


def _paired(repo, cid):
    """(how, the Triton twin) of each A run's reference choice, as recorded."""
    with service.open_store(Config(), repo) as s:
        refs = [r.details.reference for r in queries.stage_runs(s, cid, "A")]
    return [(ref.paired_by, ref.triton) if ref is not None else None for ref in refs]


def test_stage_a_pairs_with_the_saved_twin_in_the_process_that_started_it_and_in_another(repo):
    twin = repo / "twins" / "rms_norm_triton.py"
    config = Config.model_validate({"caps": {"A": 2}})  # room for the rerun below
    runner = service.runner(config, repo=repo, model="none", stages={**FAKE_STAGES, "A": analyze.run},
                            out=lambda line: None)
    (cid,) = service.start(runner, [repo / "op.py"], repo=repo, triton=twin)
    with service.open_store(Config(), repo) as s:
        assert s.conversion(cid)["triton"] == str(twin.resolve())
    assert runner.drive(cid).status == "done"
    r = subprocess.run([sys.executable, "-c", RERUN_A, str(repo), str(cid)], cwd=REPO, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]  # (the fakes after A then hit their caps: not the point here)
    assert _paired(repo, cid) == [("option", str(twin.resolve()))] * 2  # the rerun elsewhere paired the same way


def test_a_twin_that_is_no_triton_op_is_refused_before_the_conversion_exists(repo):
    runner = service.runner(Config(), repo=repo, model="none", stages=FAKE_STAGES, out=lambda line: None)
    with pytest.raises(UserError, match="no @triton.jit kernel"):
        service.start(runner, [repo / "op.py"], repo=repo, triton=repo / "op.py")
    assert not (repo / ".tileport" / "tileport.db").exists() or \
        not service.open_store(Config(), repo).conversions()
