"""What a person reads while B runs and when the run ends: cargo's output as cargo prints it (not its JSON
records), the running step named even when the view opens on a long output, a stopped tool named by its own
argv (not the sandbox wrapper), and an end-of-run summary whose first lines say what to do next."""

from __future__ import annotations

import json
import threading
import time

import pytest

from test_tui import app_for, seed_blocked
from tileport.store import Store
from tileport.exec.proc import Interrupted, ToolScope, run_command, tool_scope
from tileport.tui.view import LiveTail
from tileport.validators.rust.diagnostics import live_line

# cargo build --message-format=json records as cargo 1.9x writes them (shortened paths)
FRESH = json.dumps({"reason": "compiler-artifact", "package_id": "registry+https://github.com/rust-lang/crates.io-index"
                    "#linkme@0.3.37", "fresh": True, "filenames": ["/t/liblinkme.rlib"]}, separators=(",", ":"))
SCRIPT = json.dumps({"reason": "build-script-executed", "package_id": "registry+x#serde@1.0.229",
                     "linked_libs": []}, separators=(",", ":"))
ERROR = json.dumps({"reason": "compiler-message", "package_id": "path+file:///c#tileport-port@0.1.0", "message": {
    "rendered": "error[E0308]: mismatched types\n --> src/kernel.rs:12:9\n   |\n12 |     x\n   |     ^ expected `f32`\n",
    "level": "error"}}, separators=(",", ":"))
DONE = json.dumps({"reason": "build-finished", "success": False}, separators=(",", ":"))


def test_live_view_shows_cargo_as_cargo_prints_it_and_names_the_step_when_opened_late(tmp_path):
    live = tmp_path / "conv.live"
    lines = ["[tileport] stage B attempt 1/2 started", "[tileport] $ cargo build --message-format=json --locked -j 2",
             *[FRESH] * 400, SCRIPT, "   Compiling tileport-port-1 v0.1.0 (/c)", ERROR, DONE]
    live.write_text("\n".join(lines) + "\n")
    tail = LiveTail(live)
    fresh, shown = tail.read_new(limit=4000)  # opened late: the start of the file is not read
    assert fresh
    assert tail.now == "$ cargo build --message-format=json --locked -j 2"  # still says what runs
    text = "\n".join(shown)
    assert "compiler-artifact" not in text and "build-script-executed" not in text and '{"reason"' not in text
    assert "   Compiling tileport-port-1 v0.1.0 (/c)" in shown
    assert "error[E0308]: mismatched types" in shown and " --> src/kernel.rs:12:9" in shown
    assert shown[-1] == "cargo: build failed"
    live.write_text(live.read_text() + "[tileport] #1 op B: IR dump (4 job(s))\n"
                    'TILEPORT-JOB {"entry":"k_f16","variant":"f16__T-64","target":"sm_90","seconds":5.88,"ok":true}\n')
    _, more = tail.read_new()
    assert more == ["[tileport] #1 op B: IR dump (4 job(s))", "IR dump k_f16 f16__T-64 sm_90: ok in 5.9 s"]
    assert tail.now == "#1 op B: IR dump (4 job(s))"
    assert live_line("plain tool text {not json}") == "plain tool text {not json}"
    assert live_line('{"reason": broken') == '{"reason": broken'


def test_a_stopped_sandboxed_tool_is_named_by_its_own_argv_not_the_wrapper(tmp_path):
    # the argv run_sandboxed runs: the pids-cgroup `sh -c`, prlimit, then the tool
    argv = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(tmp_path / "cgroup.procs"),
            "prlimit", "--cpu=60", "--", "sleep", "30"]
    scope = ToolScope()
    threading.Timer(0.5, scope.cancel).start()
    t0 = time.monotonic()
    with tool_scope(scope), pytest.raises(Interrupted) as e:
        run_command(argv, timeout=60)
    assert time.monotonic() - t0 < 10
    assert str(e.value).startswith("`sleep 30` killed by a stop request after "), str(e.value)


