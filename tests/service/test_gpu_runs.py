"""The gate operations the CLI and the dashboard share (tileport.service.gpu_runs), on
a real SQLite store and a real git branch: typed results, the one-line refusals, and which results.json the
dashboard offers to ingest."""

from __future__ import annotations

import json

import pytest

from gitconv import conversion_at
from tests.conftest import REPO, run_cli
from tileport import service
from tileport.config import Config
from tileport.errors import UserError
from tileport.store import queries


@pytest.fixture
def conv(tmp_path):
    c = conversion_at(tmp_path)
    yield c
    c.store.close()


def results_file(path, cid, commit, status="PASS"):
    """Two correctness cases as the GPU run writes them; no perf section (a `--no-perf` run)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"gate": {"conversion_id": cid, "commit": commit}, "cases": [
        {"name": f"op {d} [n=1024]", "dtype": d, "shape": {"n": 1024}, "status": status, "max_abs_err": 0.0,
         "fail_class": None if status == "PASS" else "kernel"} for d in ("float16", "float32")]}))
    return path


def config(conv) -> Config:
    return Config().model_copy(update={"store": str(conv.store.path)})


def test_ingest_returns_the_runs_it_recorded_and_the_cli_prints_them(conv, tmp_path):
    path = results_file(tmp_path / "g" / "results.json", conv.cid, conv.head())
    done = service.ingest_results(config(conv), path)
    assert (done.conversion_id, done.commit, done.path) == (conv.cid, conv.head(), path)
    assert [(r.stage, r.verdict, r.attempt) for r in done.runs] == [("D", "ALL_PASS", 1)]  # no perf rows: no E
    assert [r.id for r in queries.stage_runs(conv.store, conv.cid)][-1] == done.run_ids[-1]
    assert conv.store.cases(done.run_ids[0])[0]["shape"] == {"n": 1024}
    cfg = tmp_path / "tileport.toml"
    cfg.write_text(f'store = "{conv.store.path}"\n')
    r = run_cli("--config", str(cfg), "gate", "ingest", str(path.parent))  # `gate`: the former name
    assert r.returncode == 0, r.stderr
    rid = queries.stage_runs(conv.store, conv.cid)[-1].id
    assert r.stdout.strip() == (f"conversion {conv.cid} @ {conv.head()[:12]}: recorded stage run(s) {rid} (D ALL_PASS); "
                                f"next: stage E (D ALL_PASS -> E); `tileport run --resume {conv.cid}` or s in the "
                                "dashboard continues")
    assert [x.attempt for x in queries.stage_runs(conv.store, conv.cid, "D")] == [1, 2]


def test_ingest_refusals_are_one_line_and_record_nothing(conv, tmp_path):
    before = len(queries.stage_runs(conv.store, conv.cid))
    with pytest.raises(UserError, match=rf"results are for conversion {conv.cid}, not #{conv.cid + 1}; ingest them"):
        service.ingest_results(config(conv), results_file(tmp_path / "a.json", conv.cid, conv.head()),
                               conversion_id=conv.cid + 1)
    with pytest.raises(UserError, match="packed without a conversion ID; pack it with `tileport gpu pack ID`"):
        service.ingest_results(config(conv), results_file(tmp_path / "b.json", None, conv.head()))
    with pytest.raises(UserError, match=f"no conversion {conv.cid + 5}"):
        service.ingest_results(config(conv), results_file(tmp_path / "c.json", conv.cid + 5, conv.head()))
    old = conv.head()
    conv.human_commit()  # the store has not seen it: the branch's tip decides
    with pytest.raises(UserError, match=f"results are for commit {old[:12]}, conversion {conv.cid} is at "
                                        f"{conv.head()[:12]}; pack and run it again"):
        service.ingest_results(config(conv), results_file(tmp_path / "d.json", conv.cid, old))
    assert len(queries.stage_runs(conv.store, conv.cid)) == before


def test_pack_refuses_a_conversion_without_a_port_in_one_line(conv):
    with pytest.raises(UserError, match=rf"conversion {conv.cid}: no port at {conv.wt}/ports/op; pass the port dir"):
        service.pack_port(config(conv), str(conv.cid))
    with pytest.raises(UserError, match="no conversion 99"):
        service.pack_port(config(conv), "99")


def test_pack_refuses_a_port_edited_since_the_commit_it_would_be_labelled_with(conv):
    """A gate names a commit; built from an uncommitted edit its results would be recorded for code no commit has."""
    conv.stage_commit("B", path="ports/op/kernel.rs")
    conv.store.update_conversion(conv.cid, head_commit=conv.head())
    with pytest.raises(UserError) as clean:  # committed: it goes on, to the op file (this one declares nothing)
        service.pack_port(config(conv), str(conv.cid))
    assert "changed since" not in str(clean.value)
    (conv.wt / "ports" / "op" / "kernel.rs").write_text("// a person's edit, not committed\n")
    with pytest.raises(UserError, match=rf"conversion {conv.cid}: ports/op/kernel.rs changed since {conv.head()[:10]}; "
                                        "commit the edit first"):
        service.pack_port(config(conv), str(conv.cid))


def test_the_results_offered_for_ingest_are_the_newest_packs_then_the_repositorys(conv, tmp_path):
    s = conv.store
    under_repo = conv.repo / "gates" / "op" / "results.json"
    assert service.likely_results(s, conv.cid, [tmp_path / "cwd"]) == tmp_path / "cwd" / "gates" / "op" / "results.json"
    results_file(under_repo, conv.cid, conv.head())
    assert service.likely_results(s, conv.cid, [tmp_path / "cwd"]) == under_repo  # the one that exists
    for d in ("first", "second"):  # what `gpu pack ID` logs (service.gpu_runs.PACKED_EVENT)
        s.log_event("gate.packed", conv.cid, dir=str(tmp_path / d), commit=conv.head())
    assert service.likely_results(s, conv.cid, []) == under_repo  # neither packed dir has results yet
    results_file(tmp_path / "first" / "results.json", conv.cid, conv.head())
    assert service.likely_results(s, conv.cid, []) == tmp_path / "first" / "results.json"
    results_file(tmp_path / "second" / "results.json", conv.cid, conv.head())
    assert service.likely_results(s, conv.cid, []) == tmp_path / "second" / "results.json"  # the newest pack


def test_busy_names_the_process_that_holds_the_conversion(conv):
    import fcntl
    import os

    assert service.gpu_busy(conv.store, conv.cid) is None
    with open(conv.wt.parent / f"{conv.wt.name}.lock", "w") as f:
        f.write(str(os.getpid()))
        f.flush()
        fcntl.flock(f, fcntl.LOCK_EX)
        assert service.gpu_busy(conv.store, conv.cid) == (
            f"conversion {conv.cid} is running a stage (process {os.getpid()}); stop it (x) or wait for it to end")
    assert service.gpu_busy(conv.store, conv.cid) is None


def test_a_port_that_does_not_build_is_one_line_with_the_errors_kept_for_the_cli(tmp_path):
    """The policy refuses the kernel before cargo runs (seconds), as the build would refuse a compile error."""
    import shutil

    port = tmp_path / "vector_add"
    shutil.copytree(REPO / "ports" / "vector_add", port)
    with open(port / "kernel.rs", "a") as f:
        f.write("\nmacro_rules! sneaky { () => {} }\n")
    with pytest.raises(service.BuildFailed) as e:
        service.pack_port(Config(), str(port), op_path=str(REPO / "examples" / "vector_add.py"), out=tmp_path / "g")
    assert str(e.value) == "the port's cdylib did not build (1 error(s)); fix kernel.rs and pack again"
    assert "TP-FORBIDDEN-MACRO" in e.value.errors[0]
    r = run_cli("gpu", "pack", str(port), "--op", "examples/vector_add.py", "--out", str(tmp_path / "g"))
    assert r.returncode == 2 and "TP-FORBIDDEN-MACRO" in r.stdout  # the errors, then the one line
    assert r.stderr.strip() == f"tileport: error: {e.value}"
    assert not (tmp_path / "g").exists()


def test_results_packed_before_ds_blocked_record_are_for_the_head_when_only_stage_records_moved(conv, tmp_path):
    """D packs its gate on a machine without a GPU, then commits its BLOCKED record: results for the commit before
    still judge the head's port; anything else committed since (a port edit) makes them stale."""
    packed_at = conv.head()
    conv.stage_commit("D", path="ports/op/.tileport/runs/D-1.json")  # only the stage record moved
    done = service.ingest_results(config(conv), results_file(tmp_path / "a.json", conv.cid, packed_at))
    assert done.commit == conv.head() != packed_at
    assert [r.verdict for r in done.runs] == ["ALL_PASS"]
    conv.stage_commit("B", path="ports/op/kernel.rs")  # the port changed after the pack
    with pytest.raises(UserError, match="results are for commit"):
        service.ingest_results(config(conv), results_file(tmp_path / "b.json", conv.cid, packed_at))


