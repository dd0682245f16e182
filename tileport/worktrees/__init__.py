"""Git worktrees per conversion, commits, approvals and merges."""