@pytest.mark.asyncio
async def test_the_summary_says_the_next_step_first_and_each_blocked_conversion_in_one_clause(tmp_path):
    db = tmp_path / "t.db"
    seed_blocked(db)
    app = app_for(db)
    app.gpu_detail = "no NVIDIA driver or GPU"
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("u")
        await pilot.pause()
        text = app.summary_text
        lines = text.splitlines()
        step = next(i for i, line in enumerate(lines) if line.startswith("next step:"))
        person = next(i for i, line in enumerate(lines) if line.startswith("needs a person"))
        assert step < person  # what to do comes before the list, visible at 80x24 without scrolling
        assert "rerun stage D (r, then D)" in text and "resume (s)" not in text
        assert "`tileport gpu pack 1` (likewise 2)" in text  # every blocked one needs its gate, not only #1
        assert "  #1 softmax: BLOCKED at D: no NVIDIA GPU: torch.cuda.is_available() is False" in lines


@pytest.mark.asyncio
async def test_the_code_view_opens_at_the_entry_and_its_kernel_in_a_small_terminal(tmp_path):
    from gitconv import Conv

    from tileport.config import Config
    from tileport.store import Store
    from tileport.tui import TileportApp

    db = tmp_path / "t.db"
    store = Store(db)
    c = Conv(tmp_path, store)
    pad = "".join(f"# {i}\n" for i in range(40))
    (c.repo / "op.py").write_text(f"import cuda.tile as ct\n{pad}\n@ct.kernel\ndef my_kernel(x, y):\n    pass\n")
    store.update_conversion(c.cid, op_path=str(c.repo / "op.py"), status="failed")
    c.run("A")
    port = c.wt / "ports" / "op"
    port.mkdir(parents=True)
    (port / "kernel.rs").write_text("".join(f"// {i}\n" for i in range(60)) + "pub fn my_entry() {\n}\n")
    (port / "spec.json").write_text(json.dumps({"module": "op", "entries": [
        {"name": "my_entry", "variants": [{"name": "f16", "reference": {"kernel": "my_kernel"}}]}]}))
    c.run("B", commit=c.stage_commit("B", path="ports/op/.tileport/runs/note.txt"))
    store.close()
    app = TileportApp(db, Config(), doctor=False, poll_interval=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_conversion(c.cid)
        await pilot.pause()
        await pilot.press("7")
        await app.workers.wait_for_complete()
        for _ in range(20):
            await pilot.pause(0.05)
        left, right = app.screen.query_one("#code-left"), app.screen.query_one("#code-right")
        assert "my_entry (kernel.rs:61) <-> my_kernel (op.py:44)" in str(app.screen.query_one("#code-head").content)
        for box, line in ((left, 61), (right, 44)):  # each side shows its entry's line, not line 1
            assert box.scroll_y > 0 and box.scroll_y < line <= box.scroll_y + box.size.height, (box.id, box.scroll_y)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(160, 45), (80, 24)])
async def test_ir_rows_show_both_sides_in_the_width_and_differences_only_never_shows_an_empty_table(tmp_path, size):
    """matmul f16's recorded pair differs only benignly (PASS_WITH_NOTES): its port-only rows must show their port
    text on screen (auto-width columns put it off the right edge) and `d` shows those rows, not nothing."""
    from pathlib import Path

    from tileport.records import Stage, StageResult
    from tileport.store import Store

    irdir = Path(__file__).resolve().parents[1] / "ir_kernels" / "rust"
    db = tmp_path / "t.db"
    s = Store(db)
    cid = s.add_conversion("/x/examples/matmul.py", "matmul_kernel")
    s.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, verdict="COMPILED", cap=2, details={"ir_pairs": [
        {"label": "matmul_kernel/f16/sm_90", "reference": str(irdir / "matmul_f16.ref.tileir"),
         "port": str(irdir / "matmul_f16.rust.tileir"), "verdict": "PASS_WITH_NOTES"}]}))
    s.close()
    app = app_for(db)
    async with app.run_test(size=size) as pilot:
        app.open_conversion(cid)
        await pilot.pause()
        await pilot.press("5")
        rows = app.screen.query_one("#ir-rows")
        for _ in range(100):
            await pilot.pause(0.05)
            if rows.row_count > 10:
                break
        await pilot.pause(0.2)
        widths = sum(c.get_render_width(rows) for c in rows.ordered_columns)
        assert widths <= rows.size.width, (widths, rows.size.width)  # the port column is on screen
        await pilot.press("d")
        await pilot.pause()
        assert rows.row_count > 10  # the benign rows the notes are about, not an empty table
        assert "no differing rows: the benign ones (=) shown" in str(app.screen.query_one("#ir-summary").render())


