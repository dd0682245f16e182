"""Quitting with "leave it running" while B's gates on a person's edit run hands the gates off: the detached
process (`python -m tileport.tui._background ... ID:gates`, the real child) runs them and records a B run on the
edit's commit (here judged FAIL_FIXABLE at once: the port has no reference analysis, so no cargo build runs)."""

from __future__ import annotations

import os

from gitconv import Conv

from tileport import service
from tileport.config import Config
from tileport.records import details_of
from tileport.store import Store, queries
from tileport.tui._background import JUDGE_EDIT, spawn


def test_a_handed_off_gates_run_is_recorded_on_the_edit_by_the_background_process(tmp_path):
    db = tmp_path / "t.db"
    store = Store(db)
    c = Conv(tmp_path, store)
    c.run("A")
    c.run("B", commit=c.stage_commit("B", path="ports/op/kernel.rs"))
    (c.wt / "ports" / "op" / "kernel.rs").write_text("// a person's kernel\n")
    sha = service.commit_human_edit(store, c.cid)
    handoff = spawn(Config(store=str(db)), None, [c.cid], tmp_path / "bg", forced={c.cid: JUDGE_EDIT})
    _, status = os.waitpid(handoff.pid, 0)  # the detached child is still ours to wait for
    assert os.waitstatus_to_exitcode(status) == 1  # a gate failed
    log = handoff.log.read_text()
    assert f"#{c.cid}: PENDING (B FAIL_FIXABLE on {sha[:10]} (human edit) -> C)" in log, log
    run = queries.stage_runs(store, c.cid, "B")[-1]
    assert (run.verdict, run.commit) == ("FAIL_FIXABLE", sha)
    assert details_of("B", run.raw_details).source == "human edit" and "no reference analysis" in run.summary
    store.close()
