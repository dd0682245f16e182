"""Every table's cut text opens whole in the detail pane; the model transcript of a stage run; per-run commands and
artifacts; tabs drawn when shown. Real store, real Textual pilot."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App
from textual.screen import Screen
from textual.widgets import DataTable

import tileport.tui
from tileport.agents.loop import Transcript, TranscriptEntry
from tileport.agents.transcripts import keep_transcript
from tileport.config import Config
from tileport.records import ArtifactRecord, CommandRecord, FailClass, Stage, StageResult, TokenUsage
from tileport.store import Store
from tileport.tui import TileportApp
from tileport.tui._detail import RowDetails

from pilotwait import settle

pytestmark = pytest.mark.asyncio

LONG_OP = "a_very_long_operator_name_that_the_list_cuts"


class _Paths:
    def __init__(self, root):
        self.runs = root / "runs"


def _transcript(tag: str) -> Transcript:
    return Transcript(prompt="kernel_writer@v3", max_model_len=32768, messages=[
        {"role": "system", "content": f"You port cuTile Python kernels to cuTile Rust ({tag})."},
        {"role": "user", "content": "Port softmax_kernel."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "write_kernel", "arguments": '{"source": "fn softmax_entry() {\\n    let x = 1;\\n}"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "error[E0308]: mismatched types"}],
        calls=[TranscriptEntry(kind="tool_call", n_messages=2, usage=TokenUsage(prompt_tokens=900,
                                                                                 completion_tokens=40),
                               requests=1, seconds=2.5, finish_reason="tool_calls")])


def seed(tmp_path):
    """One conversion: A, two B attempts (each with its commands, artifacts and transcript), then D and E."""
    db = tmp_path / "t.db"
    s = Store(db)
    cid = s.add_conversion(f"/x/examples/{LONG_OP}.py", "softmax_kernel", branch=f"tileport/{LONG_OP}-1",
                           worktree=str(tmp_path / "wt"))
    s.record_stage(cid, StageResult(stage=Stage.ANALYZE, verdict="PASS", cap=1), routed_to="B")
    for attempt in (1, 2):
        root = tmp_path / f"b{attempt}"
        kept = keep_transcript(_Paths(root), f"B-{attempt}", _transcript(f"attempt {attempt}"))
        ir = root / "out" / f"softmax_port_attempt_{attempt}.tileir.txt"
        ir.parent.mkdir(parents=True)
        ir.write_text("module {}\n")
        s.record_stage(cid, StageResult(
            stage=Stage.WRITE_KERNEL, attempt=attempt, verdict="FAIL_COMPILE" if attempt == 1 else "COMPILED", cap=2,
            fail_class=FailClass.KERNEL if attempt == 1 else None,
            commands=[CommandRecord(argv=["/usr/bin/prlimit", "--cpu=600", "--", "cargo", "build", "--offline",
                                          f"--attempt-{attempt}"], exit_code=0, seconds=3.0)],
            artifacts=[*kept, ArtifactRecord.of("tileir_text", ir)]), routed_to="D")
    s.record_stage(cid, StageResult(stage=Stage.HOST_CORRECTNESS, verdict="BLOCKED", fail_class=FailClass.ENV, cap=2,
                                    commands=[CommandRecord(argv=["python", "-m", "gate"], exit_code=3, seconds=1)],
                                    summary="no GPU"))
    s.close()
    return db, cid


def app_for(db):
    return TileportApp(db, Config(), doctor=False, poll_interval=0.05)


async def _keys(pilot, *keys) -> None:
    await pilot.press(*keys)
    await settle(pilot.app, pilot)


async def _open(app, pilot, cid, row: int | None = None):
    """The conversion's screen, with the timeline's `row` picked; its timeline table."""
    app.open_conversion(cid)
    await settle(app, pilot)
    t = app.screen.query_one("#timeline-table")
    if row is not None:
        t.move_cursor(row=row)
        await settle(app, pilot)
    return t


async def _detail(app, pilot, *keys) -> str:
    await _keys(pilot, *keys)
    assert app.screen.__class__.__name__ == "DetailScreen", app.screen
    text = app.screen.text
    await pilot.press("escape")
    await settle(app, pilot)
    return text


async def test_space_on_the_list_shows_the_whole_row_and_enter_still_opens_the_conversion(tmp_path):
    db, cid = seed(tmp_path)
    app = app_for(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.screen.query_one("#conversions")
        assert str(table.get_row_at(0)[1]) != LONG_OP  # the list cuts it
        text = await _detail(app, pilot, "space")
        assert f"/x/examples/{LONG_OP}.py" in text and f"tileport/{LONG_OP}-1" in text
        assert "B 2/2" in text and "no GPU" in text  # attempts and the newest run's summary
        assert "details" in [k.description for k in app.screen.query("FooterKey")]  # the footer offers it
        await _keys(pilot, "enter")
        assert app.screen.__class__.__name__ == "ConversionScreen"


async def test_enter_on_commands_artifacts_and_perf_rows_shows_their_whole_text(tmp_path):
    db, cid = seed(tmp_path)
    s = Store(db)
    rid = s.record_stage(cid, StageResult(stage=Stage.PERFORMANCE, verdict="INVESTIGATE", cap=2,
                                          details={"geomean": 1.08}))
    shape = "[m=4096, n=4096, k=" + "8192" * 12 + "] f16"
    s.db["perf_rows"].insert_all([{"stage_run_id": rid, "config": shape, "ref_ms": 0.01, "port_ms": 0.011,
                                   "ratio": 1.1, "ref_samples": "[0.0101, 0.0099, 0.0102]",
                                   "port_samples": "[0.0111, 0.0109]"}])
    s.close()
    app = app_for(db)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open(app, pilot, cid, row=2)  # B attempt 2, after D and E ran
        await _keys(pilot, "2")
        text = await _detail(app, pilot, "enter")
        assert text.startswith("$ cargo build --offline --attempt-2") and "prlimit" in text  # the tool's own argv
        await _keys(pilot, "3")
        arts = app.screen.query_one("#artifacts-table")
        assert [str(arts.get_row_at(i)[0]) for i in range(arts.row_count)] == ["transcript", "tileir_text"]
        arts.move_cursor(row=1)
        path = str(arts.get_row_at(1)[3])
        assert path.endswith("softmax_port_attempt_2.tileir.txt") and len(path) > arts.size.width  # cut on screen
        text = await _detail(app, pilot, "enter")
        assert text.splitlines()[-1] == path  # the whole path
        await _keys(pilot, "6")
        text = await _detail(app, pilot, "enter")
        assert shape in text  # the configuration's whole text, brackets and all
        assert "ref samples (ms, 3): 0.0101, 0.0099, 0.0102" in text and "port samples (ms, 2)" in text
        assert "launch:" in text and "no launch attributes recorded" in text


async def test_right_and_left_scroll_the_table_and_stay_on_the_tab(tmp_path):
    db, cid = seed(tmp_path)
    app = app_for(db)
    async with app.run_test(size=(60, 30)) as pilot:
        table = await _open(app, pilot, cid)
        await _keys(pilot, "right", "right")
        assert table.scroll_x > 0 and app.screen.query_one("TabbedContent").active == "timeline"
        await _keys(pilot, "left", "left")
        assert table.scroll_x == 0


async def test_the_transcript_tab_shows_the_picked_runs_model_conversation(tmp_path):
    db, cid = seed(tmp_path)
    app = app_for(db)
    async with app.run_test(size=(120, 40)) as pilot:
        t = await _open(app, pilot, cid, row=1)  # B attempt 1
        await _keys(pilot, "8")
        head = str(app.screen.query_one("#transcript-of").render())
        assert "model transcript of B write kernel attempt 1 (FAIL_COMPILE): 4 messages, 1 model calls" in head
        log = app.screen.query_one("#transcript-log")
        text = "\n".join(line.text for line in log.lines)
        assert "(attempt 1)" in text and "(attempt 2)" not in text
        assert "→ write_kernel" in text and "error[E0308]: mismatched types" in text
        assert "\nfn softmax_entry() {\n    let x = 1;\n}" in text  # the tool call's arguments, decoded
        assert "900 in + 40 out tokens" in text
        assert log.max_scroll_y > 0 or log.virtual_size.height <= log.size.height
        await _keys(pilot, "1")
        t.move_cursor(row=2)  # B attempt 2: its own transcript
        await _keys(pilot, "8")
        assert "(attempt 2)" in "\n".join(line.text for line in log.lines)
        await _keys(pilot, "1")
        t.move_cursor(row=0)  # A asks no model
        await _keys(pilot, "8")
        assert "asked no model" in "\n".join(line.text for line in log.lines)


async def test_a_tab_off_screen_shows_what_the_store_says_when_switched_to(tmp_path):
    db, cid = seed(tmp_path)
    app = app_for(db)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open(app, pilot, cid)
        await _keys(pilot, "2")
        assert "python -m gate" in str(app.screen.query_one("#commands-table").get_row_at(0)[3])
        await _keys(pilot, "1")
        s = Store(db)  # another process records a new run while the timeline is on screen
        s.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, attempt=3, verdict="COMPILED", cap=3,
                                        commands=[CommandRecord(argv=["cargo", "build", "--third"], exit_code=0,
                                                                seconds=2)]), routed_to="D")
        s.close()
        for _ in range(40):
            await pilot.pause(0.05)
            if app.screen.query_one("#timeline-table").row_count == 5:
                break
        await _keys(pilot, "2")
        assert "cargo build --third" in str(app.screen.query_one("#commands-table").get_row_at(0)[3])
        assert "of B write kernel attempt 3 (COMPILED)" in str(app.screen.query_one("#commands-of").render())


class _Plain(RowDetails, Screen):
    def compose(self):
        yield DataTable(id="plain")

    def on_mount(self):
        t = self.query_one(DataTable)
        t.add_column("name", width=6)
        t.add_column("value", width=8)
        t.add_row("first", "x" * 200)
        t.focus()


async def test_a_table_with_nothing_more_to_say_shows_every_column_whole():
    class _App(App):
        CSS_PATH = Path(tileport.tui.__file__).parent / "tileport.tcss"

        def on_mount(self):
            self.push_screen(_Plain())

    app = _App()
    async with app.run_test(size=(80, 24)) as pilot:
        await _keys(pilot, "enter")
        assert app.screen.__class__.__name__ == "DetailScreen"
        assert app.screen.text == " name  first\nvalue  " + "x" * 200


async def test_help_scrolls_to_its_last_line_at_45_rows(tmp_path):
    db, _ = seed(tmp_path)
    app = app_for(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await _keys(pilot, "question_mark")
        box = app.screen.query_one("#help-box")
        assert box.max_scroll_y > 0 and box.region.bottom <= 45  # taller than the screen: it scrolls
        await _keys(pilot, "end")
        assert box.scroll_y == box.max_scroll_y


async def test_the_log_tab_reads_the_events_when_shown_and_appends_each_new_one_once(tmp_path):
    db, cid = seed(tmp_path)
    app = app_for(db)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open(app, pilot, cid)
        s = Store(db)
        s.log_event("log", cid, text="before the log tab was shown")
        await pilot.pause(0.3)
        await _keys(pilot, "4")
        log = app.screen.query_one("#conv-log")
        s.log_event("log", cid, text="after the log tab was shown")
        s.close()
        for _ in range(40):
            await pilot.pause(0.05)
            lines = [line.text for line in log.lines]
            if any("after the log tab" in x for x in lines):
                break
        assert sum("stage.finished" in x for x in lines) == 4  # A, B1, B2 and D, each once
        assert sum("before the log tab was shown" in x for x in lines) == 1
        assert sum("after the log tab was shown" in x for x in lines) == 1
