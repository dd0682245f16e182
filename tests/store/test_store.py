"""The SQLite store: durable across reopen, WAL, versioned, append-only events, atomic stage records."""

import json
import sqlite3
from pathlib import Path

import pytest

from tileport.errors import UserError
from tileport.records import ArtifactRecord, CommandRecord, FailClass, Stage, StageResult, TokenUsage
from tileport.store import SCHEMA_VERSION, Store, queries


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "db" / "tileport.db")
    yield s
    s.close()


def test_stage_run_with_commands_artifacts_tokens_survives_reopen(tmp_path):
    path = tmp_path / "t.db"
    art = tmp_path / "analysis.json"
    art.write_text("{}")
    s = Store(path)
    cid = s.add_conversion("examples/softmax.py", "softmax_kernel", branch="tileport/softmax")
    result = StageResult(
        stage=Stage.WRITE_KERNEL, attempt=2, verdict="FAIL_COMPILE", fail_class=FailClass.KERNEL,
        commands=[CommandRecord(argv=["cargo", "build"], exit_code=101, seconds=3.2)],
        artifacts=[ArtifactRecord.of("analysis", art)],
        tokens=TokenUsage(prompt_tokens=1200, completion_tokens=340), model_id="qwen-coder",
    )
    rid = s.record_stage(cid, result, commit="abc123")
    s.close()

    s2 = Store(path)
    [run] = queries.stage_runs(s2, cid)
    assert (run.stage, run.attempt, run.verdict, run.fail_class) == ("B", 2, "FAIL_COMPILE", "kernel")
    assert (run.prompt_tokens, run.completion_tokens, run.commit) == (1200, 340, "abc123")
    [cmd] = queries.commands(s2, rid)
    assert cmd.argv == ["cargo", "build"] and cmd.exit_code == 101
    [a] = queries.artifacts(s2, rid)
    assert a.sha256 == "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"  # sha256("{}")
    assert queries.attempts(s2, cid, "B") == 1
    kinds = [e["kind"] for e in s2.events(cid)]
    assert kinds == ["conversion.created", "stage.finished"]
    assert s2.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    s2.close()


