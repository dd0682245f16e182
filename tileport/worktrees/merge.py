"""The merge rule, and the merge itself.

A conversion branch merges into its target only when
- every required gate (gates.REQUIRED_GATES) is satisfied on the branch's exact HEAD, or overridden by a recorded
  override on that HEAD (enabled in config, with a reason; shown as an override, never as a pass);
- the newest decision on that HEAD is an approval (a decision on an older commit is stale; a rejection refuses);
- the target has not moved in a way that invalidates the gates: git merges target + branch (`merge-tree`) and the
  result must equal the tree the gates judged, except for paths in `[approval] base_ignore`; else rebase and re-run.
The merge commit (target + branch, carrying the gate summary in its message and trailers) is built first; the
target branch moves only by a compare-and-swap from the tip that was checked, under a repository lock.
A refusal changes nothing.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path, PurePosixPath

from tileport.config import Config
from tileport.errors import UserError
from tileport.records import ApprovalRecord, Decision, GateRecord, GateStatus, MergeOutcome, utcnow
from tileport.store import Store
from tileport.worktrees import _gitcli as g
from tileport.worktrees.approval import (PAST, approver_name, branch_head, conversion_repo, decision_for, evidence_roots,
                                         identity_env)
from tileport.worktrees.gates import evaluate_gates, geomean_of


def _ignored(path: str, patterns: list[str]) -> bool:
    """gitignore-style: a pattern without a slash matches the file name at any depth."""
    for pat in patterns:
        pat = pat.rstrip("/")
        if "/" not in pat:
            if fnmatch.fnmatchcase(PurePosixPath(path).name, pat):
                return True
        elif fnmatch.fnmatchcase(path, pat) or fnmatch.fnmatchcase(path, pat.removesuffix("/**") + "/*"):
            return True
    return False


def _target(conv: dict, into: str | None) -> str:
    target = into or conv.get("base_branch")
    if not target:
        raise UserError(f"conversion {conv['id']} records no base branch; pass --into BRANCH")
    return target.removeprefix("refs/heads/")


def _apply_overrides(gates: list[GateRecord], decision: ApprovalRecord | None) -> list[GateRecord]:
    if decision is None or decision.decision is not Decision.OVERRIDE:
        return gates
    out = []
    for gr in gates:
        if gr.name in decision.overrides and gr.status is not GateStatus.SATISFIED:
            gr = gr.model_copy(update={
                "status": GateStatus.OVERRIDDEN,
                "reason": f"{gr.status.value} ({gr.reason}); overridden by {decision.approver}: {decision.reason}"})
        out.append(gr)
    return out


def _merged_tree(repo: Path, target_tip: str, head: str) -> tuple[str | None, list[str]]:
    """(tree of target + branch, conflicting paths)."""
    if g.is_ancestor(repo, target_tip, head):
        return g.out(repo, "rev-parse", f"{head}^{{tree}}"), []
    res = g.git(repo, "merge-tree", "--write-tree", "--name-only", "--no-messages", target_tip, head, check=False)
    lines = res.stdout.splitlines()
    if res.returncode == 0:
        return lines[0].strip(), []
    if res.returncode == 1:
        return None, sorted({p for p in lines[1:] if p.strip()})
    raise g.GitError(f"git merge-tree failed: {(res.stderr or res.stdout).strip()[:200]}")


def check_merge(store: Store, config: Config, conversion_id: int, into: str | None = None) -> MergeOutcome:
    """The merge rule's answer for the branch as it is now; changes nothing (the dashboard shows this)."""
    conv, repo, branch = conversion_repo(store, conversion_id)
    target = _target(conv, into)
    if target == branch.removeprefix("refs/heads/"):
        raise UserError(f"cannot merge {branch} into itself; pass --into BRANCH")
    tip = g.rev(repo, g.branch_ref(target))
    if tip is None:
        raise UserError(f"target branch {target} does not exist in {repo}; pass --into BRANCH")
    outcome = MergeOutcome(conversion_id=conversion_id, merged=False, target=target, target_before=tip)
    if conv["status"] == "merged":
        outcome.refusals.append(f"conversion {conversion_id} is already merged")
        return outcome
    head = g.rev(repo, g.branch_ref(branch))
    if head is None:
        outcome.refusals.append(f"branch {branch} is missing")
        outcome.hint = "run `tileport worktrees recover`"
        return outcome
    outcome.head = head
    current, stale = decision_for(store, conversion_id, head)
    gates = _apply_overrides(evaluate_gates(store, repo, conversion_id, head, evidence_roots(conv, repo),
                               base=conv.get("base_commit")), current)
    outcome.gates, outcome.approval = gates, current
    outcome.geomean = geomean_of(store, gates)
    for gr in gates:
        if gr.status not in (GateStatus.SATISFIED, GateStatus.OVERRIDDEN):
            outcome.refusals.append(f"gate {gr.name} {gr.status.value} ({gr.reason})")
    if current is None:
        if stale is not None:
            outcome.refusals.append(f"approval stale ({stale.approver} {PAST[stale.decision]} {stale.commit[:10]}, "
                                    f"HEAD is {head[:10]})")
        else:
            outcome.refusals.append(f"approval missing (no approval of {head[:10]})")
    elif current.decision is Decision.REJECT:
        outcome.refusals.append(f"rejected by {current.approver} on {head[:10]}: {current.reason}")
    if g.is_ancestor(repo, head, tip):
        outcome.refusals.append(f"{target} already contains {head[:10]}")
        return outcome
    tree, conflicts = _merged_tree(repo, tip, head)
    if conflicts:
        outcome.refusals.append(f"base moved: {target} conflicts with the branch in {', '.join(conflicts[:3])}")
    elif tree is not None:
        moved = [p for p in g.changed_paths(repo, head, tree) if not _ignored(p, config.approval.base_ignore)]
        if moved:
            outcome.refusals.append(f"base moved: {target} changed {', '.join(moved[:3])}"
                                    f"{' (+%d more)' % (len(moved) - 3) if len(moved) > 3 else ''} since the gates ran")
    if any(r.startswith("base moved") for r in outcome.refusals):
        outcome.hint = f"`tileport merge {conversion_id} --rebase`, then re-run the gates on the new HEAD"
    elif any(r.startswith("gate ") for r in outcome.refusals):
        outcome.hint = f"re-run the gates on {head[:10]} (`tileport run --resume {conversion_id}`)"
    elif outcome.refusals:
        outcome.hint = f"`tileport approve {conversion_id}` after reviewing {head[:10]}"
    return outcome


