"""The code view and `e`, on a real git worktree: kernel.rs at HEAD beside the Python op with the entry <-> kernel
mapping from spec.json, the branch diff against its base, the diff between two B attempts; `e` opens the port's
real kernel.rs (not the build copy), is refused while a stage runs, and commits the edit as a human attempt."""

from __future__ import annotations

import json

import pytest
from gitconv import Conv, git

from tileport.config import Config
from tileport.store import Store
from tileport.tui import TileportApp

pytestmark = pytest.mark.asyncio

PY = "import cuda.tile as ct\n\n\n@ct.kernel\ndef my_kernel(x, y):\n    pass\n"
SPEC = {"module": "op", "entries": [{"name": "my_entry", "variants": [
    {"name": "f16", "reference": {"kernel": "my_kernel"}}, {"name": "f32", "reference": {"kernel": "my_kernel"}}]}]}


def _b_attempt(conv: Conv, body: str) -> str:
    port = conv.wt / "ports" / "op"
    port.mkdir(parents=True, exist_ok=True)
    (port / "kernel.rs").write_text(f"// cutile\n\npub fn my_entry() {{\n    {body}\n}}\n")
    (port / "spec.json").write_text(json.dumps(SPEC))
    sha = conv.stage_commit("B", path="ports/op/.tileport/runs/note.txt")
    conv.run("B", commit=sha)
    return sha


@pytest.fixture
def conv(tmp_path):
    db = tmp_path / "t.db"
    store = Store(db)
    c = Conv(tmp_path, store)
    (c.repo / "op.py").write_text(PY)
    store.update_conversion(c.cid, op_path=str(c.repo / "op.py"), status="failed")
    c.run("A")
    _b_attempt(c, "let a = 1;")
    _b_attempt(c, "let a = 2;")
    store.close()
    return c, db


async def _code(app, pilot, key):
    await pilot.press(key)
    await app.workers.wait_for_complete()
    await pilot.pause()
    head = str(app.screen.query_one("#code-head").content)
    left = app.screen.query_one("#code-left-text").content
    right = app.screen.query_one("#code-right-text").content
    return head, str(getattr(left, "code", left)), str(getattr(right, "code", right))


async def test_code_view_side_by_side_branch_diff_and_attempt_diff(conv):
    c, db = conv
    app = TileportApp(db, Config(), doctor=False, poll_interval=0.05)
    async with app.run_test(size=(160, 45)) as pilot:
        app.open_conversion(c.cid)
        await pilot.pause()
        head, left, right = await _code(app, pilot, "7")
        assert "my_entry (kernel.rs:3) <-> my_kernel (op.py:5)  variants f16, f32" in head
        assert "pub fn my_entry()" in left and "let a = 2;" in left
        assert "def my_kernel(x, y):" in right
        head, left, _ = await _code(app, pilot, "v")
        assert "branch diff vs base" in head and "+pub fn my_entry()" in left and "+    let a = 2;" in left
        head, left, _ = await _code(app, pilot, "v")
        assert "diff between attempts" in head and "B2" in head and "B1" in head
        assert "-    let a = 1;" in left and "+    let a = 2;" in left


async def test_e_refused_while_running_then_opens_the_port_file_and_commits_a_human_attempt(conv, monkeypatch):
    c, db = conv
    s = Store(db)
    s.update_conversion(c.cid, status="running")
    s.close()
    edited = c.wt / "ports" / "op" / "kernel.rs"
    monkeypatch.setenv("EDITOR", "sed -i $a//human")
    app = TileportApp(db, Config(), doctor=False, poll_interval=0.05)
    async with app.run_test(size=(160, 45)) as pilot:
        app.open_conversion(c.cid)
        await pilot.pause()
        assert app.screen.kernel_path() == edited
        await pilot.press("e")
        await pilot.pause()
        assert "is running a stage that may rewrite kernel.rs; stop it first" in [n.message for n in
                                                                                  app._notifications][-1]
        s = Store(db)
        s.update_conversion(c.cid, status="failed")
        s.close()
        old_head = c.head()
        # the editor hand-off itself needs a terminal (tests/tui/test_tui_tmux.py drives it); here the path after it
        edited.write_text(edited.read_text() + "//human\n")
        assert app.actions.edited(c.cid)
        sha = app.actions.commit_human_edit(c.cid)
        assert c.head() == sha != old_head
        assert "Tileport-Human: edit" in git(c.wt, "log", "-1", "--format=%B")
        assert "Tileport-Stage" not in git(c.wt, "log", "-1", "--format=%B")  # not a stage attempt for the router
        s = Store(db)
        assert s.conversion(c.cid)["head_commit"] == sha
        assert [e["kind"] for e in s.events(c.cid)][-1] == "human.edit"
        s.close()
