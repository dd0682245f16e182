"""`s` on a conversion whose HEAD is a person's edit committed without B's gates ("commit only" after `e`): the
dashboard resumes it although it read "done", B's gates run on the edit first, D and E follow, and the
notification says what ran (the gates on which commit, then where the route ended); the attempt counters then
count the new round (B1/2, D1/2, E1/2), not every run ever recorded.

Textual pilot, the real runner, git and store; the named fakes are the stages and the gates' judge (no cargo)."""

from __future__ import annotations

import pytest

from tests.fakes.edit_judge import fake_edit_judge
from tests.fakes.stages import FAKE_STAGES, op_repo
from tileport import service
from tileport.config import Config
from tileport.tui import TileportApp

pytestmark = pytest.mark.asyncio


async def test_s_after_commit_only_gates_the_edit_and_says_so(tmp_path):
    repo = op_repo(tmp_path / "proj")
    run = service.runner(Config(), repo=repo, model="none", stages=FAKE_STAGES, edit_judge=fake_edit_judge, out=lambda _l: None)
    cid = service.start(run, [repo / "op.py"], repo=repo)[0]
    assert run.resume(cid).status == "done"
    s = service.open_store(Config(), repo)
    with open(s.conversion(cid)["worktree"] + "/ports/op/kernel.rs", "w") as f:
        f.write("// edited by hand\n")
    sha = service.commit_human_edit(s, cid)  # what `e` then `c` (commit only) does
    db = service.store_path(Config(), repo)
    app = TileportApp(db, Config(), doctor=False, poll_interval=0.05, model="none")
    app.actions._runner = run
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        table = app.screen.query_one("#conversions")
        assert "D2/2" in str(table.get_row_at(0)[7])
        await pilot.press("s")
        said = []
        for _ in range(200):
            await pilot.pause(0.05)
            said = [n.message for n in app._notifications if n.message.startswith(f"resume #{cid}")]
            if said:
                break
        assert said == [f"resume #{cid}: DONE (B COMPILED on {sha[:10]} (human edit) -> D; E DONE)"]
        for _ in range(40):
            await pilot.pause(0.05)
            if str(table.get_row_at(0)[7]) == "B1/2 D1/2 E1/2":
                break
        assert str(table.get_row_at(0)[7]) == "B1/2 D1/2 E1/2"
        app.open_conversion(cid)
        await pilot.pause()
        screen = next(sc for sc in app.screen_stack if sc.__class__.__name__ == "ConversionScreen")  # under the
        counters = screen.query_one("#conv-counters").render()  # end-of-run summary, when it opened on top
        assert str(counters).startswith(f"retries since edit {sha[:10]}: ")
        assert "B write kernel 1/2" in str(counters) and "D host+correctness 1/2" in str(counters)
        assert not [sp for sp in counters.spans if "red" in str(sp.style) and "B" in str(counters)[sp.start:sp.end]]
    assert service.ungated_head(s, cid) is None
    s.close()