def _fmt_gate(gr: GateRecord, geomean: float | None, config: Config) -> str:
    parts = [gr.verdict or "none", gr.status.value]
    if gr.name == "E" and geomean is not None:
        parts.append(f"geomean={geomean:.4f} max={config.perf.geomean_max:g}")
    if gr.stage_run_id:
        parts.append(f"run={gr.stage_run_id}")
    if gr.commit:
        parts.append(f"commit={gr.commit[:12]}")
    if gr.evidence_sha256:
        parts.append(f"evidence=sha256:{gr.evidence_sha256[:16]}")
    return " ".join(parts)


def merge_message(conv: dict, outcome: MergeOutcome, config: Config) -> str:
    op = conv.get("op_path") or ""
    if op and conv.get("repo") and Path(op).is_absolute() and Path(op).is_relative_to(conv["repo"]):
        op = Path(op).relative_to(conv["repo"]).as_posix()  # the repo's own path, not this machine's
    kernel = f" {conv['kernel']}" if conv.get("kernel") else ""
    gm = f", geomean {outcome.geomean:.4f}" if outcome.geomean is not None else ""
    verdicts = " ".join(f"{gr.name}:{gr.verdict or '-'}" for gr in outcome.gates)
    lines = [f"tileport: merge conversion #{conv['id']} ({op}{kernel}) into {outcome.target}", "",
             f"Gates on {outcome.head}: {verdicts}{gm}"]
    for gr in outcome.gates:
        lines.append(f"  {gr.name}: {_fmt_gate(gr, outcome.geomean, config)}"
                     + (f"  [{gr.reason}]" if gr.status is GateStatus.OVERRIDDEN else ""))
    a = outcome.approval
    if a is not None:
        lines.append(f"{PAST[a.decision].capitalize()} by {a.approver} at {a.ts}"
                     + (f": {a.comment}" if a.comment else ""))
    lines += ["", f"Tileport-Conversion: {conv['id']}", f"Tileport-Head: {outcome.head}"]
    if a is not None:
        lines.append(f"Tileport-Approval: {a.id} {a.decision.value} {a.approver} {a.ts}")
    for gr in outcome.gates:
        lines.append(f"Tileport-Gate-{gr.name}: {_fmt_gate(gr, outcome.geomean, config)}")
    if outcome.geomean is not None:
        lines.append(f"Tileport-Geomean: {outcome.geomean:.4f}")
    for gr in outcome.gates:
        if gr.status is GateStatus.OVERRIDDEN and a is not None:
            lines.append(f"Tileport-Override: {gr.name} by {a.approver}: {' '.join((a.reason or '').split())}")
    return "\n".join(lines) + "\n"


