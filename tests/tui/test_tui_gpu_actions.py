"""The dashboard's gate keys, through Textual's pilot on a real SQLite store and a real git branch: `i` ingests a
results.json that an H200 run wrote (the recorded rows of tests/data/gpu_results/) and the perf tab and timeline
show the new D/E runs; a results file for a commit the branch has left is refused in one line; `g` packs a gate in
a background worker, refused in read-only mode, while a stage runs, or (one line) when there is no port to pack.
"""

from __future__ import annotations

import asyncio
import fcntl
import html
import json
import os
import re
from pathlib import Path

import pytest

from gitconv import Conv, conversion_at
from tileport.config import Config
from tileport.store import Store, queries
from tileport.tui import TileportApp

pytestmark = pytest.mark.asyncio

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu_results"
REPO = Path(__file__).resolve().parents[2]


def h200_results(cid: int, commit: str) -> dict:
    """results.json as `tileport gpu run` writes it, with the perf rows of a recorded H200 run (softmax with its
    occupancy hints: every configuration faster than the reference) and passing cases."""
    rows = json.loads((DATA / "h200_softmax_after_hints.json").read_text())["rows"]
    cases = [{"name": f"softmax {r['config']}", "dtype": r["config"].split()[0], "shape": {}, "status": "PASS",
              "max_abs_err": 0.0} for r in rows]
    return {"gate": {"conversion_id": cid, "commit": commit, "op": "op"}, "env": {"capability": [9, 0]},
            "cases": cases, "perf": {"rows": rows, "hw": {"flush": {"verified": True}}}}


@pytest.fixture
def conv(tmp_path):
    c = conversion_at(tmp_path)
    c.store.update_conversion(c.cid, status="blocked")
    yield c
    c.store.close()


def app_for(conv: Conv, **kw) -> TileportApp:
    return TileportApp(conv.store.path, Config(), repo=conv.repo, doctor=False, poll_interval=0.05, **kw)


def write_results(conv: Conv, commit: str) -> Path:
    path = conv.repo / "gates" / "op" / "results.json"  # where `tileport gpu pack` puts it by default
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(h200_results(conv.cid, commit)))
    return path


def vector_add_at(worktree: Path, root: Path) -> tuple[TileportApp, int]:
    """A dashboard on a new store (root/tp.db) whose one conversion is examples/vector_add.py with its port in
    `worktree` at commit c0ffee (no branch: the store's head is the commit), the repository `root`."""
    store = Store(root / "tp.db")
    cid = store.add_conversion("examples/vector_add.py")
    store.update_conversion(cid, head_commit="c0ffee", worktree=str(worktree))
    store.close()
    return TileportApp(root / "tp.db", Config(), repo=root, doctor=False, poll_interval=0.05), cid


def screen_text(app) -> str:
    """What the terminal shows, as plain text (the SVG screenshot's text, unescaped)."""
    return html.unescape(re.sub(r"<[^>]+>", "", app.export_screenshot())).replace("\xa0", " ")


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


async def until(pilot, cond, seconds: float = 15.0) -> bool:
    for _ in range(int(seconds / 0.05)):
        if cond():
            return True
        await pilot.pause(0.05)
    return cond()


async def open_perf(app, pilot, cid: int) -> None:
    await pilot.pause()
    app.open_conversion(cid)
    await pilot.pause()
    await pilot.press("6")
    await pilot.pause()


async def test_ingest_of_an_h200_results_file_shows_the_perf_rows_and_the_e_verdict(conv):
    results = write_results(conv, conv.head())
    app = app_for(conv)
    async with app.run_test(size=(180, 60)) as pilot:
        await open_perf(app, pilot, conv.cid)
        screen = app.screen
        assert "no performance run yet" in str(screen.query_one("#perf-summary").render())
        assert "g: pack the port for a GPU host" in str(screen.query_one("#perf-gate").render())
        await pilot.press("i")
        await pilot.pause()
        box = app.screen.query_one("#path")
        assert box.value == str(results)  # prefilled with gates/<op>/results.json under the repository
        await pilot.press("enter")
        table = screen.query_one("#perf-table")
        assert await until(pilot, lambda: table.row_count == 18), notes(app)
        summary = str(screen.query_one("#perf-summary").render())
        assert summary.startswith("E DONE") and "sm_90" in summary
        # the worst ratio with a few digits, not 16
        assert "worst: float32 [m=64,n=32768 scale=0.37] (1.060)" in summary, summary
        shown = screen_text(app)
        assert "worst: float32 [m=64,n=32768 scale=0.37] (1.060)" in shown and "1.0602409" not in shown
        assert "float16 [m=4096,n=4096]" in shown and "bfloat16 [m=1024,n=1000 scale=0.37]" in shown  # literal
        assert "0.346" in shown and "0.34559515" not in shown
        plot = screen.query_one("#perf-plot").render().plain
        assert "port / reference" in plot and "configuration # (table order)" in plot  # the chart's axes
        timeline = screen.query_one("#timeline-table")
        verdicts = [(str(timeline.get_row_at(i)[1])[0], str(timeline.get_row_at(i)[3]))
                    for i in range(timeline.row_count)]
        assert verdicts[-2:] == [("D", "ALL_PASS"), ("E", "DONE")]
        gate_line = str(screen.query_one("#perf-gate").render())
        assert gate_line.startswith(f"ingested {results}: conversion {conv.cid} @ {conv.head()[:12]}: recorded")
        assert gate_line.endswith(f"(D ALL_PASS, E DONE); conversion {conv.cid} is done (E DONE)")
    runs = [(r.stage, r.verdict, r.commit) for r in queries.stage_runs(conv.store, conv.cid)]
    assert runs[-2:] == [("D", "ALL_PASS", conv.head()), ("E", "DONE", conv.head())]


