"""The runner driven by named fake stages (tests/fakes/stages.py) over a real git repository and a real store:
routing, commits, resume after a real kill -9 at each point of an attempt, and `--resume --model`."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import git
import pytest

from tests.conftest import REPO
from tests.fakes.stages import FAKE_STAGES, op_repo
from tileport import service
from tileport.config import Config
from tileport.store import Store, queries


@pytest.fixture
def repo(tmp_path):
    return op_repo(tmp_path / "proj")


END = [("A", 1, "PASS"), ("B", 1, "COMPILED"), ("D", 1, "FAIL"), ("D", 2, "ALL_PASS"), ("E", 1, "DONE")]


def _runner(repo, **kw):
    return service.runner(Config(), repo=repo, model=kw.pop("model", "none"), stages=FAKE_STAGES,
                          out=lambda line: None, **kw)


def _runs(repo, cid=1):
    s = service.open_store(Config(), repo)
    try:
        return [(r.stage, r.attempt, r.verdict, r.commit) for r in queries.stage_runs(s, cid)]
    finally:
        s.close()


def _trailers(repo, cid=1):
    g = git.Repo(repo)
    out = []
    for c in g.iter_commits(f"main..tileport/op-{cid}", reverse=True):
        t = dict(line.split(": ", 1) for line in c.message.splitlines() if line.startswith("Tileport-"))
        out.append((t["Tileport-Stage"], int(t["Tileport-Attempt"]), t["Tileport-Verdict"], c.hexsha))
    return out


def test_fake_stages_drive_the_real_runner_through_the_router_in_well_under_a_second_per_stage(repo):
    runner = _runner(repo)
    t0 = time.perf_counter()
    cid = service.start(runner, [repo / "op.py"], repo=repo)[0]
    finished = runner.drive(cid)
    took = time.perf_counter() - t0
    assert (finished.status, service.exit_code([finished])) == ("done", 0)
    runs = _runs(repo, cid)
    assert [(s, a, v) for s, a, v, _ in runs] == END
    assert runs == _trailers(repo, cid)  # one commit per attempt, the store agrees with git
    assert took < 5 * len(runs), took  # no real tools: git commits and SQLite only
    s = service.open_store(Config(), repo)
    try:  # every stage commit is a recorded command of its run (the one git adapter runs git through exec.proc)
        for run in queries.stage_runs(s, cid):
            argvs = [c.argv[:2] for c in queries.commands(s, run.id)]
            assert argvs == [["git", "add"], ["git", "commit"]] and \
                all(c.exit_code == 0 and c.cwd for c in queries.commands(s, run.id))
    finally:
        s.close()


@pytest.mark.parametrize("point", ["started:A:1", "ran:B:1", "committed:B:1", "recorded:B:1", "committed:D:2"])
def test_kill_9_at_any_point_then_resume_reaches_the_same_end_state(repo, point):
    store = service.store_path(Config(), repo)
    r = subprocess.run([sys.executable, "-m", "tests.fakes.stages", str(repo), str(store), point], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == -9, (r.returncode, r.stderr[-2000:])  # really killed by SIGKILL
    finished = _runner(repo).resume(1)
    assert finished.status == "done"
    got = _runs(repo)
    assert [x[:3] for x in got] == END, point  # same attempts, none repeated, none lost
    assert got == _trailers(repo)
    s = Store(store)
    try:
        recovered = [(e["payload"]["stage"], e["payload"]["attempt"]) for e in s.events(1)
                     if e["kind"] == "stage.recovered"]
    finally:
        s.close()
    _, stage, attempt = point.split(":")
    # killed between the commit and the store write: recorded from its commit, not run again
    assert recovered == ([(stage, int(attempt))] if point.startswith("committed") else [])


def test_resume_with_a_model_uses_that_model_and_records_it(repo):
    runner = _runner(repo, checkpoint=lambda at, stage, attempt: (_ for _ in ()).throw(KeyboardInterrupt())
                     if (at, stage) == ("recorded", "A") else None)
    cid = service.start(runner, [repo / "op.py"], repo=repo)[0]
    with pytest.raises(KeyboardInterrupt):  # stopped after A, as a Ctrl-C would
        runner.drive(cid)
    url = "http://127.0.0.1:9/v1"
    finished = service.resume(_runner(repo, model=url), cid)
    assert finished.status == "done"
    s = service.open_store(Config(), repo)
    try:
        runs = queries.stage_runs(s, cid)
        assert runs[0].details.writer == "none"  # A ran with the model the conversion started with
        assert {r.details.writer for r in runs[1:]} == {url}  # everything after the resume ran the model asked for
        assert s.conversion(cid)["model"] == url
    finally:
        s.close()
    # and without --model a resume keeps the stored one
    assert _runner(repo, model=None).model is None


def test_the_runner_has_no_module_level_stage_table():
    import tileport.pipeline.runner as runner_mod
    import tileport.pipeline.stages as stages_mod

    assert not hasattr(stages_mod, "STAGES") and "STAGES" not in vars(runner_mod)
    assert set(stages_mod.default_stages()) == set("ABCDEF")


def test_four_conversions_at_once_keep_the_store_and_git_consistent(repo):
    g = git.Repo(repo)
    for name in ("op2", "op3", "op4"):
        (repo / f"{name}.py").write_text("# another op\n")
    g.index.add(["op2.py", "op3.py", "op4.py"])
    g.index.commit("more ops", author=git.Actor("t", "t@t"), committer=git.Actor("t", "t@t"))
    runner = _runner(repo)
    finished = runner.run_many([(str(repo / f), None) for f in ("op.py", "op2.py", "op3.py", "op4.py")], repo=repo,
                               jobs=4)
    assert [f.status for f in finished] == ["done"] * 4 and service.exit_code(finished) == 0
    s = service.open_store(Config(), repo)
    try:
        rows = queries.conversion_summaries(s)
        assert len({r.branch for r in rows}) == 4
        for r in rows:
            assert [(x.stage, x.attempt, x.verdict) for x in queries.stage_runs(s, r.id)] == END
            kinds = [e["kind"] for e in s.events(r.id)]
            assert kinds.count("stage.started") == kinds.count("stage.finished") == len(END)
        assert s.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        s.close()
    for r in rows:
        op = Path(r.op_path).stem
        commits = [c for c in git.Repo(repo).iter_commits(f"main..{r.branch}")]
        assert len(commits) == len(END) and all(f"({op} #{r.id})" in c.message for c in commits)


def test_a_repair_beyond_the_cap_says_so_in_the_run_log(repo):
    """A's validator failed (FAIL_FIXABLE routes to the same stage once): the log line of that second attempt reads
    "A attempt 2/1 (repair)", not an attempt over its cap with no reason."""
    from tileport.records import Stage, StageResult, utcnow

    def stage_a(ctx):  # NAMED FAKE: stage A whose first output fails its validator, then passes
        verdict = "FAIL_FIXABLE" if ctx.attempt == 1 else "PASS"
        return StageResult(stage=Stage.ANALYZE, verdict=verdict, started_at=utcnow(), finished_at=utcnow(),
                           summary=f"fake A {verdict}")

    lines: list[str] = []
    runner = service.runner(Config(), repo=repo, model="none", stages={**FAKE_STAGES, "A": stage_a},
                            out=lines.append)
    cid = service.start(runner, [repo / "op.py"], repo=repo)[0]
    runner.drive(cid)
    assert [(s, a, v) for s, a, v, _ in _runs(repo, cid)][:2] == [("A", 1, "FAIL_FIXABLE"), ("A", 2, "PASS")]
    assert any(" A attempt 1/1: FAIL_FIXABLE" in ln for ln in lines), lines
    assert any(" A attempt 2/1 (repair): PASS" in ln for ln in lines), lines
