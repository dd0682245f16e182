"""`e` then `y` in the dashboard (Textual pilot, real git, real cargo against the cutile crates): $EDITOR (a real
program, sed) edits the port's kernel.rs; the prompt after it commits the edit and runs stage B's gates on it,
shown while they run as a running B row with its elapsed time and the build's live output, then recorded as a B run
on the new HEAD in the timeline (PASS-class: it still compiles and its Tile IR still matches the reference), and
the merge line names only D and E as what the edit made stale."""

from __future__ import annotations

import asyncio
import shutil
import time

import humanconv
import pytest
from gitconv import git

from tileport.config import Config
from tileport.records import details_of
from tileport.store import Store, queries
from tileport.tui import TileportApp

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

if shutil.which("cargo") is None:
    pytest.skip("cargo is not installed", allow_module_level=True)


def _rows(table) -> list[list[str]]:
    return [[str(c) for c in table.get_row(k)] for k in table.rows]


@pytest.fixture
def edit(tmp_path, monkeypatch):
    """(conversion, store path, dashboard) with $EDITOR a sed that makes the good edit."""
    db = tmp_path / "t.db"
    c = humanconv.make(tmp_path, db)
    old, new = humanconv.GOOD
    monkeypatch.setenv("EDITOR", f"sed -i 's|{old}|{new}|'")
    yield c, db, TileportApp(db, Config(), doctor=False, poll_interval=0.05)
    c.store.close()


async def _press_e(app, pilot, c) -> None:
    app.open_conversion(c.cid)
    await pilot.pause()
    assert len(app.screen.query_one("#timeline-table").rows) == 4  # A B D E
    await pilot.press("e")
    await pilot.pause()
    assert humanconv.GOOD[1] in humanconv.kernel_rs(c).read_text()  # the editor ran on the port's real kernel.rs


async def test_e_y_commits_the_edit_runs_b_live_and_records_it_on_the_new_head(edit):
    c, db, app = edit
    async with app.run_test(size=(160, 45)) as pilot:
        await _press_e(app, pilot, c)
        assert app.screen.__class__.__name__ == "ReasonScreen"
        await pilot.press("y", "enter")
        seen_running, live_lines, deadline = None, [], time.monotonic() + 300
        while time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            screen = app.screen
            if screen.__class__.__name__ != "ConversionScreen":
                continue
            t = screen.query_one("#timeline-table")
            if "running" in [k.value for k in t.rows]:
                seen_running = [str(x) for x in t.get_row("running")]
                live_lines = [str(line.text) for line in screen.query_one("#live").lines] or live_lines
            # the B run is recorded (its row replaced the running one) and the dashboard's drive of it has ended:
            # that end comes after the run's last store event, and the merge line must follow it on its own
            if len(t.rows) == 5 and "running" not in [k.value for k in t.rows] and not app.actions.running(c.cid):
                await pilot.pause()
                if "is running" not in str(screen.query_one("#why-not").render()):
                    break
        await pilot.pause()
        rows = _rows(app.screen.query_one("#timeline-table"))
        why_not = str(app.screen.query_one("#why-not").render())
    assert seen_running is not None, "no running B row while the gates ran"
    assert seen_running[1].startswith("B") and seen_running[3] == "RUNNING" and seen_running[5].endswith("s")
    # the build's own output (cargo's lines name this worktree's crate) or tileport's progress lines; the view keeps
    # the newest 64 KB, so which of them is still on screen depends on how fast cargo printed
    assert any(f"{c.wt}/.tileport-build/crate" in line or line.startswith("[tileport] ") for line in live_lines), \
        [x[:100] for x in live_lines[-5:]]

    s = Store(db)
    head = c.head()
    run = queries.stage_runs(s, c.cid, "B")[-1]
    assert (run.verdict, run.commit, run.routed_to) == ("COMPILED", head, "D")
    d = details_of("B", run.raw_details)
    assert d.source == "human edit" and d.self_check in ("PASS", "PASS_WITH_NOTES") and d.pairs == 3
    assert s.conversion(c.cid)["status"] == "pending"  # D and E must run again on it: a resume (s) does
    s.close()
    assert rows[-1][1].startswith("B") and rows[-1][3] == "COMPILED" and rows[-1][9] == head[:10]
    assert f"human edit {head[:10]}" in rows[-1][10]
    assert "gate D stale" in why_not and "gate E stale" in why_not and "a human edit of the port" in why_not
    assert "gate A" not in why_not and "gate B" not in why_not


async def test_commit_only_then_e_unchanged_offers_the_gates_missing_on_head(edit, monkeypatch):
    c, db, app = edit
    async with app.run_test(size=(160, 45)) as pilot:
        await _press_e(app, pilot, c)
        await pilot.press("c", "enter")  # commit only: no gates
        for _ in range(100):
            await asyncio.sleep(0.05)
            if "committed your edit" in " ".join(n.message for n in app._notifications):
                break
        sha = c.head()
        assert "Tileport-Human: edit" in git(c.wt, "log", "-1", "--format=%B")
        monkeypatch.setenv("EDITOR", "true")  # opens and closes without a change
        await pilot.press("e")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "ReasonScreen"
        assert f"HEAD {sha[:10]} of #{c.cid} has no B run" in str(app.screen.query_one("Static").render())
        await pilot.press("n", "enter")
        await pilot.pause()
    s = Store(db)
    assert all(r.commit != sha for r in queries.stage_runs(s, c.cid, "B"))  # "n": nothing ran
    assert not [e for e in s.events(c.cid) if e["kind"] == "stage.started" and (e["payload"] or {}).get("source")]
    s.close()