def test_ingest_sets_the_status_the_router_gives_every_recorded_run(conv, tmp_path):
    """A conversion stopped at D BLOCKED(env) is not left 'blocked' once its GPU results are in: D and E passing
    make it done (approval next); a kernel failure leaves it stopped, resumable, with C next; the summary says so."""
    from tests.cli.test_status_gate_lines import results as passing_results

    from tileport.records import FailClass, Stage, StageResult

    blocked = StageResult(stage=Stage("D"), verdict="BLOCKED", fail_class=FailClass.ENV, attempt=1)
    conv.store.record_stage(conv.cid, blocked, commit=conv.stage_commit("D"))  # a CPU machine: packed, no GPU
    conv.store.update_conversion(conv.cid, status="blocked", error="D BLOCKED: no GPU on this machine")
    path = tmp_path / "pass.json"
    path.write_text(json.dumps(passing_results(conv.cid, conv.head())))
    done = service.ingest_results(config(conv), path)
    assert [r.verdict for r in done.runs] == ["ALL_PASS", "DONE"]
    assert conv.store.conversion(conv.cid)["status"] == "done"
    assert conv.store.conversion(conv.cid)["error"] is None
    assert done.text().endswith(f"conversion {conv.cid} is done (E DONE)")
    failing = service.ingest_results(config(conv), results_file(tmp_path / "fail.json", conv.cid, conv.head(),
                                                                 status="FAIL"))
    assert [(r.stage, r.verdict) for r in failing.runs] == [("D", "FAIL")]
    assert conv.store.conversion(conv.cid)["status"] == "stopped"
    assert failing.next_step.startswith("next: stage C (D FAIL (kernel) -> C)")
