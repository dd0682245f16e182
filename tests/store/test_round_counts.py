"""The attempt counters count what the router's caps count: from the newest B run that judged a person's edit
(`records.rounds.round_start`, the rule the runner's replay applies), not every run ever recorded; two writer B
attempts then a human edit's gates read B1/2, as the router sees them, not B3/2 at its cap."""

from __future__ import annotations

from tileport.pipeline.runner import ConversionRunner
from tileport.config import Config
from tileport.records import FailClass, Stage, StageResult
from tileport.store import Store, queries
from tileport.tui.view import conversion_rows


def seeded(path) -> int:
    s = Store(path)
    cid = s.add_conversion("/x/examples/op.py", "k", branch="tileport/op-1", worktree=None)
    s.record_stage(cid, StageResult(stage=Stage.ANALYZE, verdict="PASS", cap=1), routed_to="B")
    for _ in range(2):
        s.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, verdict="FAIL_COMPILE", fail_class=FailClass.KERNEL,
                                        cap=2, details={"writer": "scripted"}), routed_to="B")
    s.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, verdict="COMPILED", cap=2,
                                    details={"source": "human edit", "self_check": "PASS"}), routed_to="D",
                   commit="e" * 40)
    s.close()
    return cid


def test_counters_start_a_new_round_at_the_human_edit_as_the_router_does(tmp_path):
    cid = seeded(tmp_path / "t.db")
    s = Store(tmp_path / "t.db")
    summary = queries.conversion_summary(s, cid)
    state, action = ConversionRunner(Config(store=str(tmp_path / "t.db")))._replay(queries.stage_runs(s, cid))
    assert summary.attempts == dict(state.attempts) == {"B": 1}
    assert action.stage == "D" and summary.round_commit == "e" * 40  # the header: "retries since edit eeee…"
    assert summary.attempts_text(Config().caps.model_dump()) == {"B": "1/2"}  # `tileport status`
    assert conversion_rows(s, Config().caps.model_dump(), [cid])[0].attempts_text() == "B1/2"
    s.close()


def test_without_a_human_edit_every_run_counts(tmp_path):
    s = Store(tmp_path / "t.db")
    cid = s.add_conversion("/x/op.py", "k")
    for _ in range(2):
        s.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, verdict="FAIL_COMPILE", cap=2,
                                        details={"source": "gate ingest"}), routed_to="B")
    summary = queries.conversion_summary(s, cid)
    assert summary.attempts == {"B": 2} and summary.round_commit is None
    s.close()
