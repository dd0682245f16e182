"""The dashboard, driven through Textual's Pilot against a real SQLite store.

What a person would notice: the table lists the store's conversions with stage, verdict, attempts
against caps and approval; another process writing the store shows up live; the conversion screen
shows each attempt with where it was routed; refused actions say why; q quits.
"""

from __future__ import annotations

import json

import subprocess
import sys
import textwrap

import pytest

from tileport.config import Config
from tileport.records import CommandRecord, FailClass, Stage, StageResult
from tileport.store import Store
from tileport.tui import TileportApp

pytestmark = pytest.mark.asyncio


def seed(path, n=3):
    s = Store(path)
    ids = []
    for i in range(n):
        cid = s.add_conversion(f"/x/examples/op{i}.py", f"k{i}", branch=f"tileport/op{i}-{i + 1}", worktree=None)
        s.record_stage(cid, StageResult(stage=Stage.ANALYZE, verdict="PASS", cap=1), routed_to="B",
                       route_reason="A PASS")
        ids.append(cid)
    s.record_stage(ids[0], StageResult(stage=Stage.WRITE_KERNEL, verdict="FAIL_COMPILE", fail_class=FailClass.KERNEL,
                                       cap=2, commands=[CommandRecord(argv=["cargo", "build"], exit_code=101,
                                                                      seconds=3.5)],
                                       summary="E0308 mismatched types"), routed_to="B",
                   route_reason="B FAIL_COMPILE: retry 2/2")
    s.close()
    return ids


def app_for(path, **kw):
    return TileportApp(path, Config(), doctor=False, poll_interval=0.05, **kw)


async def test_main_table_shows_conversions_with_stage_verdict_attempts(tmp_path):
    db = tmp_path / "t.db"
    seed(db)
    app = app_for(db)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        table = app.screen.query_one("#conversions")
        assert table.row_count == 3
        first = [str(c) for c in table.get_row_at(0)]
        assert first[1] == "op0" and first[2] == "B" and first[3] == "FAIL_COMPILE"
        assert "A1/1" in first[7] and "B1/2" in first[7]
        assert [str(c) for c in table.get_row_at(1)][3] == "PASS"


async def test_another_process_writing_the_store_shows_up_live(tmp_path):
    db = tmp_path / "t.db"
    ids = seed(db, 1)
    app = app_for(db)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        script = textwrap.dedent(f"""
            from tileport.store import Store
            from tileport.records import StageResult, Stage
            s = Store({str(db)!r})
            s.record_stage({ids[0]}, StageResult(stage=Stage.WRITE_KERNEL, verdict="COMPILED", cap=2), routed_to="D")
            s.add_conversion("/x/examples/newop.py", "nk")
            s.close()
        """)
        subprocess.run([sys.executable, "-c", script], check=True)
        for _ in range(40):
            await pilot.pause(0.05)
            if app.screen.query_one("#conversions").row_count == 2:
                break
        table = app.screen.query_one("#conversions")
        assert table.row_count == 2
        assert [str(c) for c in table.get_row_at(0)][3] == "COMPILED"
        assert [str(c) for c in table.get_row_at(1)][1] == "newop"


