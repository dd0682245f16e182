"""A person's decisions on a conversion's HEAD: approve (or override open gates), reject, merge, rebase, and the
refusals the merge rule makes (`refusal`: what the dashboard shows before it offers a decision; `tileport approve`
and `merge` refuse for the same reasons). The rules themselves live in `tileport.worktrees.approval` / `merge`."""

from __future__ import annotations

from tileport.config import Config
from tileport.errors import UserError
from tileport.store import Store
from tileport.worktrees.approval import PAST, ApprovalRefused, approve, check_approval, override, reject
from tileport.worktrees.merge import check_merge, merge, rebase

__all__ = ["PAST", "ApprovalRefused", "approve", "check_approval", "override", "reject", "check_merge", "merge",
           "rebase", "refusal"]


def refusal(store: Store, config: Config, action: str, conversion_id: int) -> str | None:
    """Why `action` (approve / reject / merge) would be refused on the conversion's HEAD now, in one line; None when
    it would go through. A rejection is recorded whatever the gates say; an approval is refused while a gate is
    open; a merge needs every gate passed on HEAD and that HEAD approved."""
    if action == "reject":
        return None
    try:
        if action == "approve":
            refused = check_approval(store, config, conversion_id)
            return None if refused is None else "; ".join(refused.refusals)
        outcome = check_merge(store, config, conversion_id)
    except UserError as e:
        return str(e)
    return "; ".join(outcome.refusals) if outcome.refusals else None
