"""The few git plumbing calls approval, merge and the worktree lifecycle need, run through `exec.proc`.

Every call is the real `git` binary (merge-tree, commit-tree, update-ref with an expected old value, notes), so the
merge rule is checked on what git itself computes. A repository-wide file lock serialises decisions and merges
between processes; the ref update's compare-and-swap guards against anyone else moving a branch meanwhile.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from tileport.errors import UserError
from tileport.exec.proc import CommandResult, run_command

GIT_TIMEOUT_S = 120
NOTES_REF = "refs/notes/tileport"


class GitError(UserError):
    """A git command failed; the message carries git's own first line."""


def git(repo: str | os.PathLike, *args: str, env: dict[str, str] | None = None, check: bool = True,
        input: bytes | None = None) -> CommandResult:
    full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env or {})}
    res = run_command(["git", *args], cwd=repo, env=full_env, timeout=GIT_TIMEOUT_S, input=input)
    if check and not res.ok:
        first = (res.stderr.strip() or res.stdout.strip() or f"exit {res.returncode}").splitlines()[0]
        raise GitError(f"git {args[0]} failed in {repo}: {first}")
    return res


def out(repo: str | os.PathLike, *args: str, **kw) -> str:
    return git(repo, *args, **kw).stdout.strip()


def rev(repo: str | os.PathLike, ref: str) -> str | None:
    """The commit `ref` names, or None when it does not exist."""
    res = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if not res.ok:
        return None
    return res.stdout.strip() or None


def branch_ref(branch: str) -> str:
    return branch if branch.startswith("refs/") else f"refs/heads/{branch}"


def is_ancestor(repo: str | os.PathLike, a: str, b: str) -> bool:
    return git(repo, "merge-base", "--is-ancestor", a, b, check=False).returncode == 0


def changed_paths(repo: str | os.PathLike, a: str, b: str) -> list[str]:
    """Paths whose content differs between two commits (or trees)."""
    text = out(repo, "diff", "--name-only", "--no-renames", "-z", a, b)
    return [p for p in text.split("\0") if p]


def common_dir(repo: str | os.PathLike) -> Path:
    return Path(out(repo, "rev-parse", "--path-format=absolute", "--git-common-dir"))


def worktrees(repo: str | os.PathLike) -> list[dict]:
    """`git worktree list --porcelain` as dicts: path, head, branch (refs/heads/..), flags."""
    entries: list[dict] = []
    cur: dict = {}
    for line in out(repo, "worktree", "list", "--porcelain").splitlines() + [""]:
        if not line:
            if cur:
                entries.append(cur)
            cur = {}
            continue
        key, _, value = line.partition(" ")
        cur[key if key != "worktree" else "path"] = value if value else True
    return entries


def checked_out_at(repo: str | os.PathLike, branch: str) -> Path | None:
    ref = branch_ref(branch)
    for wt in worktrees(repo):
        if wt.get("branch") == ref:
            return Path(wt["path"])
    return None


LOCK_NAME = "tileport.lock"  # in the repository's common git dir: one lock for every tileport process on it


@contextmanager
def repo_lock(repo: str | os.PathLike) -> Iterator[None]:
    """Serialise tileport's decisions and merges on one repository across processes (flock, released on exit
    even when the process dies)."""
    with locked(common_dir(repo) / LOCK_NAME):
        yield


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive flock on `path` (created if missing) for the block; worktree creation takes the same one."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
