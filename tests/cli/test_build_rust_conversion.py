"""`tileport build-rust --conversion ID`: stage B's gates on a person's committed edit of a conversion's kernel.rs,
built against the real cutile crates and recorded as a B run of that conversion on that exact commit (the tool's
own cargo argv and exit code, the diagnostics and the kernel as evidence, `source: human edit`); bad input is one
line and exit 2 with nothing recorded."""

from __future__ import annotations

import shutil
from pathlib import Path

import humanconv
import pytest
from gitconv import git

from tileport import service
from tileport.exec.sandbox import tool_argv
from tileport.records import details_of
from tileport.store import Store, queries

pytestmark = pytest.mark.slow

if shutil.which("cargo") is None:
    pytest.skip("cargo is not installed", allow_module_level=True)


@pytest.fixture
def conv(tmp_path):
    c = humanconv.make(tmp_path, tmp_path / "t.db")
    yield c
    c.store.close()


def test_a_broken_edit_is_recorded_as_a_failed_b_run_on_its_commit_with_its_cargo_command(conv, cli, tmp_path):
    humanconv.edit(conv, humanconv.BROKEN)
    r = cli("build-rust", "--conversion", str(conv.cid), "--commit", "--store", str(tmp_path / "t.db"))
    sha = conv.head()
    assert "Tileport-Human: edit" in git(conv.wt, "log", "-1", "--format=%B")
    if "BLOCKED" in r.stdout:
        pytest.skip(r.stdout.strip().splitlines()[-1])
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert "B attempt 2/2: FAIL_COMPILE (kernel)" in r.stdout and f"human edit {sha[:10]}" in r.stdout
    assert "no_such_tile" in r.stdout

    s = Store(tmp_path / "t.db")
    run = queries.stage_runs(s, conv.cid, "B")[-1]
    assert (run.verdict, run.fail_class, run.commit, run.attempt) == ("FAIL_COMPILE", "kernel", sha, 2)
    d = details_of("B", run.raw_details)
    assert d.source == "human edit" and "E0425" in d.error_codes
    assert run.routed_to == "B"  # the writer may take it from here (a fresh round of caps after a person's edit)
    cargo = [c for c in queries.commands(s, run.id) if Path(tool_argv(c.argv)[0]).name == "cargo"]
    assert [tool_argv(c.argv)[1] for c in cargo] == ["build"] and cargo[0].exit_code != 0
    arts = {a.kind: a for a in queries.artifacts(s, run.id)}
    assert "no_such_tile" in open(arts["kernel"].path).read()
    assert "cannot find value `no_such_tile`" in open(arts["diagnostics"].path).read()
    conversion = s.conversion(conv.cid)
    assert (conversion["head_commit"], conversion["status"]) == (sha, "pending")
    assert [e["kind"] for e in s.events(conv.cid) if e["kind"].startswith("stage.")][-2:] == \
        ["stage.started", "stage.finished"]
    assert service.edited_files(s, conv.cid) == []  # the gates left nothing uncommitted in the port
    summary = queries.conversion_summaries(s, [conv.cid])[0]  # what `tileport status` and the dashboard list
    assert (summary.stage, summary.verdict, summary.next) == ("B", "FAIL_COMPILE", "B")
    s.close()


def test_bad_input_is_one_line_and_records_nothing(conv, cli, tmp_path):
    db = str(tmp_path / "t.db")
    before = len(queries.stage_runs(conv.store, conv.cid))
    humanconv.edit(conv, humanconv.BROKEN)  # not committed
    for args, says in ((["--conversion", str(conv.cid)], "not committed; commit the edit first"),
                       (["--conversion", "99"], "no conversion 99"),
                       (["DIR", "--conversion", str(conv.cid)], "not both")):
        r = cli("build-rust", *args, "--store", db)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert len(queries.stage_runs(conv.store, conv.cid)) == before