def test_events_are_append_only(store):
    store.log_event("note", None, text="hello")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.db.execute("update events set kind = 'forged'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.db.execute("delete from events")


def test_wrong_verdict_word_for_stage_is_refused():
    with pytest.raises(ValueError, match="not one of stage D"):
        StageResult(stage=Stage.HOST_CORRECTNESS, verdict="PASS")


def test_override_needs_reason_and_is_stored_as_override(store):
    cid = store.add_conversion("examples/matmul.py")
    with pytest.raises(UserError, match="needs a reason"):
        store.record_approval(cid, "deadbeef", "ana", "override")
    store.record_approval(cid, "deadbeef", "ana", "override", reason="perf gate flaky on this GPU")
    [a] = store.approvals(cid)
    assert a["decision"] == "override" and a["commit"] == "deadbeef" and a["reason"]


def test_unknown_conversion_is_a_user_error(store):
    with pytest.raises(UserError, match="no conversion 42"):
        store.record_stage(42, StageResult(stage=Stage.ANALYZE, verdict="PASS"))


def test_newer_schema_is_refused_not_guessed(tmp_path):
    path = tmp_path / "t.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(UserError, match="newer than this tileport"):
        Store(path)


def test_not_a_database_is_a_user_error(tmp_path):
    path = tmp_path / "t.db"
    path.write_text("this is not sqlite, it is a user's notes" * 100)
    with pytest.raises(UserError, match="not a tileport store"):
        Store(path)
    assert "user's notes" in path.read_text()  # nothing a user made is lost


def test_failed_stage_write_leaves_no_partial_rows(store):
    cid = store.add_conversion("examples/vector_add.py")
    bad = StageResult(stage=Stage.ANALYZE, verdict="PASS",
                      commands=[CommandRecord(argv=["x"], exit_code=0, seconds=0.1)])
    bad.commands[0].exit_code = None  # violates NOT NULL inside the transaction
    with pytest.raises(sqlite3.IntegrityError):
        store.record_stage(cid, bad)
    assert queries.stage_runs(store, cid) == []
    assert [e["kind"] for e in store.events(cid)] == ["conversion.created"]


def test_analyze_records_stage_a_in_the_store_and_status_reads_it(tmp_path, cli):
    """The CLI writes verdicts to the store; `tileport status` shows them (what the dashboard reads)."""
    op = Path(__file__).resolve().parents[2] / "examples" / "vector_add.py"
    r = cli("analyze", str(op), "--target", "sm_90", "--no-cubin", "--out", str(tmp_path / "va"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    broken = tmp_path / "broken.py"
    broken.write_text("import cuda.tile as ct\n@ct.kernel\ndef k(:\n")
    r = cli("analyze", str(broken), cwd=tmp_path)
    assert r.returncode == 2  # bad input: reported, and nothing is written, the store included
    r = cli("analyze", str(op), "--target", "sm_90", "--no-cubin", "--out", str(tmp_path / "va"), cwd=tmp_path)
    assert r.returncode == 0

    s = Store(tmp_path / ".tileport" / "tileport.db")
    rows = {c["op_path"]: c["id"] for c in s.conversions()}
    va_runs = queries.stage_runs(s, rows[str(op)])
    assert [(r.stage, r.attempt, r.verdict) for r in va_runs] == [("A", 1, "PASS"), ("A", 2, "PASS")]
    kinds = {a.kind for a in queries.artifacts(s, va_runs[-1].id)}
    assert {"analysis", "tileir_bytecode", "tileir_text"} <= kinds
    assert str(broken) not in rows
    s.close()

    st = cli("status", "--json", cwd=tmp_path)
    data = {row["op_path"]: row for row in json.loads(st.stdout)}
    assert data[str(op)]["stages"] == {"A": "PASS"}
    assert list(data) == [str(op)]


def test_conversion_update_moves_head_and_is_logged(store):
    cid = store.add_conversion("examples/softmax.py", "softmax_row_kernel")
    store.update_conversion(cid, head_commit="abc123", status="running")
    c = store.conversion(cid)
    assert (c["head_commit"], c["status"]) == ("abc123", "running") and c["updated_at"] >= c["created_at"]
    assert store.events(cid)[-1]["payload"] == {"head_commit": "abc123", "status": "running"}
    with pytest.raises(UserError, match="no conversion 99"):
        store.update_conversion(99, status="x")


def test_v1_store_migrates_to_pipeline_columns_without_losing_runs(tmp_path):
    """A store written by the previous tileport (schema v1) opens, keeps its runs, and gains the new columns."""
    import sqlite_utils

    from tileport.store import MIGRATIONS

    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    MIGRATIONS[0](db)
    db.execute("PRAGMA user_version = 1")
    db["conversions"].insert({"op_path": "op.py", "status": "pending", "created_at": "t", "updated_at": "t"})
    db["stage_runs"].insert({"conversion_id": 1, "stage": "A", "attempt": 1, "verdict": "PASS", "started_at": "t"})
    db.conn.close()

    s = Store(path)
    assert s.schema_version == SCHEMA_VERSION
    [run] = queries.stage_runs(s, 1)
    assert run.verdict == "PASS" and run.routed_to is None
    rid = s.record_stage(1, StageResult(stage=Stage.WRITE_KERNEL, verdict="COMPILED", cap=2,
                                        details={"self_check": "PASS"}), routed_to="D", route_reason="B COMPILED")
    run = queries.stage_runs(s, 1)[-1]
    assert (run.cap, run.routed_to, run.raw_details) == (2, "D", {"self_check": "PASS"})
    assert s.events(1)[-1]["payload"]["stage_run_id"] == rid
    s.close()


# --------------------------------------------------------------------------------- a store made by older code
OLD_STORE = Path(__file__).resolve().parents[1] / "data" / "stores" / "v3-main.db"  # written by main's code at bcdbecc (make_v3_store.py)


@pytest.fixture
def old_store(tmp_path):
    import shutil

    p = tmp_path / ".tileport" / "tileport.db"
    p.parent.mkdir()
    shutil.copy(OLD_STORE, p)
    return p


def test_a_store_written_by_older_code_reads_as_typed_rows(old_store):
    from tileport.records import PerfDetails, WriteKernelDetails
    from tileport.store import queries

    s = Store(old_store)
    try:
        rows = {c.op: c for c in queries.conversion_summaries(s)}
        va = rows["vector_add"]
        assert va.stages == {"A": "PASS", "B": "COMPILED", "D": "ALL_PASS", "E": "DONE"}
        assert va.attempts == {"A": 1, "B": 2, "D": 1, "E": 1} and va.approval == "approve"
        assert isinstance(va.perf, PerfDetails) and va.perf.worst == "n=1024 f32" and va.perf.worst_ratio == 1.15
        b = queries.stage_runs(s, va.id, "B")[-1]
        assert isinstance(b.details, WriteKernelDetails) and b.details.self_check == "PASS"
        assert s.conversion(va.id)["triton"] is None  # started before --triton was saved: stage A pairs by name
        assert [p.label for p in queries.ir_pairs(s, va.id)] == ["vector_add sm_90 f32"]
        perf = queries.newest_perf(s, va.id)
        assert [r.config for r in perf.rows] == ["n=1024 f32", "n=4096 f32"] and perf.rows[0].launch["ref"]
        assert [c["name"] for c in s.cases(queries.stage_runs(s, va.id, "D")[-1].id)] == ["f32 n=1024", "f16 n=4096"]
        # the one write path still writes into it: the next attempt is numbered in its transaction
        from tileport.store import record_run

        rec = record_run(s, va.id, StageResult(stage=Stage.ANALYZE, verdict="PASS"))
        assert rec.attempt == 2 and queries.conversion_summary(s, va.id).attempts["A"] == 2
    finally:
        s.close()


def test_status_judges_a_perf_run_by_the_config_max_recorded_with_it(old_store, cli):
    """The bug: the dashboard coloured an E run with today's [perf] config_max. The old store's E run was DONE
    with its slowest configuration at 1.15 under the bound recorded then (1.25); today's default is 1.10."""
    from tileport.config import Config
    from tileport.store import queries

    assert Config().perf.config_max < 1.15
    s = Store(old_store)
    try:
        va = queries.conversion_summaries(s)[0]
        assert va.slow(Config().perf.config_max) is False  # judged by the recorded 1.25
    finally:
        s.close()
    r = cli("status", "--json", cwd=old_store.parent.parent, env={"PYTHONPATH": str(Path(__file__).parents[2])})
    assert r.returncode == 0, r.stderr
    perf = json.loads(r.stdout)[0]["perf"]
    assert (perf["config_max"], perf["worst_ratio"], perf["slow"]) == (1.25, 1.15, False)


def _read_with_sql(path: Path) -> dict:
    """The figures the dashboard showed when it read the store with its own SQL (tui/view.py before it went through
    store.queries), read here independently of tileport, straight from the file."""
    import sqlite3

    db = sqlite3.connect(path)
    try:
        out = {}
        for cid, op_path, head in db.execute("select id, op_path, head_commit from conversions order by id"):
            runs = db.execute("select id, stage, verdict, fail_class, summary, details from stage_runs "
                              "where conversion_id = ? order by id", [cid]).fetchall()
            e = [json.loads(r[5] or "{}") for r in runs if r[1] == "E"]
            appr = db.execute("select decision, \"commit\" from approvals where conversion_id = ? order by id desc "
                              "limit 1", [cid]).fetchone()
            b = [json.loads(r[5] or "{}") for r in runs if r[1] == "B"]
            out[cid] = {
                "op": Path(op_path).stem, "head": head, "stage": runs[-1][1] if runs else None,
                "verdict": runs[-1][2] if runs else None, "fail_class": runs[-1][3] if runs else None,
                "summary": (runs[-1][4] or "") if runs else "",
                "attempts": {s: sum(1 for r in runs if r[1] == s) for s in {r[1] for r in runs}},
                "geomean": e[-1].get("geomean") if e else None, "worst": e[-1].get("worst_ratio") if e else None,
                "approval": appr, "run_ids": [r[0] for r in runs],
                "ir_labels": next(([p["label"] for p in d.get("ir_pairs", [])] for d in reversed(b)
                                   if d.get("ir_pairs")), []),
                "perf_rows": [(c, json.loads(launch or "{}")) for c, launch in db.execute(
                    "select config, launch from perf_rows where stage_run_id = ? order by id",
                    [[r[0] for r in runs if r[1] == "E"][-1]])] if e else [],
                "hw": e[-1].get("hw") if e else None,
            }
        out["events"] = db.execute("select id, conversion_id, kind from events order by id").fetchall()
        return out
    finally:
        db.close()


def test_the_dashboard_rows_show_the_figures_of_an_old_store(old_store):
    """The dashboard (tui/view.py, now a mapping of store.queries' typed rows) shows an old store's figures as they
    are in the file: conversion rows, timeline, perf view, IR pairs, events. Fails if the two ever diverge."""
    from tileport.tui import view

    want = _read_with_sql(old_store)
    s = Store(old_store)
    try:
        caps = {"A": 1, "B": 2, "C": 1, "D": 2, "E": 2, "F": 1}
        rows = view.conversion_rows(s, caps)
        assert [r.id for r in rows] == [k for k in want if k != "events"]
        for row in rows:
            w = want[row.id]
            assert (row.op, row.head_commit, row.stage, row.verdict, row.fail_class, row.summary, row.geomean,
                    row.worst) == (w["op"], w["head"], w["stage"], w["verdict"], w["fail_class"], w["summary"],
                                   w["geomean"], w["worst"])
            assert {k: n for k, (n, _) in row.attempts.items() if n} == w["attempts"]
            assert all(cap == caps[k] for k, (_, cap) in row.attempts.items())
            decision, commit = w["approval"] or (None, None)
            assert row.approval == view._approval_text(decision, commit, w["head"])
            assert [a.run_id for a in view.timeline(s, row.id)] == w["run_ids"]
            assert [p.label for p in view.ir_pairs(s, row.id)] == w["ir_labels"]
        va = rows[0]
        assert (va.op, va.geomean is not None, va.worst, va.approval) == ("vector_add", True, 1.15, "stale (approve)")
        pv = view.perf_view(s, 1, 1.05)
        assert [(r.config, r.launch) for r in pv.rows] == want[1]["perf_rows"] and pv.hardware == want[1]["hw"]
        assert (pv.geomean, pv.worst, pv.verdict) == (want[1]["geomean"], "n=1024 f32 (1.150)", "DONE")
        newest, touched, events = view.changed_conversions(s, 0)
        assert [(e["id"], e["conversion_id"], e["kind"]) for e in events] == [tuple(e) for e in want["events"]]
        assert newest == view.newest_event_id(s) == want["events"][-1][0]
        assert touched == {e[1] for e in want["events"]}
        assert all(isinstance(e["payload"], dict) for e in events)  # decoded by the store, not by the screens
    finally:
        s.close()


def test_a_store_opened_in_a_with_block_is_closed_when_the_block_ends_even_by_an_error(tmp_path):
    import sqlite3

    db = tmp_path / "s.db"
    with pytest.raises(RuntimeError), Store(db) as s:
        cid = s.add_conversion("ops/x.py", None)
        raise RuntimeError("the caller's own failure")
    with pytest.raises(sqlite3.ProgrammingError):  # closed: a closed connection refuses every statement
        s.conversion(cid)
    with Store(db) as again:  # what was written before the error is kept
        assert again.conversion(cid)["op_path"] == "ops/x.py"
