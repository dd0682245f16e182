"""The merge rule on a conversion the real pipeline made: `tileport run` (scripted writer, real cargo) commits A, B
and a BLOCKED D with its trailers into its own worktree; approve/merge must read exactly that."""

from __future__ import annotations

import json

import git
import pytest


from tests.e2e.test_pipeline import VECTOR_ADD, _gpu_gates, project, status, tileport  # noqa: F401  (fixture)
from tileport.records import Stage, StageResult
from tileport.store import Store
from tileport.worktrees.conversion import commit_stage, open_conversion_worktree

pytestmark = pytest.mark.heavy


@pytest.mark.slow
@pytest.mark.skipif(_gpu_gates(), reason="the GPU gates are installed: D is not BLOCKED(env) here")
def test_a_pipeline_conversion_is_refused_until_its_gates_pass_then_merges(project):  # noqa: F811
    r = tileport(project, "run", str(VECTOR_ADD), "--repo", str(project),
                 "--model", "scripted:pipeline_vector_add_rustc_fix")
    assert r.returncode == 3, r.stdout + r.stderr
    main_before = git.Repo(project).head.commit.hexsha

    r = tileport(project, "merge", "1")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "gate D unsatisfied (newest D run" in r.stderr and "is BLOCKED" in r.stderr
    assert "gate E missing" in r.stderr and "approval missing" in r.stderr
    assert "gate A" not in r.stderr and "gate B" not in r.stderr  # A and B stand: only stage commits came after
    assert git.Repo(project).head.commit.hexsha == main_before

    r = tileport(project, "approve", "1", "--json")  # refused while D and E are open; nothing recorded
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    seen = {g["name"]: g["status"] for g in out["gates"]}
    assert seen == {"A": "satisfied", "B": "satisfied", "D": "unsatisfied", "E": "missing"} and not out["approved"]
    assert status(project, 1)["approvals"] == []

    # NAMED FAKE: this CPU machine has no GPU gates, so D and E passes are written the way the pipeline writes a
    # stage attempt (its commit_stage, its trailers, a store row on that commit) to show the merge that follows.
    store = Store(project / ".tileport" / "tileport.db")
    try:
        wt = open_conversion_worktree(store.conversion(1))
        for stage, verdict, details in (("D", "ALL_PASS", {"fake": "no GPU here"}),
                                        ("E", "DONE", {"geomean": 0.991, "fake": "no GPU here"})):
            sha = commit_stage(wt, stage=stage, verdict=verdict, attempt=2 if stage == "D" else 1, op="vector_add")
            store.record_stage(1, StageResult(stage=Stage(stage), verdict=verdict, details=details), commit=sha)
            store.update_conversion(1, head_commit=sha)
        head = sha
    finally:
        store.close()

    r = tileport(project, "merge", "1")
    assert r.returncode == 1 and "approval missing" in r.stderr and "gate" not in r.stderr, r.stderr
    assert tileport(project, "approve", "1", "--comment", "fake D/E for the CPU test").returncode == 0
    r = tileport(project, "merge", "1")
    assert r.returncode == 0, r.stderr
    assert "A:PASS B:COMPILED D:ALL_PASS E:DONE, geomean 0.9910" in r.stdout
    g = git.Repo(project)
    assert g.head.commit.parents[1].hexsha == head and g.active_branch.name == "main"
    assert "Tileport-Geomean: 0.9910" in g.head.commit.message
    assert (project / "ports" / "vector_add" / "kernel.rs").is_file()  # the user's checkout moved with its files
    assert not g.is_dirty(untracked_files=True)
    assert status(project, 1)["conversion"]["status"] == "merged"

    r = tileport(project, "worktrees", "prune")
    assert r.returncode == 0 and "deleted branch tileport/vector_add-1" in r.stdout, r.stdout + r.stderr
    assert not wt.path.exists() and g.head.commit.parents[1].hexsha == head
