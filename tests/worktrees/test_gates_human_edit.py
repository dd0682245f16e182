"""The merge gates after a person's edit, on a real git branch: the edit committed by the dashboard's path
(`service.commit_human_edit`: `Tileport-Human`, the port's files only) leaves A standing and makes B, D and E stale,
named as a human edit; a hand commit that carries the trailer but touches the op or the port's evidence is not a
port edit and makes every gate stale."""

from __future__ import annotations

import pytest
from gitconv import Conv, git

from tileport import service
from tileport.config import Config
from tileport.errors import UserError
from tileport.records import GateStatus
from tileport.store import Store
from tileport.worktrees.approval import check_approval
from tileport.worktrees.gates import evaluate_gates


@pytest.fixture
def conv(tmp_path):
    store = Store(tmp_path / "t.db")
    c = Conv(tmp_path, store)
    c.run("A")
    c.run("B", commit=c.stage_commit("B", path="ports/op/kernel.rs"))
    c.run("D")
    c.run("E")
    yield c
    store.close()


def gates(c: Conv) -> dict:
    return {g.name: g for g in evaluate_gates(c.store, c.repo, c.cid, c.head(), base=c.base)}


def test_all_pass_before_the_edit(conv):
    assert {n: g.status for n, g in gates(conv).items()} == dict.fromkeys("ABDE", GateStatus.SATISFIED)


def test_a_human_edit_leaves_a_standing_and_makes_b_d_e_stale_naming_it(conv):
    (conv.wt / "ports" / "op" / "kernel.rs").write_text("// edited by a person\n")
    (conv.wt / "ports" / "op" / ".tileport").mkdir()
    (conv.wt / "ports" / "op" / ".tileport" / "leftover.txt").write_text("not the person's\n")
    assert service.edited_files(conv.store, conv.cid) == ["ports/op/kernel.rs"]  # the evidence dir is not theirs
    sha = service.commit_human_edit(conv.store, conv.cid)
    assert git(conv.wt, "show", "--name-only", "--format=", sha).split() == ["ports/op/kernel.rs"]
    g = gates(conv)
    assert g["A"].status is GateStatus.SATISFIED
    for name in "BDE":
        assert g[name].status is GateStatus.STALE
        assert f"a human edit of the port committed {sha[:10]} since" in g[name].reason
    refused = check_approval(conv.store, Config(), conv.cid)
    assert refused is not None and not any("gate A" in r for r in refused.refusals)
    assert [r.split()[1] for r in refused.refusals] == ["B", "D", "E"]


@pytest.mark.parametrize("path", ["op.py", "ports/op/.tileport/reference/analysis.json"])
def test_a_trailer_on_a_commit_beyond_the_port_is_no_port_edit(conv, path):
    f = conv.wt / path
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("changed by hand\n")
    git(conv.wt, "add", "-A")
    git(conv.wt, "commit", "-q", "-m", "hand", "--trailer", "Tileport-Human: edit",
        "--trailer", f"Tileport-Conversion: {conv.cid}")
    g = gates(conv)
    assert all(g[n].status is GateStatus.STALE for n in "ABDE")
    assert "is not a tileport stage commit of this conversion" in g["A"].reason


def test_nothing_to_commit_is_one_line(conv):
    with pytest.raises(UserError, match="has no uncommitted change to commit"):
        service.commit_human_edit(conv.store, conv.cid)
