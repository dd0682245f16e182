"""The reference choice in the dashboard and `tileport status` (a real SQLite store, Textual's Pilot)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pathlib import Path

from tileport.config import Config
from tileport.records import Stage, StageResult
from tileport.store import Store
from tileport.tui import TileportApp
from tileport.analysis.triton.backend import NO_BACKEND_GAP
from tileport.analysis.triton.schema import ReferenceChoice, VariantChoice


def _choice(triton_faster: bool) -> ReferenceChoice:
    v = [VariantChoice(variant="rms_norm_kernel[TILE_N=4096,CHUNKS=1]", reference="triton" if triton_faster
                       else "cutile", configs=3, cutile_us=20.0, triton_us=10.0 if triton_faster else 30.0,
                       ratio=0.5 if triton_faster else 1.5)]
    return ReferenceChoice(cutile="/x/rms_norm.py", triton="/x/triton/rms_norm.py", paired_by="name",
                           status="measured", variants=v, tile_ir_gap=NO_BACKEND_GAP)


def _seed(db, choice: ReferenceChoice) -> int:
    s = Store(db)
    cid = s.add_conversion("/x/rms_norm.py", None, branch="tileport/rms_norm-1", worktree=None)
    # the details stage A records (tileport.pipeline.stages.analyze.result_from_analysis)
    s.record_stage(cid, StageResult(stage=Stage.ANALYZE, verdict="PASS", cap=1, summary="rms_norm: ...",
                                    details={"reference": choice.model_dump(mode="json"),
                                             "reference_summary": choice.summary()}), routed_to="B",
                   route_reason="A PASS")
    s.close()
    return cid


@pytest.mark.asyncio
async def test_dashboard_shows_the_choice_and_the_ir_gap(tmp_path):
    db = tmp_path / "t.db"
    _seed(db, _choice(triton_faster=True))
    app = TileportApp(db, Config(), doctor=False, poll_interval=0.05)
    async with app.run_test(size=(200, 45)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        head = str(app.screen.query_one("#conv-head").render())
        assert "reference per variant: 0 cuTile Python, 1 Triton" in head
        assert NO_BACKEND_GAP in head


def test_status_prints_the_choice(tmp_path):
    db = tmp_path / "t.db"
    _seed(db, _choice(triton_faster=False))
    (tmp_path / "tileport.toml").write_text(f'store = "{db}"\n')
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}  # this tree's tileport
    r = subprocess.run([sys.executable, "-m", "tileport", "status", "--json"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert row["reference"].startswith("reference per variant: 1 cuTile Python, 0 Triton")
    assert "Triton side: " + NO_BACKEND_GAP in row["reference"]  # no Triton reference: not the IR gate's gap
    r = subprocess.run([sys.executable, "-m", "tileport", "status", "1"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120, env=env)
    assert "reference per variant" in r.stdout
