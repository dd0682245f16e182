"""Snapshot tests of each dashboard screen (pytest-textual-snapshot, pinned with textual in pyproject).

The store lives at a fixed path so the status line is stable; the toolchain check is off (it differs
per machine). Update after a deliberate UI change: pytest tests/tui/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tileport.config import Config
from tileport.records import CommandRecord, FailClass, Stage, StageResult
from tileport.store import Store
from tileport.tui import TileportApp

IR = Path(__file__).resolve().parents[1] / "ir_kernels" / "rust"
FIXED = Path("/tmp/tileport-snapshot-store")
SIZE = (150, 42)


@pytest.fixture
def app():
    shutil.rmtree(FIXED, ignore_errors=True)
    FIXED.mkdir(parents=True)
    db = FIXED / "tileport.db"
    s = Store(db)
    a = s.add_conversion("/repo/examples/softmax.py", "softmax_row_kernel", branch="tileport/softmax-1")
    s.record_stage(a, StageResult(stage=Stage.ANALYZE, verdict="PASS", cap=1), routed_to="B", route_reason="A PASS")
    s.record_stage(a, StageResult(stage=Stage.WRITE_KERNEL, verdict="FAIL_COMPILE", fail_class=FailClass.KERNEL, cap=2,
                                  commands=[CommandRecord(argv=["cargo", "build", "--offline"], exit_code=101,
                                                          seconds=3.25)],
                                  summary="E0308 mismatched types: expected tile<128xf32>"),
                   routed_to="B", route_reason="B FAIL_COMPILE: attempt 2/2")
    s.record_stage(a, StageResult(stage=Stage.WRITE_KERNEL, attempt=2, verdict="COMPILED", cap=2, details={
        "ir_pairs": [{"label": "softmax_row/f16/sm_90", "reference": str(IR / "softmax_f16.ref.tileir"),
                      "port": str(IR / "softmax_f16.rust.tileir"), "verdict": "PASS_WITH_NOTES"}]}),
        routed_to="D", route_reason="B COMPILED")
    rid = s.record_stage(a, StageResult(stage=Stage.PERFORMANCE, verdict="DONE", cap=2, details={
        "geomean": 0.987, "worst": {"config": "M=4096 N=4096 f16", "ratio": 1.02}}))
    s.db["perf_rows"].insert_all([
        {"stage_run_id": rid, "config": "M=1024 N=1024 f16", "ref_ms": 0.0100, "port_ms": 0.0095, "ratio": 0.95},
        {"stage_run_id": rid, "config": "M=4096 N=4096 f16", "ref_ms": 0.0260, "port_ms": 0.0265, "ratio": 1.02},
    ])
    b = s.add_conversion("/repo/examples/matmul.py", "matmul_kernel", branch="tileport/matmul-2")
    s.record_stage(b, StageResult(stage=Stage.HOST_CORRECTNESS, verdict="BLOCKED", fail_class=FailClass.ENV, cap=2,
                                  summary="no NVIDIA GPU"))
    s.close()
    return TileportApp(db, Config(), doctor=False)


def test_main_screen(snap_compare, app):
    assert snap_compare(app, terminal_size=SIZE)


def test_conversion_timeline(snap_compare, app):
    assert snap_compare(app, press=["enter"], terminal_size=SIZE)


def test_performance_screen(snap_compare, app):
    assert snap_compare(app, press=["enter", "6"], terminal_size=SIZE)


def test_help_screen(snap_compare, app):
    assert snap_compare(app, press=["question_mark"], terminal_size=SIZE)


def test_main_screen_80x24(snap_compare, app):
    assert snap_compare(app, terminal_size=(80, 24))


def test_conversion_80x24(snap_compare, app):
    assert snap_compare(app, press=["enter"], terminal_size=(80, 24))


def test_quit_dialog(snap_compare, app):
    from tileport.tui._modals import QuitScreen

    async def run_before(pilot):
        pilot.app.push_screen(QuitScreen(["#1 softmax: B write kernel attempt 2, 3m12s", "#2 matmul: between stages"]))
        await pilot.pause()
    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_end_of_run_summary(snap_compare, app):
    assert snap_compare(app, press=["u"], terminal_size=SIZE)
