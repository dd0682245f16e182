"""Two processes deciding and merging at once, through the real CLI on one real repository and store."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gitconv import Conv, git
from tileport.store import Store


@pytest.fixture
def two(tmp_path):
    store = Store(tmp_path / "db" / "tileport.db")
    a = Conv(tmp_path, store, op="op")
    b = Conv(tmp_path, store, op="op", repo=a.repo)
    cfg = tmp_path / "tileport.toml"
    cfg.write_text(f'store = "{store.path}"\n')
    yield a, b, cfg
    store.close()


def _both(cfg, argv_a, argv_b):
    procs = [subprocess.Popen([sys.executable, "-m", "tileport", "--config", str(cfg), *argv], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for argv in (argv_a, argv_b)]
    return [(p.wait(timeout=120), *p.communicate()) for p in procs]


def _tileport_merges(repo):
    log = git(repo, "log", "--merges", "--format=%(trailers:key=Tileport-Conversion,valueonly)", "main")
    return [int(x) for x in log.split()]


def test_two_merges_of_one_conversion_merge_once(two):
    a, _, cfg = two
    a.all_pass()
    assert subprocess.run([sys.executable, "-m", "tileport", "--config", str(cfg), "approve", str(a.cid)],
                          capture_output=True).returncode == 0
    results = _both(cfg, ["merge", str(a.cid)], ["merge", str(a.cid)])
    codes = sorted(r[0] for r in results)
    assert codes == [0, 1], results
    loser = next(r for r in results if r[0] == 1)
    assert "already merged" in loser[2] or "already contains" in loser[2]
    assert _tileport_merges(a.repo) == [a.cid]
    assert git(a.repo, "rev-parse", "main^2") == a.head()
    assert a.store.conversion(a.cid)["status"] == "merged"


def test_two_conversions_merging_at_once_never_merge_past_a_moved_base(two):
    a, b, cfg = two
    for c in (a, b):
        c.all_pass()
        assert subprocess.run([sys.executable, "-m", "tileport", "--config", str(cfg), "approve", str(c.cid)],
                              capture_output=True).returncode == 0
    results = _both(cfg, ["merge", str(a.cid), "--json"], ["merge", str(b.cid), "--json"])
    outcomes = [json.loads(r[1]) for r in results]
    merged = [o for o in outcomes if o["merged"]]
    assert len(merged) == 1, outcomes  # the second saw the first's files on main: its gates no longer hold
    loser = next(o for o in outcomes if not o["merged"])
    assert any(r.startswith("base moved") for r in loser["refusals"])
    assert _tileport_merges(a.repo) == [merged[0]["conversion_id"]]
    statuses = {c.cid: a.store.conversion(c.cid)["status"] for c in (a, b)}
    assert sorted(statuses.values()) == ["merged", "running"]


def test_concurrent_approve_and_merge_agree_in_store_and_git(two):
    a, b, cfg = two
    a.all_pass()
    b.all_pass()
    results = _both(cfg, ["approve", str(a.cid)], ["approve", str(a.cid)])
    assert [r[0] for r in results] == [0, 0]
    rows = a.store.approvals(a.cid)
    note = git(a.repo, "notes", "--ref=refs/notes/tileport", "show", a.head())
    assert sorted(json.loads(line)["approval_id"] for line in note.splitlines() if line) == [r["id"] for r in rows]
    assert len(rows) == 2
    # an approval racing a merge of the same commit: either order is fine, the record must be consistent
    results = _both(cfg, ["approve", str(b.cid)], ["merge", str(b.cid), "--into", "main"])
    merged = results[1][0] == 0
    assert results[0][0] == 0
    assert merged == (_tileport_merges(b.repo) == [b.cid])
    assert merged == (a.store.conversion(b.cid)["status"] == "merged")
    if not merged:
        assert "approval missing" in results[1][2] or "base moved" in results[1][2]
