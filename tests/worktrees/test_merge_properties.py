"""Property tests of the merge rule over random sequences of stage results, new commits, approvals, rejections,
base moves, rebases and merges, each on a fresh REAL git repository and store.

The oracle below is the rule stated independently over the sequence (not over git): a merge must succeed exactly
when every required gate's newest run passed on a commit no later change invalidated, the newest decision on HEAD
is an approval, and the target moved only in ignored paths since the branch's base; an approval is recorded exactly
when every gate stands for HEAD (else refused, nothing written). After every step: no commit ever made is lost, a refused merge left the target where it was, and the store and git agree.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings, strategies as st

from gitconv import Conv, git
from tileport.config import Config
from tileport.store import Store
from tileport.worktrees import approval, lifecycle, merge
from tileport.worktrees.approval import notes_on
from tileport.worktrees.gates import REQUIRED_GATES

SURVIVES = {s.name: s.survives for s in REQUIRED_GATES}

ops = st.one_of(
    st.tuples(st.just("run"), st.sampled_from("ABCDE"), st.booleans()),
    st.tuples(st.just("rerun"), st.sampled_from("ABDE"), st.booleans()),  # a run on HEAD, no new commit
    st.just(("all_pass",)),
    st.just(("human",)),
    st.just(("approve",)),
    st.just(("reject",)),
    st.tuples(st.just("move"), st.sampled_from(["code", "docs"])),
    st.just(("rebase",)),
    st.just(("merge",)),
    st.just(("dirty",)),  # work left uncommitted in the worktree (a crash before the commit)
    st.just(("recover",)),  # `tileport worktrees recover`: saves it on a rescue branch, cleans the worktree
)


@dataclass
class Model:
    commits: list[tuple[str, str]]  # (sha, kind) from the branch's base: kind "base", "human" or a stage letter
    runs: dict[str, tuple[bool, str]] = field(default_factory=dict)  # gate -> newest (passed, commit)
    decisions: dict[str, str] = field(default_factory=dict)  # commit -> newest decision
    code_moved: bool = False
    merged: bool = False

    def fresh(self, gate: str, head: str) -> bool:
        if gate not in self.runs or not self.runs[gate][0]:
            return False
        commit = self.runs[gate][1]
        shas = [c for c, _ in self.commits]
        if commit not in shas:
            return False
        later = self.commits[shas.index(commit) + 1:]
        return all(kind in SURVIVES[gate] for _, kind in later)

    def may_merge(self, head: str) -> bool:
        return (all(self.fresh(gr, head) for gr in SURVIVES) and self.decisions.get(head) == "approve"
                and not self.code_moved and len(self.commits) > 1)


def _record(conv: Conv, stage: str, passed: bool, commit: str) -> None:
    conv.run(stage, passing=passed, commit=commit)


def _all_shas(repo: Path) -> set[str]:
    return set(git(repo, "rev-list", "--all").split())


def _check_agreement(conv: Conv, model: Model, made: set[str], dirty: dict[str, str]) -> None:
    assert made <= _all_shas(conv.repo), "a commit was lost"
    for name, text in dirty.items():  # uncommitted work is in the worktree or in some commit, never gone
        f = conv.wt / name
        assert (f.is_file() and f.read_text() == text) or git(conv.repo, "log", "--all", "--format=%H", "-S", text), name
    row = conv.store.conversion(conv.cid)
    head = conv.head()
    assert row["head_commit"] == head
    in_main = conv.contains("main", head)
    assert (row["status"] == "merged") == (in_main and len(model.commits) > 1)
    by_commit: dict[str, list[tuple[int, str]]] = {}
    for a in conv.store.approvals(conv.cid):
        by_commit.setdefault(a["commit"], []).append((a["id"], a["decision"]))
    for commit, rows in by_commit.items():
        assert [(n["approval_id"], n["decision"]) for n in notes_on(conv.repo, commit)] == rows


# Half the sequences steer towards a merge (gates pass, some ops, approve, merge) so both answers get exercised.
sequences = st.one_of(
    st.lists(ops, min_size=1, max_size=10),
    st.builds(lambda pre, mid: pre + [("all_pass",)] + mid + [("approve",), ("merge",)],
              st.lists(ops, max_size=4), st.lists(ops, max_size=2)),
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sequences)
def test_no_sequence_merges_past_a_failed_missing_or_stale_gate(sequence):
    cfg = Config()
    cfg.approval.name = "prop"
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "t.db")
        conv = Conv(Path(tmp), store)
        model = Model(commits=[(conv.base, "base")])
        made = {conv.base}
        dirty: dict[str, str] = {}
        try:
            for op in sequence:
                kind = op[0]
                if model.merged and kind != "merge":
                    continue
                if kind == "run":
                    sha = conv.stage_commit(op[1])
                    model.commits.append((sha, op[1]))
                    _record(conv, op[1], op[2], sha)
                    if op[1] != "C":
                        model.runs[op[1]] = (op[2], sha)
                elif kind == "rerun":
                    _record(conv, op[1], op[2], conv.head())
                    model.runs[op[1]] = (op[2], conv.head())
                elif kind == "all_pass":
                    for s in "ABDE":
                        sha = conv.stage_commit(s)
                        model.commits.append((sha, s))
                        _record(conv, s, True, sha)
                        model.runs[s] = (True, sha)
                elif kind == "human":
                    sha = conv.human_commit(f"src{len(model.commits)}.rs")
                    model.commits.append((sha, "human"))
                    conv.store.update_conversion(conv.cid, head_commit=sha)
                elif kind == "approve":  # recorded only when every gate stands for HEAD; else nothing written
                    head, rows = conv.head(), len(store.approvals(conv.cid))
                    fresh = all(model.fresh(gr, head) for gr in SURVIVES)
                    try:
                        approval.approve(store, cfg, conv.cid)
                    except approval.ApprovalRefused as e:
                        event("approve refused")
                        assert not fresh, (str(e), model)
                        assert len(store.approvals(conv.cid)) == rows
                    else:
                        assert fresh, model
                        model.decisions[head] = kind
                elif kind == "reject":
                    approval.reject(store, cfg, conv.cid, "property test")
                    model.decisions[conv.head()] = kind
                elif kind == "move":
                    made.add(conv.base_move("lib.py" if op[1] == "code" else "NOTES.md"))
                    model.code_moved |= op[1] == "code"
                elif kind == "dirty":
                    name, text = f"wip-{len(dirty)}.txt", f"unsaved thought {len(dirty)} {tmp}"
                    (conv.wt / name).write_text(text)
                    dirty[name] = text
                elif kind == "recover":
                    head = conv.head()
                    lifecycle.recover(store, cfg, lock_age_s=60)
                    assert conv.head() == head and not git(conv.wt, "status", "--porcelain")
                elif kind == "rebase":
                    before = conv.head()
                    out = merge.rebase(store, cfg, conv.cid)
                    assert not out.refusals, out.refusals
                    head = conv.head()
                    if head != before:
                        new = git(conv.repo, "rev-list", "--reverse", f"main..{head}").split()
                        kinds = [k for _, k in model.commits[1:]]
                        model.commits = [(conv.main(), "base")] + list(zip(new, kinds))
                        model.code_moved = False
                elif kind == "merge":
                    head, target = conv.head(), conv.main()
                    expected = model.may_merge(head) and not model.merged
                    out = merge.merge(store, cfg, conv.cid)
                    event(f"merge {'merged' if out.merged else 'refused'}")
                    assert out.merged == expected, (out.refusals, model)
                    if out.merged:
                        model.merged = True
                        assert git(conv.repo, "rev-parse", "main^1", "main^2").split() == [target, head]
                    else:
                        assert out.refusals and conv.main() == target
                made.update(c for c, _ in model.commits)
                _check_agreement(conv, model, made, dirty)
        finally:
            store.close()
