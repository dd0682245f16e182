"""A person's edit starts a fresh round of the caps: the real runner (named fake stages, real git and store) that
used D's whole cap before the edit runs D and E again after a recorded human-edit B run, where counting the old
attempts would stop it FAILED at `cap reached: D 2/2`; a stop during the edit's gates (the real `tileport stop`,
real cargo killed) records the attempt as interrupted and no B run."""

from __future__ import annotations

import shutil
import threading
import time

import humanconv
import pytest

from tests.fakes.stages import FAKE_STAGES, op_repo
from tileport import service
from tileport.pipeline.stages.write_kernel import HUMAN_EDIT
from tileport.config import Config
from tileport.errors import UserError
from tileport.records import Stage, StageResult, utcnow
from tileport.store import Store, queries, record_run


def test_after_a_human_edit_the_caps_count_afresh(tmp_path):
    repo = op_repo(tmp_path / "proj")
    run = service.runner(Config(), repo=repo, model="none", stages=FAKE_STAGES, out=lambda line: None)
    cid = service.start(run, [repo / "op.py"], repo=repo)[0]
    assert run.resume(cid).status == "done"  # A B D(FAIL) D E: D used 2 of its 2
    s = service.open_store(Config(), repo)
    head = s.conversion(cid)["head_commit"]
    record_run(s, cid, StageResult(stage=Stage.WRITE_KERNEL, verdict="COMPILED", started_at=utcnow(),
                                   details={"source": HUMAN_EDIT, "self_check": "PASS"}), commit=head, head=True)
    s.update_conversion(cid, status="pending")
    s.close()
    finished = run.resume(cid)
    assert (finished.status, finished.reason) == ("done", "E DONE")
    s = service.open_store(Config(), repo)
    assert [(r.stage, r.verdict) for r in queries.stage_runs(s, cid)][-3:] == \
        [("B", "COMPILED"), ("D", "ALL_PASS"), ("E", "DONE")]
    s.close()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")
def test_tileport_stop_during_the_gates_records_them_interrupted_and_no_b_run(tmp_path, cli):
    db = tmp_path / "t.db"
    c = humanconv.make(tmp_path, db)
    humanconv.edit(c, ("z.store(tx + ty);", "z.store(ty + tx);"))
    s = Store(db)
    sha = service.commit_human_edit(s, c.cid)
    runs_before = len(queries.stage_runs(s, c.cid))
    run = service.runner(Config(store=str(db)), out=lambda line: None)
    outcome: dict = {}

    def gates():
        try:
            outcome["judged"] = service.judge_edit(run, c.cid)
        except UserError as e:
            outcome["error"] = str(e)
    t = threading.Thread(target=gates)
    t.start()
    live, deadline = c.wt.with_name(c.wt.name + ".live"), time.monotonic() + 60  # the gates' live output
    while time.monotonic() < deadline and not (live.is_file() and "cargo build of the port" in live.read_text()):
        time.sleep(0.05)
    assert s.conversion(c.cid)["status"] == "running"
    t0 = time.monotonic()
    r = cli("stop", str(c.cid), "--store", str(db), "--wait", "20")
    t.join(60)
    assert r.returncode == 0 and "stopped" in r.stdout, r.stdout + r.stderr
    assert time.monotonic() - t0 < 10
    assert "judged" not in outcome and "nothing was recorded" in outcome["error"]
    assert len(queries.stage_runs(s, c.cid)) == runs_before
    assert [e["kind"] for e in s.events(c.cid) if e["kind"].startswith("stage.")][-2:] == \
        ["stage.started", "stage.interrupted"]
    assert s.conversion(c.cid)["status"] == "stopped"
    assert service.ungated_head(s, c.cid) == sha  # the dashboard's e offers the gates again
    s.close()
