"""Human decisions bound to one commit: approve, reject (with a reason), override (enabled in config, with a reason).

Each decision is written twice, atomically with respect to each other: a row in the store's `approvals` table
(with the gate snapshot the person saw) and a JSON line in a git note on the commit under `refs/notes/tileport`,
so the branch carries its own review record. The store row is committed only after the note is written.
"""

from __future__ import annotations

import getpass
import json
from pathlib import Path

from tileport.config import Config
from tileport.errors import UserError
from tileport.records import ApprovalRecord, Decision, GateRecord, GateStatus
from tileport.records.exits import EXIT_FAILED
from tileport.store import Store, queries
from tileport.worktrees import _gitcli as g
from tileport.worktrees.gates import GATE_NAMES, evaluate_gates
from tileport.worktrees.git import identity_env  # noqa: F401  (re-exported: merge and lifecycle take it from here)


# How a decision reads in a sentence ("approved by ...").
PAST = {Decision.APPROVE: "approved", Decision.REJECT: "rejected", Decision.OVERRIDE: "approved with an override"}


def approver_name(config: Config) -> str:
    return (config.approval.name or "").strip() or getpass.getuser()


def conversion_repo(store: Store, conversion_id: int) -> tuple[dict, Path, str]:
    """The conversion row, its repository and its branch; one clear line when either is not there."""
    conv = store.conversion(conversion_id)
    if not conv.get("branch"):
        raise UserError(f"conversion {conversion_id} has no branch yet; start it with `tileport run`")
    for cand in (conv.get("repo"), conv.get("worktree")):
        if cand and Path(cand).is_dir():
            return conv, Path(cand), conv["branch"]
    raise UserError(f"conversion {conversion_id}: its repository {conv.get('repo') or conv.get('worktree')!s} "
                    f"is gone; `tileport worktrees recover` says what is left")


def branch_head(repo: Path, conversion_id: int, branch: str) -> str:
    head = g.rev(repo, g.branch_ref(branch))
    if head is None:
        raise UserError(f"conversion {conversion_id}: branch {branch} is missing; run `tileport worktrees recover`")
    return head


def evidence_roots(conv: dict, repo: Path) -> list[Path]:
    return [Path(p) for p in (conv.get("worktree"), str(repo)) if p]


def decisions(store: Store, conversion_id: int) -> list[ApprovalRecord]:
    """Every decision on the conversion, oldest first."""
    return queries.approvals(store, conversion_id)


def decision_for(store: Store, conversion_id: int, head: str) -> tuple[ApprovalRecord | None, ApprovalRecord | None]:
    """(the newest decision on `head`, the newest approval on another commit: stale once HEAD moved)."""
    current = stale = None
    for d in decisions(store, conversion_id):
        if d.commit == head:
            current = d
        elif d.decision is not Decision.REJECT:
            stale = d
    return current, stale


def notes_on(repo: str | Path, commit: str) -> list[dict]:
    """The tileport decisions attached to a commit (one JSON object per line of its note)."""
    res = g.git(repo, "notes", f"--ref={g.NOTES_REF}", "show", commit, check=False)
    if not res.ok:
        return []
    return [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]


class ApprovalRefused(Exception):
    """An approval the merge rule could never honour: required gates are open on the exact HEAD and no override
    (enabled in config, with a reason) covers them. Nothing was recorded. The CLI prints it as one line, exit 1."""

    exit_code = EXIT_FAILED

    def __init__(self, conversion_id: int, head: str, gates: list[GateRecord], refusals: list[str], hint: str):
        self.conversion_id, self.head, self.gates, self.refusals, self.hint = (conversion_id, head, gates,
                                                                               refusals, hint)
        super().__init__(str(self))

    def __str__(self) -> str:
        return (f"approve #{self.conversion_id} refused: {'; '.join(self.refusals)}"
                + (f"; next: {self.hint}" if self.hint else ""))

    def as_json(self) -> dict:
        return {"conversion_id": self.conversion_id, "approved": False, "head": self.head,
                "refusals": self.refusals, "hint": self.hint,
                "gates": [gr.model_dump(mode="json") for gr in self.gates]}


def open_gates(gates: list[GateRecord]) -> list[GateRecord]:
    """The required gates that do not let a merge of their HEAD through on their own (missing, failed, stale or
    with changed evidence): the same test the merge rule applies."""
    return [gr for gr in gates if gr.status is not GateStatus.SATISFIED]


def _approval_refusal(conversion_id: int, head: str, gates: list[GateRecord], decision: Decision,
                      overrides: list[str], config: Config, reason: str | None) -> ApprovalRefused | None:
    """Why an approval (or override) of `head` must not be recorded, or None. An approval stands only for a HEAD on
    which every required gate passed; an override must name (or, given only --reason, it takes) every open gate."""
    open_ = open_gates(gates)
    if decision is Decision.OVERRIDE:
        open_ = [gr for gr in open_ if gr.name not in overrides]
    if not open_:
        return None
    refusals = [f"gate {gr.name} {gr.status.value} ({gr.reason})" for gr in open_]
    if decision is Decision.OVERRIDE:
        hint = f"name every open gate in --override ({' '.join(sorted({*overrides, *(gr.name for gr in open_)}))})"
    elif any(gr.status in (GateStatus.STALE, GateStatus.MISSING, GateStatus.UNSATISFIED) for gr in open_):
        hint = f"run the gates on {head[:10]} (`tileport run --resume {conversion_id}`, `tileport gpu`)"
        if not config.approval.allow_override:
            hint += "; overrides are off ([approval] allow_override)"
        elif not reason:
            hint += "; or override them with --reason \"...\""
    else:
        hint = "re-run the gate whose evidence changed"
    return ApprovalRefused(conversion_id, head, gates, refusals, hint)