async def test_conversion_screen_timeline_commands_and_routing(tmp_path):
    db = tmp_path / "t.db"
    seed(db)
    app = app_for(db)
    async with app.run_test(size=(180, 45)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert screen.__class__.__name__ == "ConversionScreen" and screen.conversion_id == 1
        t = screen.query_one("#timeline-table")
        assert t.row_count == 2
        row = [str(c) for c in t.get_row_at(1)]
        assert row[1].startswith("B") and row[2] == "1/2" and row[3] == "FAIL_COMPILE" and row[7] == "B"
        assert "retry 2/2" in row[8]
        await pilot.press("2")  # the commands tab is drawn when it is shown
        await pilot.pause()
        cmds = screen.query_one("#commands-table")
        assert cmds.row_count == 1 and "cargo build" in str(cmds.get_row_at(0)[3])
        counters = str(screen.query_one("#conv-counters").render())
        assert "B write kernel 1/2" in counters
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "MainScreen"


async def test_readonly_refuses_actions_and_says_why(tmp_path):
    db = tmp_path / "t.db"
    seed(db)
    app = app_for(db, readonly=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        await pilot.press("s")
        await pilot.pause()
        texts = [n.message for n in app._notifications]
        assert any("read-only" in t for t in texts)


async def test_help_screen_and_quit(tmp_path):
    db = tmp_path / "t.db"
    seed(db, 1)
    app = app_for(db)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "HelpScreen"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code in (0, None)


async def test_ir_diff_view_aligns_real_ir_and_jumps_between_findings(tmp_path):
    """The IR diff tab diffs the B run's self-check pair (real reference vs real cutile-rs IR)."""
    from pathlib import Path

    irdir = Path(__file__).resolve().parents[1] / "ir_kernels" / "rust"
    ref, port = irdir / "softmax_f16.ref.tileir", irdir / "softmax_f16.rust.tileir"
    db = tmp_path / "t.db"
    s = Store(db)
    cid = s.add_conversion("/x/examples/softmax.py", "softmax_kernel")
    s.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, verdict="COMPILED", cap=2, details={
        "ir_pairs": [{"label": "softmax_kernel/f16/sm_90", "reference": str(ref), "port": str(port),
                      "verdict": "PASS_WITH_NOTES"}]}))
    s.close()
    app = app_for(db)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        app.open_conversion(cid)
        await pilot.pause()
        await pilot.press("5")  # the tab's content is mounted and the pair diffed (a thread) when it is shown
        for _ in range(200):
            await pilot.pause(0.05)
            summary = " ".join(str(w.render()) for w in app.screen.query("#ir-summary"))
            if "PASS" in summary or "FAIL" in summary:
                break
        assert "softmax_kernel/f16/sm_90" in summary and ("PASS" in summary or "FAIL" in summary)
        view = app.screen.query_one("#ir-view")
        rows = app.screen.query_one("#ir-rows")
        report = view._report
        assert rows.row_count > 10
        assert app.screen.query_one("#ir-pair-list").row_count == 1  # pairs listed, not hidden in a dropdown
        differing = [i for i, k in enumerate(view._row_keys) if k.isdigit()
                     and report.rows[int(k)].status.value in ("changed", "ref_only", "port_only")]
        assert differing, "the recorded pair has differing rows"
        rows.move_cursor(row=0)
        await pilot.press("n")  # no focus needed: the screen forwards n/N/d on the IR diff tab
        await pilot.pause()
        assert rows.cursor_row == differing[0]
        await pilot.press("n")
        await pilot.pause()
        assert rows.cursor_row == (differing[1] if len(differing) > 1 else differing[0])
        await pilot.press("N")
        await pilot.pause()
        assert rows.cursor_row == differing[0]
        # a finding links to its row
        findings = app.screen.query_one("#ir-findings")
        linked = [i for i in range(len(view._findings)) if view.row_of_finding(i) is not None]
        if linked:
            findings.move_cursor(row=linked[-1])
            await pilot.pause()
            assert rows.cursor_row == view.row_of_finding(linked[-1])
        # differences only: every shown row differs (or is downstream of a difference, or an entry header)
        total = rows.row_count
        await pilot.press("d")
        await pilot.pause()
        shown = [report.rows[int(k)].status.value for k in view._row_keys if k.isdigit()]
        assert rows.row_count < total and set(shown) <= {"changed", "ref_only", "port_only", "downstream"}
        # enter on a row: the whole text of both sides
        rows.focus()
        rows.move_cursor(row=view._finding_rows[0])
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "DetailScreen" and "reference line" in app.screen.text


