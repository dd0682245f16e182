"""Stages read the runs before them as typed store rows: what stage B tells the writer to fix comes from the
diagnoser's typed next edit and the previous B attempt's typed feedback items, read back from a real store."""

from __future__ import annotations

from pathlib import Path

import pytest

from tileport.pipeline.context import Limits, StageContext
from tileport.pipeline.stages.write_kernel import _feedback, _hints
from tileport.config import Config
from tileport.records import FailClass, Stage, StageResult
from tileport.store import Store, queries

ITEM = {"kind": "diagnostic", "where": "src/kernel.rs:8:18", "code": "E0425", "message": "error: no `BUG`"}


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "tileport.db")
    yield s
    s.close()


def _ctx(store: Store, cid: int) -> StageContext:
    return StageContext(cid, "op", Path("op.py"), None, None, None, Config(), None, None, Limits(),
                        history=queries.stage_runs(store, cid))


def _b(store: Store, cid: int, items: list) -> None:
    store.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, verdict="FAIL_COMPILE", fail_class=FailClass.KERNEL,
                                        details={"feedback": "error[E0425]", "feedback_items": items},
                                        summary="1 error"))


def test_after_a_diagnosis_the_writer_gets_its_next_edit_then_the_last_b_items(store):
    cid = store.add_conversion("/r/op.py")
    _b(store, cid, [ITEM, {"kind": "nonsense", "message": 1}])  # the second item is damaged: dropped, not fatal
    store.record_stage(cid, StageResult(stage=Stage.DIAGNOSE_TRANSLATION, verdict="FAIL_FIXABLE",
                                        fail_class=FailClass.KERNEL,
                                        details={"owner": "kernel", "next_edit": "define BUG as 0",
                                                 "evidence": "kernel.rs:8"}))
    text, items = _feedback(_ctx(store, cid))
    assert text == "[diagnoser] stage C: define BUG as 0\nkernel.rs:8"
    assert [(i.kind, i.code) for i in items] == [("diagnoser", ""), ("diagnostic", "E0425")]


def test_after_a_failed_build_the_writer_gets_its_feedback_and_items(store):
    cid = store.add_conversion("/r/op.py")
    _b(store, cid, [ITEM])
    text, items = _feedback(_ctx(store, cid))
    assert text == "error[E0425]" and [i.where for i in items] == ["src/kernel.rs:8:18"]
    assert _hints(_ctx(store, cid)) == []  # hints come from stage F only


def test_stage_f_hints_reach_the_writer_typed(store):
    cid = store.add_conversion("/r/op.py")
    hint = {"kernel": "k_entry", "arch": "sm_90", "occupancy": 4}
    store.record_stage(cid, StageResult(stage=Stage.DIAGNOSE_PERFORMANCE, verdict="FAIL_FIXABLE",
                                        fail_class=FailClass.KERNEL,
                                        details={"owner": "kernel", "next_edit": "occupancy 4", "hints": [hint]}))
    assert _hints(_ctx(store, cid)) == [hint]
    assert _feedback(_ctx(store, cid))[0] == "[diagnoser] stage F: occupancy 4"


def _c_after(store: Store, cid: int, tmp_path: Path, **b_details) -> StageResult:
    from tileport.pipeline.context import ConversionPaths
    from tileport.pipeline.stages import diagnose
    from tileport.agents.writers import DraftWriter

    store.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, verdict="FAIL_FIXABLE", fail_class=FailClass.KERNEL,
                                        details=b_details, summary="IR self-check FAIL_FIXABLE"))
    ctx = _ctx(store, cid)
    ctx.paths, ctx.writer = ConversionPaths(tmp_path, "op"), DraftWriter()
    return diagnose.run(ctx)


def test_stage_c_reads_the_failed_b_run_typed(store, tmp_path):
    """C names the owner the failed run's class says and the first finding of B's feedback as the next edit."""
    cid = store.add_conversion("/r/op.py")
    c = _c_after(store, cid, tmp_path, feedback="note: fine\nERROR memory.padding: port pads with 0, reference NaN",
                 categories=["memory"])
    assert (c.verdict, c.typed.owner) == ("FAIL_FIXABLE", "kernel")
    assert c.typed.next_edit.endswith("ERROR memory.padding: port pads with 0, reference NaN")


def test_stage_c_after_a_b_with_no_writer_is_blocked_with_its_reason(store, tmp_path):
    cid = store.add_conversion("/r/op.py")
    c = _c_after(store, cid, tmp_path, no_writer=True)
    assert (c.verdict, c.fail_class, c.summary) == ("BLOCKED", FailClass.ENV, "IR self-check FAIL_FIXABLE")