async def test_ingest_of_results_for_a_commit_the_branch_left_is_refused_in_one_line(conv):
    judged = conv.head()
    conv.store.update_conversion(conv.cid, head_commit=judged)
    conv.human_commit("kernel.rs")  # the branch moved after the gate was packed
    write_results(conv, judged)
    before = len(queries.stage_runs(conv.store, conv.cid))
    app = app_for(conv)
    async with app.run_test(size=(160, 45)) as pilot:
        await open_perf(app, pilot, conv.cid)
        await pilot.press("i")
        await pilot.pause()
        await pilot.press("enter")
        want = f"results are for commit {judged[:12]}, conversion {conv.cid} is at {conv.head()[:12]}"
        assert await until(pilot, lambda: any(want in n for n in notes(app))), notes(app)
        line = next(n for n in notes(app) if want in n)
        assert line.startswith(f"ingest #{conv.cid}: ") and "\n" not in line and "Traceback" not in line
        assert line.endswith("pack and run it again for the current commit")
        assert want in str(app.screen.query_one("#perf-gate").render())
        assert app.screen.query_one("#perf-table").row_count == 0
    assert len(queries.stage_runs(conv.store, conv.cid)) == before


async def test_a_missing_results_file_and_escape_record_nothing(conv):
    app = app_for(conv)
    async with app.run_test(size=(160, 45)) as pilot:
        await open_perf(app, pilot, conv.cid)
        await pilot.press("i")
        await pilot.pause()
        await pilot.press("escape")  # cancel: nothing happens
        await pilot.pause()
        assert app.screen.__class__.__name__ == "ConversionScreen" and not notes(app)
        await pilot.press("i")
        await pilot.pause()
        await pilot.press("enter")  # the prefilled guess does not exist yet
        assert await until(pilot, lambda: any("no results file" in n for n in notes(app))), notes(app)
        assert any(n.startswith(f"ingest #{conv.cid}: ") and "run `tileport gpu run DIR` on the GPU host" in n
                   for n in notes(app))


async def test_readonly_refuses_pack_and_ingest_from_keys_and_palette(conv):
    app = app_for(conv, readonly=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await open_perf(app, pilot, conv.cid)
        assert "pack the port" not in str(app.screen.query_one("#perf-gate").render())  # not offered
        await pilot.press("g")
        await pilot.pause()
        assert any(n.startswith("GPU pack: read-only dashboard") for n in notes(app)), notes(app)
        for words, label in (("gpu pack", "GPU pack"), ("ingest results", "ingest")):  # the palette's entries
            app.clear_notifications()
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*words)  # typed into the palette: no key of the dashboard's
            await pilot.pause(0.5)
            await pilot.press("enter")
            await pilot.pause()
            assert notes(app) == [f"{label}: read-only dashboard (started with --readonly): use the CLI or a "
                                  "writable dashboard"]
        assert app.screen.__class__.__name__ == "ConversionScreen" and not app.packing
    assert not (conv.repo / "gates").exists()


async def test_pack_is_refused_while_a_stage_runs_and_says_why_without_a_port(conv):
    lock = conv.wt.parent / f"{conv.wt.name}.lock"  # held as a running `tileport run` holds it (pipeline.control)
    app = app_for(conv)
    async with app.run_test(size=(160, 45)) as pilot:
        await open_perf(app, pilot, conv.cid)
        with open(lock, "w") as f:
            f.write(str(os.getpid()))
            f.flush()
            fcntl.flock(f, fcntl.LOCK_EX)
            await pilot.press("g")
            await pilot.pause()
            await pilot.press("i")
            await pilot.pause()
            fcntl.flock(f, fcntl.LOCK_UN)
        running = f"conversion {conv.cid} is running a stage (process {os.getpid()})"
        assert any(n.startswith("GPU pack: ") and running in n for n in notes(app)), notes(app)
        assert any(n.startswith("ingest: ") and running in n for n in notes(app)), notes(app)
        assert not app.packing
        await pilot.press("g")  # no stage runs now: the pack starts, and the service says there is no port
        want = f"GPU pack #{conv.cid}: conversion {conv.cid}: no port at {conv.wt / 'ports' / 'op'}"
        assert await until(pilot, lambda: any(n.startswith(want) for n in notes(app))), notes(app)
        assert not app.packing and want in str(app.screen.query_one("#perf-gate").render())


