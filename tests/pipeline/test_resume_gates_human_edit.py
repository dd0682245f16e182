"""A resume after a person's edit that no B run judged (committed with "commit only", or its gates stopped) runs
B's gates on HEAD first, then follows the router from that B run (D and E again, the caps counted afresh), and says
so; before this, resume read the old runs, said "done" and left B, D and E stale on the new HEAD.

The real runner, git worktree, commits and store; the named fakes are the stages (tests/fakes/stages.py) and the
gates' judge (tests/fakes/edit_judge.py), which needs no cargo build."""

from __future__ import annotations

import pytest

from tests.fakes.edit_judge import fake_edit_judge
from tests.fakes.stages import FAKE_STAGES, op_repo
from tileport import service
from tileport.config import Config
from tileport.errors import UserError
from tileport.exec.proc import Interrupted
from tileport.store import queries


def _done(tmp_path, judge=fake_edit_judge):
    """A conversion run to E DONE by the fake stages (A B D(FAIL) D E), then a person's edit of its port."""
    repo = op_repo(tmp_path / "proj")
    said: list[str] = []
    run = service.runner(Config(), repo=repo, model="none", stages=FAKE_STAGES, edit_judge=judge, out=said.append)
    cid = service.start(run, [repo / "op.py"], repo=repo)[0]
    assert run.resume(cid).status == "done"
    s = service.open_store(Config(), repo)
    port = s.conversion(cid)["worktree"] + "/ports/op"
    with open(f"{port}/edit.txt", "w") as f:
        f.write("COMPILED by hand\n")
    sha = service.commit_human_edit(s, cid)  # "commit only": no gates ran
    return run, cid, s, sha, said


def test_resume_after_commit_only_gates_the_edit_then_runs_d_and_e_on_it(tmp_path):
    run, cid, s, sha, said = _done(tmp_path)
    assert service.ungated_head(s, cid) == sha
    finished = service.resume(run, cid)
    assert finished.status == "done" and finished.exit_code == 0
    assert finished.gated is not None and (finished.gated.commit, finished.gated.verdict) == (sha, "COMPILED")
    assert finished.reason == f"B COMPILED on {sha[:10]} (human edit) -> D; E DONE"
    runs = queries.stage_runs(s, cid)
    assert [(r.stage, r.verdict) for r in runs][-3:] == [("B", "COMPILED"), ("D", "ALL_PASS"), ("E", "DONE")]
    assert runs[-3].commit == sha and runs[-3].details.source == "human edit"
    assert service.ungated_head(s, cid) is None  # a second resume has nothing to gate
    assert any(f"HEAD {sha[:10]} is a human edit no B run judged" in line for line in said)
    again = service.resume(run, cid)
    assert (again.status, again.gated) == ("done", None)
    assert len(queries.stage_runs(s, cid)) == len(runs)
    s.close()


def test_resume_after_stopped_gates_runs_them_again(tmp_path):
    calls = []

    def stopped_once(ctx, source, runs_dir=None):  # the first gates run is killed by a stop (x / tileport stop)
        calls.append(ctx.attempt)
        if len(calls) == 1:
            raise Interrupted("stop requested")
        return fake_edit_judge(ctx, source, runs_dir)

    run, cid, s, sha, _ = _done(tmp_path, judge=stopped_once)
    runs_before = len(queries.stage_runs(s, cid))
    with pytest.raises(UserError, match="were stopped"):
        service.judge_edit(run, cid)
    assert s.conversion(cid)["status"] == "stopped" and len(queries.stage_runs(s, cid)) == runs_before
    finished = service.resume(run, cid)
    assert calls == [2, 2]  # the same B attempt number, run again
    assert finished.status == "done" and finished.gated.commit == sha
    assert [r.stage for r in queries.stage_runs(s, cid)][runs_before:] == ["B", "D", "E"]
    s.close()


def test_resume_with_an_uncommitted_edit_on_an_ungated_head_refuses_and_keeps_it(tmp_path):
    run, cid, s, sha, _ = _done(tmp_path)
    kernel = s.conversion(cid)["worktree"] + "/ports/op/kernel.rs"
    with open(kernel, "w") as f:
        f.write("// a second edit, not committed\n")
    with pytest.raises(UserError, match="not committed; commit the edit first"):
        service.resume(run, cid)
    assert open(kernel).read() == "// a second edit, not committed\n"
    s.close()