async def test_perf_view_shows_ratios_geomean_and_gate(tmp_path):
    db = tmp_path / "t.db"
    s = Store(db)
    cid = s.add_conversion("/x/examples/softmax.py", "softmax_kernel")
    rid = s.record_stage(cid, StageResult(stage=Stage.PERFORMANCE, verdict="INVESTIGATE", cap=2,
                                          details={"geomean": 1.08, "worst_ratio": 1.2,
                                                   "worst": {"config": "4096x4096 f16", "ratio": 1.2}}))
    s.db["perf_rows"].insert_all([
        {"stage_run_id": rid, "config": "1024x1024 f16", "ref_ms": 0.010, "port_ms": 0.0097, "ratio": 0.97},
        {"stage_run_id": rid, "config": "4096x4096 f16", "ref_ms": 0.026, "port_ms": 0.0312, "ratio": 1.2,
         "launch": json.dumps({"ref": [{"kernel": "softmax_kernel", "grid": [4096, 1, 1], "block": [256, 1, 1],
                                        "registers_per_thread": 128, "occupancy_pct": 25}],
                               "port": [{"kernel": "softmax_entry", "grid": [4096, 1, 1], "block": [256, 1, 1],
                                         "registers_per_thread": 255, "occupancy_pct": 13}]})},
    ])
    s.close()
    app = app_for(db)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        table = app.screen.query_one("#conversions")
        assert "1.080" in str(table.get_row_at(0)[5])
        assert str(table.get_row_at(0)[6]) == "1.20"  # the slowest configuration, beside the geomean
        app.open_conversion(cid)
        await pilot.pause()
        await pilot.press("6")
        await pilot.pause()
        pt = app.screen.query_one("#perf-table")
        assert pt.row_count == 2 and str(pt.get_row_at(1)[3]) == "1.200"
        summary = str(app.screen.query_one("#perf-summary").render())
        assert "geomean 1.080" in summary and "gate <= 1.05" in summary and "4096x4096 f16" in summary
        # moving to the slow row shows how each side launched: here the port holds twice the registers
        pt.focus()
        pt.move_cursor(row=1)
        await pilot.pause()
        launch = str(app.screen.query_one("#perf-launch").render())
        assert "4096x4096 f16" in launch and "255 regs" in launch and "128 regs" in launch and "occ 13%" in launch
        pt.move_cursor(row=0)
        await pilot.pause()
        assert "no launch attributes recorded" in str(app.screen.query_one("#perf-launch").render())


async def test_approval_flow_merge_refused_until_gates_pass_and_approved(tmp_path):
    """On a real repository: merge is refused (and says which gates and that no approval exists) until A, B, D
    and E pass on HEAD and a person approves that exact HEAD; then `m` merges it into main."""
    from gitconv import Conv, git

    db = tmp_path / "t.db"
    store = Store(db)
    conv = Conv(tmp_path, store)
    conv.run("A")
    conv.run("B")
    store.close()
    app = app_for(db, repo=conv.repo)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        app.open_conversion(conv.cid)
        await pilot.pause()
        await pilot.press("m")
        await pilot.pause()
        refusal = [n.message for n in app._notifications][-1]
        assert refusal.startswith("merge:") and "gate D" in refusal and "approval missing" in refusal
        why = str(app.screen.query_one("#why-not").render())
        assert "gate D" in why and "gate E" in why
        await pilot.press("a")  # approving HEAD while D and E are open is refused, as `tileport approve` is
        await app.workers.wait_for_complete()
        await pilot.pause()
        refusal = [n.message for n in app._notifications][-1]
        assert refusal.startswith("approve:") and "gate D missing" in refusal and "gate E missing" in refusal
        s1 = Store(db)
        assert s1.approvals(conv.cid) == []
        s1.close()
        s2 = Store(db)
        conv.store = s2
        conv.run("D")
        conv.run("E")
        head = conv.head()
        s2.close()
        await pilot.pause(0.3)
        await pilot.press("a")
        await app.workers.wait_for_complete()
        await pilot.pause(0.3)
        s3 = Store(db)
        [appr] = s3.approvals(conv.cid)
        assert appr["decision"] == "approve" and appr["commit"] == head
        s3.close()
        await pilot.press("m")
        await app.workers.wait_for_complete()
        await pilot.pause(0.3)
        assert conv.contains("main", head)
        assert "Tileport" in git(conv.repo, "log", "-1", "--format=%B", "main")
        await pilot.press("escape")
        await pilot.pause(0.3)
        row = [str(c) for c in app.screen.query_one("#conversions").get_row_at(0)]
        assert row[8] == "approved"