@pytest.mark.asyncio
async def test_a_single_resume_ends_with_its_own_line_and_a_run_ends_with_the_summary(tmp_path, monkeypatch):
    """The summary is for a run the dashboard started (the default run, c); after one resume or rerun a modal
    'end of run: N conversions in 0s' over the screen said nothing true (observed in tmux)."""
    import test_tui_quit_handoff
    import test_tui_stop

    from tileport.tui import TileportApp

    runner, cid, db, tmp, started, fast, _ = test_tui_stop.slow_runner.__wrapped__(tmp_path, monkeypatch)
    fast()  # stage A ends at once (FAIL_FIXABLE)
    second = test_tui_quit_handoff._second_op(runner, tmp / "repo")
    app = TileportApp(db, runner.config, repo=tmp / "repo", doctor=False, poll_interval=0.05, model="none")
    app.actions._runner = runner
    async with app.run_test(size=(160, 45)) as pilot:
        app._background("resume", cid)
        for _ in range(100):
            await pilot.pause(0.05)
            if any(m.message.startswith(f"resume #{cid}: ") for m in app._notifications):
                break
        await pilot.pause(1.2)  # two ticks of the work watcher
        assert any(m.message.startswith(f"resume #{cid}: FAILED") for m in app._notifications)
        assert app.screen.__class__.__name__ == "MainScreen" and app.summary_text is None
        app.action_convert()  # c: a run of one's own op
        await pilot.pause()
        await pilot.press(*str(second))
        await pilot.press("enter")
        for _ in range(100):
            await pilot.pause(0.05)
            if app.screen.__class__.__name__ == "SummaryScreen":
                break
        assert app.screen.__class__.__name__ == "SummaryScreen"
        assert app.summary_text.startswith("end of run: 2 conversions in ")  # the store's, as the list


@pytest.mark.asyncio
async def test_store_events_right_after_enter_opens_a_conversion_do_not_crash_the_dashboard(tmp_path):
    """Seen in tmux during the default run: enter, then a stage event before the conversion screen had composed:
    NoMatches('#conv-log') ended the dashboard with a traceback."""
    from tileport.tui._conversion_screen import ConversionScreen

    db = tmp_path / "t.db"
    seed_blocked(db)
    app = app_for(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        s = Store(db)
        s.log_event("log", 1, text="#1 softmax D: blocked before building")
        s.close()
        app.push_screen(ConversionScreen(1))  # not awaited: not composed yet, as right after a key press
        app.poll_store()
        await pilot.pause(0.3)
        assert app.is_running and isinstance(app.screen, ConversionScreen) and app.screen.is_mounted
        assert app.events_seen  # the event was read (the screen reads the store itself when it mounts)


@pytest.mark.asyncio
async def test_a_store_event_landing_while_the_dashboard_closes_does_not_crash_it(tmp_path):
    """Seen in CI on a loaded machine: the store poll ticked while the dashboard was shutting down, after the
    conversion screen's widgets had gone, and NoMatches('#conv-log') failed the run with a traceback."""
    from tileport.tui._conversion_screen import ConversionScreen

    db = tmp_path / "t.db"
    seed_blocked(db)
    app = app_for(db)
    async with app.run_test(size=(160, 45)) as pilot:
        await app.push_screen(ConversionScreen(1))
        await pilot.pause()
        app.exit()  # as q does; the screens are taken down next
        await app.screen.query_one("#conv-log").remove()
        s = Store(db)
        s.log_event("stage.finished", 1, text="#1 softmax D: blocked")
        s.close()
        app.poll_store()  # the tick that lands in between: read, but no screen on its way out is drawn on
        assert app.events_seen == 1
    assert app.return_code == 0  # closed cleanly, no traceback


def test_a_live_view_opened_inside_a_line_does_not_show_the_cut_line(tmp_path):
    # the tail of a long build starts in the middle of one of cargo's JSON lines: that fragment is not a line
    live = tmp_path / "conv.live"
    whole = [FRESH] * 50 + ["   Compiling tileport-port-1 v0.1.0 (/c)", DONE]
    live.write_text("\n".join(whole) + "\n")
    limit = len("   Compiling tileport-port-1 v0.1.0 (/c)\n" + DONE + "\n") + len(FRESH) // 2  # lands mid-line
    fresh, shown = LiveTail(live).read_new(limit=limit)
    assert fresh and shown == ["   Compiling tileport-port-1 v0.1.0 (/c)", "cargo: build failed"], shown
