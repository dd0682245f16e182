"""A human decision through `Store.deciding`: its approval row and the conversion's new status in one transaction,
read back typed (records.ApprovalRecord), and old rows read leniently."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tileport.records import Decision, GateStatus
from tileport.store import Store, queries

OLD_STORE = Path(__file__).resolve().parents[1] / "data" / "stores" / "v3-main.db"
GATE = {"name": "A", "status": "satisfied", "required": ["PASS"], "verdict": "PASS", "head": "c" * 40}


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "tileport.db")
    yield s
    s.close()


def test_a_decision_and_its_status_commit_together_typed(store):
    cid = store.add_conversion("/r/op.py")
    with store.deciding(cid, "c" * 40, "ana", "reject", "wrong tile size", gate_snapshot={"gates": [GATE]},
                        status="rejected") as rec:
        assert rec.id and rec.decision is Decision.REJECT and rec.reason == "wrong tile size"
    [got] = queries.approvals(store, cid)
    assert got == rec and got.gates[0].status is GateStatus.SATISFIED
    assert store.conversion(cid)["status"] == "rejected"


def test_a_failure_inside_the_decision_keeps_neither_row_nor_status(store):
    """The git note is written inside the block: when it fails, no approval row and no status change remain."""
    cid = store.add_conversion("/r/op.py")
    with pytest.raises(RuntimeError, match="git notes failed"):
        with store.deciding(cid, "c" * 40, "ana", "reject", "no", status="rejected"):
            raise RuntimeError("git notes failed")
    assert queries.approvals(store, cid) == [] and store.approvals(cid) == []
    assert store.conversion(cid)["status"] == "pending"
    assert [e["kind"] for e in store.events(cid)] == ["conversion.created"]


def test_an_old_rows_gate_snapshot_list_reads_as_a_decision(tmp_path):
    """v3 stores kept the snapshot as a bare list (here a gate that no longer validates): read, not a crash."""
    p = tmp_path / "old.db"
    shutil.copy(OLD_STORE, p)
    s = Store(p)
    try:
        [a] = queries.approvals(s, 1)
        assert (a.decision, a.approver, a.comment, a.gates, a.overrides) == (Decision.APPROVE, "alice", "fine", [], [])
    finally:
        s.close()
