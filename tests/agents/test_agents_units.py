"""Fast checks of the pipeline's parts: versioned prompts, the worktree guard, commits with trailers, exit codes."""

from __future__ import annotations

from importlib import resources

import git
import pytest

from tileport.agents.loop import load_prompt
from tileport.errors import UserError
from tileport.records import CommandRecord
from tileport.worktrees import git as wgit
from tileport.worktrees.git import check_branchable
from tileport.worktrees.conversion import (WorktreeEscape, check_commands_inside, commit_stage,
                                           create_conversion_worktree, stage_commits)


@pytest.fixture
def repo(tmp_path):
    r = git.Repo.init(tmp_path / "r", initial_branch="main")
    (tmp_path / "r" / "op.py").write_text("x = 1\n")
    r.index.add(["op.py"])
    r.index.commit("init", author=git.Actor("t", "t@t"), committer=git.Actor("t", "t@t"))
    return tmp_path / "r"


def test_every_prompt_file_is_versioned():
    names = [p.name[:-3] for p in resources.files("tileport.agents.prompts").iterdir() if p.name.endswith(".md")]
    assert {"kernel_writer", "translation_diagnoser", "perf_diagnoser"} <= set(names)
    for n in names:
        p = load_prompt(n)
        assert p.version >= 1 and p.label == f"{n}@v{p.version}" and "<!--" not in p.text


def test_stage_commits_carry_trailers_and_are_read_back(repo):
    wt = create_conversion_worktree(repo, "op", 5)
    assert wt.branch == "tileport/op-5" and wt.path.is_relative_to(repo / ".tileport" / "worktrees")
    (wt.path / "ports").mkdir()
    (wt.path / "ports" / "k.rs").write_text("fn main() {}\n")
    sha = commit_stage(wt, stage="B", verdict="FAIL_COMPILE", attempt=1, op="op", summary="E0308",
                       paths=["ports"])
    sha2 = commit_stage(wt, stage="B", verdict="COMPILED", attempt=2, op="op", paths=["ports"])  # nothing changed
    msg = git.Repo(wt.path).commit(sha).message
    for t in ("Tileport-Stage: B", "Tileport-Verdict: FAIL_COMPILE", "Tileport-Attempt: 1", "Tileport-Conversion: 5"):
        assert t in msg
    assert [(c["sha"], c["stage"], c["attempt"]) for c in stage_commits(wt)] == [(sha, "B", 1), (sha2, "B", 2)]
    parent = git.Repo(repo)
    assert parent.active_branch.name == "main" and not parent.is_dirty(untracked_files=True)
    # the stages' build outputs in the worktree are not a person's uncommitted work
    crate = wt.path / ".tileport-build" / "crate-gate"
    crate.mkdir(parents=True)
    (crate / "gate.json").write_text("{}")
    assert not git.Repo(wt.path).is_dirty(untracked_files=True)


def test_a_command_outside_the_worktree_is_caught(repo):
    wt = create_conversion_worktree(repo, "op", 1)
    inside = CommandRecord(argv=["cargo", "build"], cwd=str(wt.path / "crate"), exit_code=0, seconds=1)
    check_commands_inside(wt, [inside])
    for cwd in (str(repo), None, str(wt.path / ".." / "op-2")):
        with pytest.raises(WorktreeEscape):
            check_commands_inside(wt, [CommandRecord(argv=["git", "commit"], cwd=cwd, exit_code=0, seconds=0)])


def test_the_parent_snapshot_sees_git_run_in_the_parent_checkout(repo):
    r = git.Repo(repo)
    before = wgit.snapshot(r)
    r.git.status()  # reading is harmless
    assert wgit.snapshot(r) == before
    (repo / "op.py").write_text("x = 2\n")
    r.git.commit("-am", "moved", author="t <t@t>")
    assert wgit.snapshot(r).head != before.head
    r.git.checkout("-q", "-b", "elsewhere")
    assert wgit.snapshot(r).branch != before.branch


def test_the_parent_snapshot_sees_a_tracked_file_written_in_the_parent_checkout(repo):
    """An op's script run in the user's checkout once overwrote a results file the user keeps in git, and the
    snapshot (HEAD and branch only) let it through."""
    (repo / "results").mkdir()
    (repo / "results" / "b200.csv").write_text("the user's numbers\n")
    r = git.Repo(repo)
    r.git.add("-A")
    r.git.commit("-m", "results", author="t <t@t>")
    before = wgit.snapshot(r)
    (repo / "results" / "b200.csv").write_text("numbers from a CPU run\n")
    assert before.moved(wgit.snapshot(r)) == "tracked files changed: results/b200.csv"
    with pytest.raises(UserError, match=r"uncommitted changes \(results/b200.csv\)"):
        check_branchable(repo)


def test_an_existing_branch_is_refused(repo):
    git.Repo(repo).git.branch("tileport/op-1")
    with pytest.raises(UserError, match="already exists"):
        create_conversion_worktree(repo, "op", 1)


