"""The service's rules, which the CLI and the dashboard share: one store path, one exit code, start-or-reuse."""

from __future__ import annotations

import argparse
import json

import git
import pytest

from tests.conftest import REPO, run_cli
from tests.fakes.stages import FAKE_STAGES, op_repo
from tileport import service
from tileport.pipeline.runner import Finished
from tileport.config import Config


@pytest.fixture
def repo(tmp_path):
    return op_repo(tmp_path / "proj")


def test_run_repo_and_tui_repo_open_the_same_store_from_anywhere(repo, tmp_path, monkeypatch):
    """The bug: `run` took the store relative to the working directory, `tui --repo` relative to the repo."""
    from tileport.cli import tui

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    runner = service.runner(Config(), repo=repo, model="none", stages=FAKE_STAGES, out=lambda line: None)
    cid = service.start(runner, [repo / "op.py"], repo=repo)[0]
    assert not (elsewhere / ".tileport").exists()  # nothing written where the user happened to stand
    tui_store = tui.store_path(argparse.Namespace(repo=str(repo), store=None), Config())
    assert str(tui_store) == runner.config.store and str(tui_store).startswith(str(repo))
    r = run_cli("status", "--repo", str(repo), "--json", cwd=elsewhere, env={"PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr
    assert [c["id"] for c in json.loads(r.stdout)] == [cid]
    # --store still wins, as given
    assert tui.store_path(argparse.Namespace(repo=str(repo), store="x.db"), Config()) == elsewhere / "x.db"


@pytest.mark.parametrize("statuses, code", [
    (["done"], 0), (["done", "blocked"], 3), (["blocked", "failed"], 1), (["failed", "blocked"], 1),
    (["error"], 1), (["stopped", "done"], 1), ([], 0)])
def test_one_exit_code_rule_for_run_and_the_headless_dashboard(statuses, code):
    """The bug: `run` preferred 1 over 3 while the headless dashboard took the max (3 over 1)."""
    assert service.exit_code([Finished(i, s) for i, s in enumerate(statuses)]) == code


def test_start_or_reuse_picks_up_the_existing_conversion(repo):
    runner = service.runner(Config(), repo=repo, model="none", stages=FAKE_STAGES, out=lambda line: None)
    first = service.start_or_reuse(runner, [repo / "op.py"], repo=repo)
    again = service.start_or_reuse(runner, [repo / "op.py"], repo=repo)
    assert first == again == [1]
