"""The user's repository, through gitpython: open it, check it is safe to branch from, and take snapshots.

Every refusal is a `UserError` (one line, exit 2) raised before anything is changed.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import git

from tileport.errors import UserError

# Used only when the repository has no identity configured (a fresh CI checkout); a user's own identity wins.
FALLBACK_IDENTITY = {"GIT_AUTHOR_NAME": "tileport", "GIT_AUTHOR_EMAIL": "tileport@localhost",
                     "GIT_COMMITTER_NAME": "tileport", "GIT_COMMITTER_EMAIL": "tileport@localhost"}


def open_repo(path: str | Path) -> git.Repo:
    p = Path(path)
    if not p.exists():
        raise UserError(f"{p}: no such directory; pass --repo DIR of a git repository")
    try:
        repo = git.Repo(p, search_parent_directories=True)
    except git.InvalidGitRepositoryError:
        raise UserError(f"{p} is not inside a git repository; run `git init` there or pass --repo DIR") from None
    except git.NoSuchPathError:
        raise UserError(f"{p}: no such directory; pass --repo DIR of a git repository") from None
    if repo.bare:
        raise UserError(f"{p} is a bare repository; pass --repo DIR of a checkout")
    return repo


@dataclass(frozen=True)
class BaseRef:
    root: Path
    branch: str
    commit: str


def check_branchable(repo: git.Repo) -> BaseRef:
    """The branch and commit a conversion starts from, or a one-line refusal (no commit, detached, dirty)."""
    root = Path(repo.working_tree_dir)
    try:
        head = repo.head.commit.hexsha
    except ValueError:
        raise UserError(f"{root} has no commits yet; commit the op first (git add OP.py && git commit)") from None
    if repo.head.is_detached:
        raise UserError(f"{root}: HEAD is detached at {head[:10]}; check out a branch first (git switch BRANCH)")
    if repo.is_dirty(index=True, working_tree=True, untracked_files=False):
        changed = [d.a_path for d in repo.index.diff(None)] + [d.a_path for d in repo.index.diff("HEAD")]
        some = ", ".join(sorted(set(changed))[:3]) or "tracked files"
        raise UserError(f"{root} has uncommitted changes ({some}); commit or stash them first, "
                        "so the conversion's base commit is what you see")
    return BaseRef(root, repo.active_branch.name, head)


def branch_exists(repo: git.Repo, name: str) -> bool:
    return any(h.name == name for h in repo.heads)


def snapshot(repo: git.Repo) -> tuple[str, str]:
    """(HEAD commit, checked-out branch) of a checkout, read from the ref files (no git process, ~2 ms): a stage
    must leave the parent checkout where it was. A commit, checkout, reset, merge or rebase run in the parent
    moves one of them; reading `git status` instead would cost a process per check and trip over the index
    refresh any `git status` the user runs meanwhile does."""
    head = repo.head
    detached = head.is_detached
    return head.commit.hexsha, "" if detached else head.reference.path


def identity_env(repo: git.Repo) -> dict[str, str]:
    env = {}
    reader = repo.config_reader()
    if not (os.environ.get("GIT_AUTHOR_NAME") or reader.get_value("user", "name", "")):
        env.update({k: v for k, v in FALLBACK_IDENTITY.items() if "NAME" in k})
    if not (os.environ.get("GIT_AUTHOR_EMAIL") or reader.get_value("user", "email", "")):
        env.update({k: v for k, v in FALLBACK_IDENTITY.items() if "EMAIL" in k})
    return env


@contextmanager
def repo_lock(repo: git.Repo) -> Iterator[None]:
    """Serialise worktree creation across processes sharing one repository (git's own lock files fail fast): the
    same lock approvals and merges take (`_gitcli.repo_lock`)."""
    from tileport.worktrees._gitcli import LOCK_NAME, locked

    with locked(Path(repo.common_dir or repo.git_dir) / LOCK_NAME):
        yield