def decide(store: Store, config: Config, conversion_id: int, decision: Decision, *, comment: str | None = None,
           reason: str | None = None, overrides: list[str] | tuple[str, ...] = ()) -> ApprovalRecord:
    """Record a decision on the branch HEAD as it is now, with the gates as they are now.

    A rejection is always recorded (with a reason). An approval is recorded only when every required gate is
    satisfied on the exact HEAD; else `ApprovalRefused` and nothing is written. With overrides enabled in config
    and a reason, an approval of a HEAD with open gates becomes an override of exactly those gates (recorded as an
    override, never a pass); an explicit override must cover every open gate."""
    comment = (comment or "").strip() or None
    reason = (reason or "").strip() or None
    if decision is Decision.REJECT and not reason:
        raise UserError("a rejection needs a reason: pass --reason \"...\"")
    overrides = sorted({o.strip().upper() for o in overrides if o.strip()})
    if decision is Decision.OVERRIDE:
        if not config.approval.allow_override:
            raise UserError("overrides are off; enable them with `[approval] allow_override = true` in tileport.toml")
        if not reason:
            raise UserError("an override needs a reason: pass --reason \"...\"")
        if not overrides:
            raise UserError(f"name the gates to override: --override {' '.join(GATE_NAMES)}")
        unknown = [o for o in overrides if o not in GATE_NAMES]
        if unknown:
            raise UserError(f"no required gate {unknown[0]}; the gates are {', '.join(GATE_NAMES)}")
    conv, repo, branch = conversion_repo(store, conversion_id)
    who = approver_name(config)
    with g.repo_lock(repo):
        head = branch_head(repo, conversion_id, branch)
        gates = evaluate_gates(store, repo, conversion_id, head, evidence_roots(conv, repo),
                               base=conv.get("base_commit"))
        if decision is Decision.APPROVE and open_gates(gates) and reason and config.approval.allow_override:
            decision, overrides = Decision.OVERRIDE, [gr.name for gr in open_gates(gates)]
        if decision is Decision.OVERRIDE:
            passing = [gr.name for gr in gates if gr.name in overrides and gr.status is GateStatus.SATISFIED]
            if passing:
                raise UserError(f"gate {passing[0]} is satisfied on {head[:10]}; there is nothing to override")
        if decision is not Decision.REJECT:
            refused = _approval_refusal(conversion_id, head, gates, decision, overrides, config, reason)
            if refused is not None:
                raise refused
        if decision is Decision.APPROVE and reason:  # a plain approval has no reason: keep it as the comment
            comment, reason = comment or reason, None
        snapshot = {"head": head, "gates": [gr.model_dump(mode="json") for gr in gates], "overrides": overrides}
        status = "rejected" if decision is Decision.REJECT else "approved" if conv["status"] == "rejected" else None
        with store.deciding(conversion_id, head, who, decision.value, reason, comment=comment,
                            gate_snapshot=snapshot, status=status) as rec:
            note = {"approval_id": rec.id, "conversion_id": conversion_id, "decision": decision.value,
                    "approver": who, "ts": rec.ts, "commit": head, "comment": comment, "reason": reason,
                    "overrides": overrides,
                    "gates": [{"name": gr.name, "status": gr.status.value, "verdict": gr.verdict,
                               "stage_run_id": gr.stage_run_id, "evidence_sha256": gr.evidence_sha256}
                              for gr in gates]}
            g.git(repo, "notes", f"--ref={g.NOTES_REF}", "append", "-m", json.dumps(note, sort_keys=True), head,
                  env=identity_env(repo, who))
    return rec


def check_approval(store: Store, config: Config, conversion_id: int) -> ApprovalRefused | None:
    """Why a plain approval of the branch HEAD would be refused now, or None (records nothing; the dashboard asks)."""
    conv, repo, branch = conversion_repo(store, conversion_id)
    head = branch_head(repo, conversion_id, branch)
    gates = evaluate_gates(store, repo, conversion_id, head, evidence_roots(conv, repo), base=conv.get("base_commit"))
    return _approval_refusal(conversion_id, head, gates, Decision.APPROVE, [], config, None)


def approve(store: Store, config: Config, conversion_id: int, comment: str | None = None,
            reason: str | None = None) -> ApprovalRecord:
    """Approve HEAD; refused (`ApprovalRefused`) while a required gate is open, unless overrides are enabled and a
    `reason` is given: then it is recorded as an override of the open gates."""
    return decide(store, config, conversion_id, Decision.APPROVE, comment=comment, reason=reason)


def reject(store: Store, config: Config, conversion_id: int, reason: str) -> ApprovalRecord:
    return decide(store, config, conversion_id, Decision.REJECT, reason=reason)


def override(store: Store, config: Config, conversion_id: int, gates: list[str], reason: str,
             comment: str | None = None) -> ApprovalRecord:
    return decide(store, config, conversion_id, Decision.OVERRIDE, reason=reason, overrides=gates, comment=comment)