async def test_readonly_footer_offers_no_writes_and_a_write_key_still_says_why(tmp_path):
    db = tmp_path / "t.db"
    seed(db)
    app = app_for(db, readonly=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        shown = {b.binding.action for b in app.screen.active_bindings.values()}
        assert "start" not in shown and "stop" not in shown and "quit" in shown
        await pilot.press("enter")
        await pilot.pause()
        shown = {b.binding.action for b in app.screen.active_bindings.values()}
        assert not shown & {"app.approve", "app.merge", "app.rerun", "app.edit"}
        await pilot.press("x")
        await pilot.pause()
        assert "stop: read-only" in [n.message for n in app._notifications][-1]


async def test_a_and_m_on_the_list_say_why_not_and_rerun_asks_for_a_stage_letter(tmp_path):
    db = tmp_path / "t.db"
    seed(db)
    app = app_for(db)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert [n.message for n in app._notifications][-1].startswith("approve: conversion 1 has no branch")
        await pilot.press("m")
        await pilot.pause()
        assert [n.message for n in app._notifications][-1].startswith("merge: conversion 1 has no branch")
        await pilot.press("r")
        await pilot.pause()
        assert [n.message for n in app._notifications][-1].startswith("rerun: conversion 1 has no worktree")


async def test_perf_shapes_with_brackets_show_and_the_worst_ratio_is_rounded(tmp_path):
    db = tmp_path / "t.db"
    s = Store(db)
    cid = s.add_conversion("/x/examples/mm.py", "mm")
    rid = s.record_stage(cid, StageResult(stage=Stage.PERFORMANCE, verdict="INVESTIGATE", cap=2, details={
        "geomean": 1.0712345, "worst": {"config": "[m=4096 n=4096] f16", "ratio": 1.1234567890123456}}))
    s.db["perf_rows"].insert_all([{"stage_run_id": rid, "config": "[m=4096 n=4096] f16", "ref_ms": 0.01,
                                   "port_ms": 0.0112, "ratio": 1.1234567890123456}])
    s.close()
    app = app_for(db)
    async with app.run_test(size=(160, 50)) as pilot:
        app.open_conversion(cid)
        await pilot.pause()
        await pilot.press("6")
        await pilot.pause()
        assert str(app.screen.query_one("#perf-table").get_row_at(0)[0]) == "[m=4096 n=4096] f16"
        summary = str(app.screen.query_one("#perf-summary").render())
        assert "worst: [m=4096 n=4096] f16 (1.123)" in summary and "1.1234567" not in summary


async def test_the_worst_cell_is_judged_by_the_config_max_recorded_with_the_e_run(tmp_path):
    """The bug: the table coloured an E run's slowest configuration with today's [perf] config_max. A run recorded
    with config_max 1.20 and worst 1.15 did not break its bound: not red under a config_max of 1.10 today. A run
    recorded before the bound was kept is judged by today's."""
    db = tmp_path / "t.db"
    s = Store(db)
    kept = s.add_conversion("/x/examples/kept.py", "k")
    s.record_stage(kept, StageResult(stage=Stage.PERFORMANCE, verdict="DONE", cap=2, details={
        "geomean": 1.02, "worst": "n=1", "worst_ratio": 1.15, "config_max": 1.20}))
    old = s.add_conversion("/x/examples/old.py", "k")
    s.record_stage(old, StageResult(stage=Stage.PERFORMANCE, verdict="DONE", cap=2, details={
        "geomean": 1.02, "worst": {"config": "n=1", "ratio": 1.15}}))
    s.close()
    config = Config()
    config.perf.config_max = 1.10
    app = TileportApp(db, config, doctor=False, poll_interval=0.05)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        table = app.screen.query_one("#conversions")
        worst = {str(table.get_row_at(i)[1]): table.get_row_at(i)[6] for i in range(table.row_count)}
        assert (str(worst["kept"]), str(worst["old"])) == ("1.15", "1.15")
        assert worst["kept"].style == "green"  # 1.15 <= 1.20, the bound recorded with the run
        assert worst["old"].style == "red"  # no bound recorded: today's 1.10


async def test_help_scrolls_in_a_small_terminal(tmp_path):
    db = tmp_path / "t.db"
    seed(db, 1)
    app = app_for(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        box = app.screen.query_one("#help-box")
        assert box.max_scroll_y > 0
        await pilot.press("pagedown")
        await pilot.pause()
        assert box.scroll_y > 0


def seed_blocked(path):
    s = Store(path)
    for i, op in enumerate(("softmax", "matmul")):
        cid = s.add_conversion(f"/x/examples/{op}.py", f"{op}_kernel", branch=f"tileport/{op}-{i + 1}")
        s.record_stage(cid, StageResult(stage=Stage.ANALYZE, verdict="PASS", cap=1), routed_to="B")
        s.record_stage(cid, StageResult(stage=Stage.HOST_CORRECTNESS, verdict="BLOCKED", fail_class=FailClass.ENV,
                                        cap=2, summary="no NVIDIA GPU: torch.cuda.is_available() is False"))
        s.update_conversion(cid, status="blocked")
    s.close()


async def test_all_blocked_env_names_the_missing_gpu_and_the_next_step_and_the_summary_says_what_needs_a_person(
        tmp_path):
    db = tmp_path / "t.db"
    seed_blocked(db)
    app = app_for(db)
    app.gpu_detail = "nvidia-smi not found"
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        app.screen.show_next_step()
        await pilot.pause()
        text = str(app.screen.query_one("#next-step").render())
        assert "all 2 conversions stopped BLOCKED(env) at D: no GPU here" in text
        assert "H100/H200 (sm_90)" in text and "nvidia-smi not found" in text
        assert "`tileport gpu pack 1`" in text and "[gpu] command_prefix" in text
        await pilot.press("u")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "SummaryScreen"
        summary = app.summary_text
        assert "by status:  blocked 2" in summary and "BLOCKED(env) 2" in summary
        assert "#1 softmax: BLOCKED at D: no NVIDIA GPU" in summary and "gpu pack 1" in summary


async def test_convert_asks_for_a_path_and_refuses_a_missing_file_in_one_line(tmp_path):
    db = tmp_path / "t.db"
    seed(db, 1)
    app = app_for(db)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("c")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "ReasonScreen"
        await pilot.press(*"nope.py", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [n.message for n in app._notifications][-1] == (
            "convert: nope.py: no such file; give the path of a cuTile Python op (.py)")


async def test_convert_takes_a_library_directory_and_says_in_one_line_when_it_has_no_op(tmp_path):
    db = tmp_path / "t.db"
    seed(db, 1)
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "helpers.py").write_text("def f():\n    return 1\n")
    app = app_for(db)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("c")
        await pilot.pause()
        await pilot.press(*str(lib), "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        msg = [n.message for n in app._notifications][-1]
        assert msg.startswith(f"convert: {lib}: no op files") and "\n" not in msg


async def test_commands_per_stage_run_show_the_tools_own_argv_and_enter_opens_the_whole_text(tmp_path):
    db = tmp_path / "t.db"
    s = Store(db)
    cid = s.add_conversion("/x/examples/softmax.py", "softmax_kernel")
    wrapped = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', "/sys/fs/cgroup/x/cgroup.procs", "/usr/bin/prlimit",
               "--cpu=600", "--", "/usr/bin/bwrap", "--die-with-parent", "--ro-bind", "/", "/", "--", "cargo", "build",
               "--offline", "--release", "--manifest-path", "/wt/.tileport-build/crate/Cargo.toml"]
    s.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, verdict="COMPILED", cap=2,
                                    commands=[CommandRecord(argv=wrapped, exit_code=0, seconds=81.5, cwd="/wt")],
                                    summary="compiled; " + "long summary " * 30), routed_to="D")
    s.record_stage(cid, StageResult(stage=Stage.HOST_CORRECTNESS, verdict="BLOCKED", fail_class=FailClass.ENV, cap=2,
                                    commands=[CommandRecord(argv=["python", "-m", "gate"], exit_code=3, seconds=1)]))
    s.close()
    app = app_for(db)
    async with app.run_test(size=(160, 45)) as pilot:
        app.open_conversion(cid)
        await pilot.pause()
        t = app.screen.query_one("#timeline-table")
        assert t.cursor_row == 1  # the newest run: D's commands
        await pilot.press("2")
        await pilot.pause()
        assert "python -m gate" in str(app.screen.query_one("#commands-table").get_row_at(0)[3])
        await pilot.press("1")
        await pilot.pause()
        t.move_cursor(row=0)  # pick B's run in the timeline: its build is still inspectable after D ran
        await pilot.press("2")
        await pilot.pause()
        cell = str(app.screen.query_one("#commands-table").get_row_at(0)[3])
        assert cell.startswith("cargo build --offline --release") and "prlimit" not in cell
        assert "of B write kernel attempt 1 (COMPILED)" in str(app.screen.query_one("#commands-of").render())
        await pilot.press("1")
        await pilot.pause()
        await pilot.press("enter")  # the timeline row's whole summary
        await pilot.pause()
        assert app.screen.__class__.__name__ == "DetailScreen" and app.screen.text.count("long summary") == 30
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause(0.2)
        assert app.focused is app.screen.query_one("#commands-table")
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "DetailScreen"
        assert app.screen.text.startswith("$ cargo build --offline --release --manifest-path")
        assert "as run (sandbox wrapper included)" in app.screen.text and "prlimit" in app.screen.text