def merge(store: Store, config: Config, conversion_id: int, into: str | None = None) -> MergeOutcome:
    """Merge the conversion branch into its target if the merge rule allows it; else the refusal, nothing moved."""
    conv, repo, branch = conversion_repo(store, conversion_id)
    with g.repo_lock(repo):
        conv = store.conversion(conversion_id)
        outcome = check_merge(store, config, conversion_id, into)
        if outcome.refusals:
            return outcome
        tree, _ = _merged_tree(repo, outcome.target_before, outcome.head)
        env = identity_env(repo, approver_name(config))
        new = g.out(repo, "commit-tree", tree, "-p", outcome.target_before, "-p", outcome.head, "-F", "-",
                    input=merge_message(conv, outcome, config).encode(), env=env)
        checked_out = g.checked_out_at(repo, outcome.target)
        if checked_out is not None:
            # The target is someone's checkout: move it with its files, and only as a fast-forward to our commit.
            res = g.git(checked_out, "merge", "--ff-only", "--quiet", new, check=False, env=env)
            if not res.ok or g.rev(repo, g.branch_ref(outcome.target)) != new:
                why = (res.stderr.strip() or res.stdout.strip() or "it moved").splitlines()[0]
                outcome.refusals.append(f"{outcome.target} is checked out at {checked_out} and could not move: {why}")
                outcome.hint = "commit or stash the changes there, then merge again"
                return outcome
        else:
            res = g.git(repo, "update-ref", "-m", f"tileport: merge conversion #{conversion_id}",
                        g.branch_ref(outcome.target), new, outcome.target_before, check=False)
            if not res.ok:
                outcome.refusals.append(f"{outcome.target} moved while merging; nothing changed")
                outcome.hint = "merge again"
                return outcome
        outcome.merged, outcome.merge_commit = True, new
        store.update_conversion(conversion_id, status="merged", head_commit=outcome.head)
        store.log_event("conversion.merged", conversion_id, into=outcome.target, merge_commit=new,
                        head=outcome.head, target_before=outcome.target_before,
                        approval_id=outcome.approval.id if outcome.approval else None, geomean=outcome.geomean,
                        gates={gr.name: {"verdict": gr.verdict, "status": gr.status.value,
                                         "stage_run_id": gr.stage_run_id} for gr in outcome.gates})
        return outcome


def rebase(store: Store, config: Config, conversion_id: int, into: str | None = None) -> MergeOutcome:
    """Rebase the conversion branch (in its worktree) onto the target's tip, keeping the old HEAD under
    refs/tileport/pre-rebase/; the gates ran on the old commits, so they are stale afterwards by construction."""
    conv, repo, branch = conversion_repo(store, conversion_id)
    with g.repo_lock(repo):
        target = _target(conv, into)
        tip = g.rev(repo, g.branch_ref(target))
        if tip is None:
            raise UserError(f"target branch {target} does not exist in {repo}; pass --into BRANCH")
        head = branch_head(repo, conversion_id, branch)
        outcome = MergeOutcome(conversion_id=conversion_id, merged=False, target=target, target_before=tip,
                               head=head)
        if g.is_ancestor(repo, tip, head):
            outcome.hint = f"{branch} already sits on {target}'s tip; nothing to rebase"
            return outcome
        wt = g.checked_out_at(repo, branch)
        if wt is None or not wt.is_dir():
            outcome.refusals.append(f"branch {branch} has no worktree to rebase in")
            outcome.hint = "run `tileport worktrees recover`"
            return outcome
        if g.out(wt, "status", "--porcelain", "--untracked-files=no"):
            outcome.refusals.append(f"worktree {wt} has uncommitted changes")
            outcome.hint = "commit or stash them first"
            return outcome
        stamp = utcnow().strftime("%Y%m%dT%H%M%S%f")
        g.git(repo, "update-ref", f"refs/tileport/pre-rebase/{conversion_id}/{stamp}", head)
        env = identity_env(repo, approver_name(config))
        res = g.git(wt, "rebase", "--quiet", tip, check=False, env=env)
        if not res.ok:
            conflicts = g.out(wt, "diff", "--name-only", "--diff-filter=U").split()
            g.git(wt, "rebase", "--abort", check=False)
            outcome.refusals.append(f"rebase onto {target} conflicts in {', '.join(conflicts[:3]) or 'the branch'}")
            outcome.hint = f"resolve it by hand in {wt}; the branch is unchanged"
            return outcome
        new_head = branch_head(repo, conversion_id, branch)
        store.update_conversion(conversion_id, head_commit=new_head, base_commit=tip, base_branch=target)
        store.log_event("conversion.rebased", conversion_id, onto=tip, old_head=head, new_head=new_head)
        outcome.head = new_head
        outcome.hint = (f"rebased onto {target} {tip[:10]}; the gates ran on the old commits: re-run them "
                        f"(`tileport run --resume {conversion_id}`), approve {new_head[:10]}, then merge")
        return outcome
