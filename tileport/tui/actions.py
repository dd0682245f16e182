"""What the dashboard can ask for, and why it may not: a thin seam to the runner and the approval rules.

The dashboard owns no pipeline logic. Every action here calls the same functions the CLI calls
(`tileport.agents.runner`, `tileport.worktrees.approval` / `merge`), and every "may I?" question is
answered by those layers too, so the dashboard and `tileport approve` refuse for the same reasons.
A read-only dashboard refuses everything that writes, and says so.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from tileport.config import Config
from tileport.errors import UserError

READONLY = "read-only dashboard (started with --readonly): use the CLI or a writable dashboard"

# action name -> (module, function) of the layer that owns it
_OWNERS: dict[str, tuple[str, str]] = {
    "start": ("tileport.agents.runner", "start_conversions"),
    "resume": ("tileport.agents.runner", "resume_conversion"),
    "stop": ("tileport.agents.runner", "stop_conversion"),
    "rerun": ("tileport.agents.runner", "rerun_stage"),
    "approve": ("tileport.worktrees.approval", "approve"),
    "reject": ("tileport.worktrees.approval", "reject"),
    "merge": ("tileport.worktrees.merge", "merge"),
}
# action name -> (module, function) answering "why not?" (None when allowed)
_CHECKS: dict[str, tuple[str, str]] = {
    "resume": ("tileport.agents.runner", "why_not_resume"),
    "stop": ("tileport.agents.runner", "why_not_stop"),
    "rerun": ("tileport.agents.runner", "why_not_rerun"),
    "approve": ("tileport.worktrees.approval", "why_not_approve"),
    "reject": ("tileport.worktrees.approval", "why_not_reject"),
    "merge": ("tileport.worktrees.merge", "why_not_merge"),
}
WRITES = set(_OWNERS)


def _resolve(spec: tuple[str, str]) -> Callable[..., Any] | None:
    module, name = spec
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


@dataclass
class Actions:
    """Bound to one store, config and repository; used from worker threads and the UI thread alike."""

    store_path: Path
    config: Config
    repo: Path | None = None
    readonly: bool = False

    def why_not(self, action: str, conversion_id: int | None = None, **kw: Any) -> str | None:
        """One line saying why `action` is not possible now, or None when it is."""
        if self.readonly and action in WRITES:
            return READONLY
        owner = _OWNERS.get(action)
        if owner is None:
            return f"unknown action {action!r}"
        if _resolve(owner) is None:
            return f"{action} is not available in this tileport ({owner[0]}.{owner[1]} missing)"
        check = _CHECKS.get(action)
        fn = _resolve(check) if check else None
        if fn is None or conversion_id is None:
            return None
        try:
            return fn(self.store_path, conversion_id, config=self.config, **kw)
        except UserError as e:
            return str(e)

    def do(self, action: str, *args: Any, **kw: Any) -> Any:
        """Run `action` through its owner (blocking: call it from a worker for long work)."""
        reason = self.why_not(action, args[0] if args and isinstance(args[0], int) else None)
        if reason:
            raise UserError(reason)
        fn = _resolve(_OWNERS[action])
        assert fn is not None
        return fn(self.store_path, *args, config=self.config, repo=self.repo, **kw)
