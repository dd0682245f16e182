"""Approval bound to a commit and the merge rule, on real git repositories and a real SQLite store.

Every refusal is shown through the real CLI: one line naming the gate or approval, exit 1, target untouched.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gitconv import Conv, git
from tileport.config import Config, load_config
from tileport.records import ArtifactRecord, GateStatus, Stage, StageResult
from tileport.store import Store, queries
from tileport.worktrees import approval, merge
from tileport.worktrees.approval import notes_on


@pytest.fixture
def env(tmp_path):
    store = Store(tmp_path / "db" / "tileport.db")
    conv = Conv(tmp_path, store)
    cfg_path = tmp_path / "tileport.toml"
    cfg_path.write_text(f'store = "{store.path}"\n[approval]\nname = "Ada Reviewer"\n')
    yield conv, cfg_path
    store.close()


def tp(cfg, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "tileport", "--config", str(cfg), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def refused(cfg, conv, *needles):
    before, status = conv.main(), conv.store.conversion(conv.cid)["status"]
    r = tp(cfg, "merge", str(conv.cid))
    assert r.returncode == 1, r.stderr + r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tileport: merge #{conv.cid} refused:"), r.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    assert conv.main() == before, "a refused merge moved the target"
    assert conv.store.conversion(conv.cid)["status"] == status
    return lines[0]


def test_approve_then_merge_carries_gate_summary_and_approval(env):
    conv, cfg = env
    conv.all_pass()
    head = conv.head()
    r = tp(cfg, "approve", str(conv.cid), "--comment", "matches the reference", "--json")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert (rec["commit"], rec["approver"], rec["decision"]) == (head, "Ada Reviewer", "approve")
    assert [gr["status"] for gr in rec["gates"]] == ["satisfied"] * 4
    assert all(len(gr["evidence_sha256"]) == 64 for gr in rec["gates"])
    # the same decision is on the branch, as a git note on the approved commit
    [note] = notes_on(conv.repo, head)
    assert (note["approval_id"], note["approver"], note["comment"]) == (rec["id"], "Ada Reviewer",
                                                                        "matches the reference")
    row = conv.store.approvals(conv.cid)[0]
    assert json.loads(row["gate_snapshot"])["head"] == head

    r = tp(cfg, "merge", str(conv.cid))
    assert r.returncode == 0, r.stderr
    assert "A:PASS B:COMPILED D:ALL_PASS E:DONE, geomean 0.9700" in r.stdout
    main = conv.main()
    assert git(conv.repo, "rev-parse", "main^2") == head  # a real merge commit: target + branch
    trailers = git(conv.repo, "log", "-1", "--format=%(trailers:only,unfold)", "main")
    assert f"Tileport-Conversion: {conv.cid}" in trailers and f"Tileport-Head: {head}" in trailers
    assert "Tileport-Geomean: 0.9700" in trailers and "Tileport-Gate-D: ALL_PASS satisfied" in trailers
    assert f"Tileport-Approval: {rec['id']} approve Ada Reviewer" in trailers
    assert conv.store.conversion(conv.cid)["status"] == "merged"
    ev = [e for e in conv.store.events(conv.cid) if e["kind"] == "conversion.merged"]
    assert ev and ev[0]["payload"]["merge_commit"] == main
    # checked-out target moved with its files; merging again is refused and changes nothing
    assert (conv.repo / "evidence").is_dir() and not git(conv.repo, "status", "--porcelain")
    refused(cfg, conv, "already merged")


def test_missing_failed_and_self_check_gates_refuse(env):
    conv, cfg = env
    conv.run("A")
    conv.run("B", self_check="FAIL_FIXABLE")
    conv.run("D")
    conv.run("D", passing=False)  # newest D failed: an earlier pass does not count
    line = refused(cfg, conv, "gate B unsatisfied", "self_check is FAIL_FIXABLE", "gate D unsatisfied",
                   "is FAIL", "gate E missing (no E run)", "approval missing")
    assert "gate A" not in line


def test_new_commit_makes_gates_and_approval_stale(env):
    conv, cfg = env
    conv.all_pass()
    approved = conv.head()
    approval.approve(conv.store, load_config(cfg), conv.cid)
    conv.human_commit("kernel.rs")
    refused(cfg, conv, "gate A stale", "gate E stale", f"approval stale (Ada Reviewer approved {approved[:10]}",
            "is not a tileport stage commit")


def test_a_diagnosis_commit_keeps_gates_but_not_the_approval(env):
    conv, cfg = env
    conv.all_pass()
    approval.approve(conv.store, load_config(cfg), conv.cid)
    conv.stage_commit("C")  # evidence-only commit by a stage no gate depends on
    line = refused(cfg, conv, "approval stale")
    assert "gate" not in line.split("refused:")[1].split(";")[0]
    out = merge.check_merge(conv.store, Config(), conv.cid)
    assert [gr.status for gr in out.gates] == [GateStatus.SATISFIED] * 4


def test_a_writer_commit_makes_later_gates_stale(env):
    conv, cfg = env
    conv.all_pass()
    approval.approve(conv.store, load_config(cfg), conv.cid)
    conv.stage_commit("B", "kernel.rs")  # the kernel was rewritten after D and E judged it
    refused(cfg, conv, "gate D stale", "gate E stale", "stage B committed", "approval stale")


def test_rejection_refuses_and_needs_a_reason(env):
    conv, cfg = env
    conv.all_pass()
    r = tp(cfg, "reject", str(conv.cid))
    assert r.returncode == 2 and "--reason" in r.stderr
    r = tp(cfg, "reject", str(conv.cid), "--reason", "   ")
    assert r.returncode == 2 and r.stderr.strip() == 'tileport: error: a rejection needs a reason: pass --reason "..."'
    approval.approve(conv.store, load_config(cfg), conv.cid)
    r = tp(cfg, "reject", str(conv.cid), "--reason", "tile shape hard-coded")
    assert r.returncode == 0, r.stderr
    refused(cfg, conv, "rejected by Ada Reviewer", "tile shape hard-coded")
    assert [n["decision"] for n in notes_on(conv.repo, conv.head())] == ["approve", "reject"]


def test_approval_missing(env):
    conv, cfg = env
    conv.all_pass()
    refused(cfg, conv, f"approval missing (no approval of {conv.head()[:10]})")


def test_base_moved_refuses_then_rebase_and_rerun(env):
    conv, cfg = env
    conv.all_pass()
    old_head = conv.head()
    approval.approve(conv.store, load_config(cfg), conv.cid)
    conv.base_move("op.py")  # the op itself changed on main: every gate judged the old one
    refused(cfg, conv, "base moved: main changed op.py since the gates ran", "--rebase")
    r = tp(cfg, "merge", str(conv.cid), "--rebase")
    assert r.returncode == 0, r.stderr
    new_head = conv.head()
    assert new_head != old_head and git(conv.repo, "merge-base", "--is-ancestor", "main", new_head) == ""
    kept = git(conv.repo, "for-each-ref", "--format=%(objectname)", f"refs/tileport/pre-rebase/{conv.cid}")
    assert kept == old_head  # the pre-rebase commits are kept
    assert conv.store.conversion(conv.cid)["head_commit"] == new_head
    refused(cfg, conv, "gate A stale", "approval stale")
    for s in "ABDE":  # re-run the gates on the rebased branch, approve the new HEAD: now it merges
        conv.run(s)
    approval.approve(conv.store, load_config(cfg), conv.cid)
    assert tp(cfg, "merge", str(conv.cid)).returncode == 0


def test_docs_only_base_move_does_not_invalidate(env):
    conv, cfg = env
    conv.all_pass()
    approval.approve(conv.store, load_config(cfg), conv.cid)
    conv.base_move("CHANGES.md")
    r = tp(cfg, "merge", str(conv.cid))
    assert r.returncode == 0, r.stderr
    assert (conv.repo / "CHANGES.md").exists() and git(conv.repo, "rev-parse", "main^2") == conv.head()


def test_conflicting_base_move_refuses(env):
    conv, cfg = env
    conv.run("A")
    conv.run("B", commit=conv.stage_commit("B", "kernel.rs"))
    conv.run("D")
    conv.run("E")
    approval.approve(conv.store, load_config(cfg), conv.cid)
    conv.base_move("kernel.rs")
    refused(cfg, conv, "base moved: main conflicts with the branch in kernel.rs")
    r = tp(cfg, "merge", str(conv.cid), "--rebase")
    assert r.returncode == 1 and "conflicts in kernel.rs" in r.stderr and "branch is unchanged" in r.stderr


def test_changed_evidence_is_an_error_not_a_pass(env):
    conv, cfg = env
    for s in "ABD":
        conv.run(s)
    report = conv.wt / "perf.json"
    report.write_text('{"geomean": 0.97}')
    git(conv.wt, "add", "perf.json")
    conv.store.record_stage(conv.cid, StageResult(stage=Stage.PERFORMANCE, verdict="DONE",
                                                  artifacts=[ArtifactRecord.of("perf", report)],
                                                  details={"geomean": 0.97}), commit=conv.stage_commit("E"))
    approval.approve(conv.store, load_config(cfg), conv.cid)
    # the store keeps its own read-only copy of the evidence; someone rewrites it after the run
    [art] = queries.artifacts(conv.store, queries.stage_runs(conv.store, conv.cid, "E")[-1].id)
    pinned = Path(art.path)
    assert pinned != report and pinned.read_text() == '{"geomean": 0.97}'
    pinned.chmod(0o644)
    pinned.write_text('{"geomean": 0.5}')
    refused(cfg, conv, "gate E error (evidence", "perf.json changed since run")


def test_override_is_off_by_default_needs_a_reason_and_is_recorded_as_override(env, tmp_path):
    conv, cfg = env
    for s in "ABE":
        conv.run(s)
    r = tp(cfg, "approve", str(conv.cid), "--override", "D", "--reason", "no GPU here")
    assert r.returncode == 2 and "allow_override = true" in r.stderr
    on = tmp_path / "on.toml"
    on.write_text(cfg.read_text() + "allow_override = true\n")
    assert tp(on, "approve", str(conv.cid), "--override", "D").returncode == 2
    r = tp(on, "approve", str(conv.cid), "--override", "A", "--reason", "x")
    assert r.returncode == 2 and "gate A is satisfied" in r.stderr
    r = tp(on, "approve", str(conv.cid), "--override", "D", "--reason", "D ran on the H200 by hand", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["decision"] == "override"
    r = tp(on, "merge", str(conv.cid), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert {gr["name"]: gr["status"] for gr in out["gates"]}["D"] == "overridden"  # never "satisfied"
    trailers = git(conv.repo, "log", "-1", "--format=%(trailers:only,unfold)", "main")
    assert "Tileport-Override: D by Ada Reviewer: D ran on the H200 by hand" in trailers
    assert "Tileport-Gate-D: none overridden" in trailers


def test_dirty_checked_out_target_is_left_alone(env):
    conv, cfg = env
    conv.run("A", commit=conv.stage_commit("A", "README.md"))
    for s in "BDE":
        conv.run(s)
    approval.approve(conv.store, load_config(cfg), conv.cid)
    (conv.repo / "README.md").write_text("the user's unsaved edit\n")
    line = refused(cfg, conv, "main is checked out at", "could not move", "commit or stash")
    assert (conv.repo / "README.md").read_text() == "the user's unsaved edit\n"
    assert line


def test_unknown_conversion_and_branchless_conversion_are_one_line(env):
    conv, cfg = env
    r = tp(cfg, "merge", "99")
    assert r.returncode == 2 and r.stderr.strip() == "tileport: error: no conversion 99; `tileport status` lists them"
    cid = conv.store.add_conversion("other.py")
    r = tp(cfg, "approve", str(cid))
    assert r.returncode == 2 and "has no branch yet" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_misspelt_approval_key_is_one_line(env, tmp_path):
    conv, cfg = env
    bad = tmp_path / "bad.toml"
    bad.write_text(cfg.read_text() + "allow_overide = true\n")
    r = tp(bad, "merge", str(conv.cid))
    assert r.returncode == 2 and "unknown key 'approval.allow_overide'" in r.stderr


def test_a_runs_own_evidence_commit_after_the_judged_commit_keeps_it_fresh(env):
    conv, cfg = env
    for s in "ABD":
        conv.run(s)
    judged = conv.head()
    conv.run("E", commit=judged)  # E judged HEAD, attempt 1 ...
    conv.stage_commit("E", attempt=1)  # ... then committed its own evidence as attempt 1: not a change
    assert [gr.status for gr in merge.check_merge(conv.store, load_config(cfg), conv.cid).gates] == \
        [GateStatus.SATISFIED] * 4
    conv.stage_commit("E", attempt=2)  # another E attempt's commit is a change the first run did not judge
    gates = merge.check_merge(conv.store, load_config(cfg), conv.cid).gates
    assert gates[3].status is GateStatus.STALE and gates[2].status is GateStatus.SATISFIED


def test_merge_into_another_branch_leaves_main_alone(env):
    conv, cfg = env
    conv.all_pass()
    approval.approve(conv.store, load_config(cfg), conv.cid)
    r = tp(cfg, "merge", str(conv.cid), "--into", "release")
    assert r.returncode == 2 and r.stderr.strip() == \
        f"tileport: error: target branch release does not exist in {conv.repo}; pass --into BRANCH"
    git(conv.repo, "branch", "release", "main")
    main = conv.main()
    r = tp(cfg, "merge", str(conv.cid), "--into", "release", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["target"] == "release" and conv.main() == main
    assert git(conv.repo, "rev-parse", "release^2") == conv.head()


# ------------------------------------------------------------------------- approve: the merge rule's gates, up front


def approve_refused(cfg, conv, *needles, args=()):
    """`tileport approve` refused: one line naming each open gate, exit 1, nothing in the store or the git notes."""
    rows, head = len(conv.store.approvals(conv.cid)), conv.head()
    r = tp(cfg, "approve", str(conv.cid), *args)
    assert r.returncode == 1, r.stderr + r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tileport: approve #{conv.cid} refused: gate "), r.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    assert len(conv.store.approvals(conv.cid)) == rows and len(notes_on(conv.repo, head)) == rows
    return lines[0]


def test_approve_refuses_while_gates_are_open_on_head(env):
    conv, cfg = env
    conv.run("A")
    conv.run("B", self_check="FAIL_FIXABLE")
    line = approve_refused(cfg, conv, "gate B unsatisfied", "self_check is FAIL_FIXABLE", "gate D missing (no D run)",
                           "gate E missing (no E run)", "overrides are off")
    assert "gate A" not in line
    r = tp(cfg, "approve", str(conv.cid), "--json")
    assert r.returncode == 1 and r.stderr == ""
    out = json.loads(r.stdout)
    assert out["approved"] is False and out["head"] == conv.head()
    assert [x.split(" (")[0] for x in out["refusals"]] == ["gate B unsatisfied", "gate D missing", "gate E missing"]
    assert {g["name"]: g["status"] for g in out["gates"]} == {"A": "satisfied", "B": "unsatisfied", "D": "missing",
                                                               "E": "missing"}
    assert conv.store.approvals(conv.cid) == []
    conv.run("B")
    conv.run("D")
    conv.run("E")  # every gate passed on HEAD: now the same command records the approval
    r = tp(cfg, "approve", str(conv.cid), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["decision"] == "approve"


def test_approve_on_a_stale_head_is_refused(env):
    conv, cfg = env
    conv.all_pass()
    conv.human_commit("kernel.rs")  # every gate passed on the commit before: none judged this HEAD
    approve_refused(cfg, conv, "gate A stale", "gate B stale", "gate D stale", "gate E stale",
                    "is not a tileport stage commit", f"run the gates on {conv.head()[:10]}")
    refused(cfg, conv, "gate A stale", "approval missing")


def test_an_override_needs_config_and_a_reason_and_is_recorded_as_override(env, tmp_path):
    conv, cfg = env
    for s in "AB":
        conv.run(s)
    # overrides off (the default): a reason does not turn the approval into one
    approve_refused(cfg, conv, "gate D missing", "gate E missing", "overrides are off",
                    args=("--reason", "the H200 run is attached to the ticket"))
    on = tmp_path / "on.toml"
    on.write_text(cfg.read_text() + "allow_override = true\n")
    approve_refused(on, conv, "gate D missing", "or override them with --reason")  # enabled, but no reason
    # an explicit override must cover every open gate: E left open is named
    line = approve_refused(on, conv, "gate E missing", "name every open gate in --override (D E)",
                           args=("--override", "D", "--reason", "ran by hand"))
    assert "gate D" not in line
    r = tp(on, "approve", str(conv.cid), "--reason", "the H200 run is attached to the ticket", "--json")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert (rec["decision"], rec["overrides"], rec["reason"]) == ("override", ["D", "E"],
                                                                  "the H200 run is attached to the ticket")
    assert {g["name"]: g["status"] for g in rec["gates"]} == {"A": "satisfied", "B": "satisfied", "D": "missing",
                                                              "E": "missing"}  # what the person saw: not passes
    [note] = notes_on(conv.repo, conv.head())
    assert note["decision"] == "override" and note["overrides"] == ["D", "E"]
    r = tp(on, "merge", str(conv.cid), "--json")
    assert r.returncode == 0, r.stderr
    assert {g["name"]: g["status"] for g in json.loads(r.stdout)["gates"]} == {
        "A": "satisfied", "B": "satisfied", "D": "overridden", "E": "overridden"}
    trailers = git(conv.repo, "log", "-1", "--format=%(trailers:only,unfold)", "main")
    assert "Tileport-Override: D by Ada Reviewer: the H200 run is attached to the ticket" in trailers
    assert "Tileport-Gate-E: none overridden" in trailers and "satisfied" not in trailers.split("Gate-D")[1][:30]


def test_ingest_refuses_results_made_for_a_commit_the_branch_has_left(env, tmp_path):
    """The branch moved by a commit the store has not seen (a human edit): results for the old HEAD are refused."""
    conv, cfg = env
    for s in "AB":
        conv.run(s)
    judged = conv.head()
    conv.store.update_conversion(conv.cid, head_commit=judged)
    conv.human_commit("kernel.rs")
    # NAMED FAKE: only the header `tileport gpu run` writes; the refusal comes before any case is read
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"gate": {"conversion_id": conv.cid, "commit": judged}, "cases": []}))
    runs = len(queries.stage_runs(conv.store, conv.cid))
    r = tp(cfg, "gate", "ingest", str(results))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"results are for commit {judged[:12]}, conversion {conv.cid} is at {conv.head()[:12]}" in r.stderr
    assert len(queries.stage_runs(conv.store, conv.cid)) == runs