async def test_a_port_that_does_not_build_ends_the_pack_with_one_line(tmp_path):
    """The kernel is refused by the policy before cargo runs, as a compile error would end the build."""
    import shutil

    wt = tmp_path / "wt"
    shutil.copytree(REPO / "ports" / "vector_add", wt / "ports" / "vector_add")
    shutil.copytree(REPO / "examples", wt / "examples", ignore=shutil.ignore_patterns("triton", "__pycache__"))
    with open(wt / "ports" / "vector_add" / "kernel.rs", "a") as f:
        f.write("\nmacro_rules! sneaky { () => {} }\n")
    app, cid = vector_add_at(wt, tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await open_perf(app, pilot, cid)
        await pilot.press("g")
        want = (f"GPU pack #{cid}: the port's cdylib did not build (1 error(s)); fix kernel.rs and pack again: "
                "src/kernel.rs:")
        assert await until(pilot, lambda: any(n.startswith(want) for n in notes(app)), 60), notes(app)
        line = next(n for n in notes(app) if n.startswith(want))
        assert "TP-FORBIDDEN-MACRO" in line and "\n" not in line
        assert str(app.screen.query_one("#perf-gate").render()) == line
    assert not (tmp_path / "gates").exists()


async def test_quitting_kills_a_pack_under_way(conv, monkeypatch):
    """NAMED FAKE: pack_port replaced by a 'cargo build' that is `sleep 60` (a cold build is minutes; a warm one
    is too quick to quit in the middle of), run through exec.proc like the real build."""
    import threading

    from tileport.exec.proc import Interrupted, run_command

    seen: dict = {}

    def slow_cargo_fake(config, target, **kw):
        kw["log"]("compiling (fake)")
        try:
            run_command(["sleep", "60"], timeout=120)
        except Interrupted as e:
            seen["interrupted"] = str(e)
            raise
        finally:
            seen["ended"] = threading.Event()
            seen["ended"].set()

    monkeypatch.setattr("tileport.service.pack_port", slow_cargo_fake)
    app = app_for(conv)
    async with app.run_test(size=(160, 45)) as pilot:
        await open_perf(app, pilot, conv.cid)
        await pilot.press("g")
        assert await until(pilot, lambda: conv.cid in app.packing and app.packing[conv.cid].scope._pids)
        [pid] = app.packing[conv.cid].scope._pids
        assert "compiling (fake)" in str(app.screen.query_one("#perf-gate").render())
        await pilot.press("q")  # nothing of the runner's runs here: q quits at once
        await pilot.pause()
    for _ in range(100):
        if "ended" in seen and not Path(f"/proc/{pid}").exists():
            break
        await asyncio.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists(), "the pack's tool outlived the dashboard"
    assert "killed by a stop request" in seen.get("interrupted", ""), seen


@pytest.mark.slow
async def test_pack_from_the_dashboard_builds_the_gate_and_names_the_commands(tmp_path):
    """A real cargo build of ports/vector_add (seconds from the shared target cache, minutes cold)."""
    app, cid = vector_add_at(REPO, tmp_path)
    async with app.run_test(size=(200, 50)) as pilot:
        await open_perf(app, pilot, cid)
        await pilot.press("g")
        await pilot.pause()
        assert str(app.screen.query_one("#perf-gate").render()).startswith(f"packing the port of #{cid} (")
        await pilot.press("g")  # a second pack while one runs
        await pilot.pause()
        assert any(n.startswith(f"GPU pack: a GPU pack of #{cid} is under way") for n in notes(app))
        gate = tmp_path / "gates" / "vector_add"
        assert await until(pilot, lambda: not app.packing, 600), notes(app)
        line = str(app.screen.query_one("#perf-gate").render())
        assert line.startswith(f"gate {gate}: vector_add, ") and "MB" in line, line
        assert f"`tileport gpu run {gate}`, then `tileport gpu ingest {gate / 'results.json'}`" in line
    manifest = json.loads((gate / "gate.json").read_text())
    assert (manifest["conversion_id"], manifest["commit"]) == (cid, "c0ffee")
    s = Store(tmp_path / "tp.db")
    try:  # the pack is on the conversion's log, and `i` offers its results.json next
        from tileport import service

        assert service.likely_results(s, cid, []) == gate.resolve() / "results.json"
    finally:
        s.close()
