"""`service.why_not`: the one place the dashboard's refusals come from, and the same words `tileport merge --check`
prints, on a real conversion (real git worktree and store, the named fake stages of tests/fakes/stages.py)."""

from __future__ import annotations

import pytest

from tests.conftest import REPO, run_cli
from tests.fakes.stages import FAKE_STAGES, op_repo
from tileport import service
from tileport.config import Config


@pytest.fixture
def done(tmp_path):
    """(repo, conversion id, config) of a conversion the fake stages drove to its end."""
    repo = op_repo(tmp_path / "proj")
    runner = service.runner(Config(), repo=repo, model="none", stages=FAKE_STAGES, out=lambda line: None)
    (cid,) = service.start(runner, [repo / "op.py"], repo=repo)
    assert runner.drive(cid).status == "done"
    return repo, cid, runner.config


def test_the_dashboard_refuses_a_merge_with_the_words_of_tileport_merge(done):
    repo, cid, config = done
    with service.open_store(config) as store:
        reason = service.why_not(store, config, "merge", cid)
    assert reason and "approv" in reason  # done, but nobody approved its HEAD
    r = run_cli("merge", str(cid), "--check", cwd=repo, env={"PYTHONPATH": str(REPO)})
    assert r.returncode == 1 and f"merge #{cid} refused: {reason}" in r.stderr, (reason, r.stderr)


def test_each_refusal_is_one_line_saying_why(done):
    repo, cid, config = done
    with service.open_store(config) as store:
        def why(action, c=cid, **kw):
            return service.why_not(store, config, action, c, **kw)
        assert why("resume") == f"conversion {cid} is done; rerun a stage (r) to change it"
        assert why("rerun") is None and why("reject") is None and why("start") is None
        assert why("rerun", running_here=True) == f"conversion {cid} is running; stop it first (x)"
        assert why("approve", running_here=True) == f"conversion {cid} is running; decide once it stops on a commit"
        assert why("rerun", closing=True) == "the dashboard is quitting"
        assert why("stop") == f"conversion {cid} is not running (status done)"
        assert all(why(a, readonly=True) == service.READONLY for a in service.WRITES)
        assert why("resume", 99) == "no conversion 99; `tileport status` lists them"
        assert why("resume", None) == "select a conversion first"
