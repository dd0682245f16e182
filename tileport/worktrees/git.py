"""The user's repository, through the one git adapter (`_gitcli`: the real `git` binary run by `exec.proc`, so
every git command is a command with argv, exit code and time): open it, check it is safe to branch from, and take
snapshots.

Every refusal is a `UserError` (one line, exit 2) raised before anything is changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tileport.errors import UserError
from tileport.worktrees import _gitcli as g

# Used only when the repository has no identity configured (a fresh CI checkout); a user's own identity wins.
FALLBACK_IDENTITY = {"GIT_AUTHOR_NAME": "tileport", "GIT_AUTHOR_EMAIL": "tileport@localhost",
                     "GIT_COMMITTER_NAME": "tileport", "GIT_COMMITTER_EMAIL": "tileport@localhost"}


def _root(repo: str | os.PathLike) -> Path:
    """A checkout's directory (a path, or an object with `working_tree_dir` such as a test's gitpython Repo)."""
    return Path(getattr(repo, "working_tree_dir", None) or repo)


def open_repo(path: str | os.PathLike) -> Path:
    """The top directory of the checkout holding `path`, or a one-line refusal."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"{p}: no such directory; pass --repo DIR of a git repository")
    if not p.is_dir():
        p = p.parent
    res = g.git(p, "rev-parse", "--is-bare-repository", "--show-toplevel", check=False)
    lines = res.stdout.split("\n")
    if lines and lines[0].strip() == "true":
        raise UserError(f"{p} is a bare repository; pass --repo DIR of a checkout")
    if not res.ok or len(lines) < 2 or not lines[1].strip():
        raise UserError(f"{p} is not inside a git repository; run `git init` there or pass --repo DIR")
    return Path(lines[1].strip())


@dataclass(frozen=True)
class BaseRef:
    root: Path
    branch: str
    commit: str


def check_branchable(repo: str | os.PathLike) -> BaseRef:
    """The branch and commit a conversion starts from, or a one-line refusal (no commit, detached, dirty)."""
    root = _root(repo)
    head = g.rev(root, "HEAD")
    if head is None:
        raise UserError(f"{root} has no commits yet; commit the op first (git add OP.py && git commit)")
    branch = g.git(root, "symbolic-ref", "-q", "--short", "HEAD", check=False)
    if not branch.ok:
        raise UserError(f"{root}: HEAD is detached at {head[:10]}; check out a branch first (git switch BRANCH)")
    changed = uncommitted(root)
    if changed:
        some = ", ".join(changed[:3])
        raise UserError(f"{root} has uncommitted changes ({some}); commit or stash them first, "
                        "so the conversion's base commit is what you see")
    return BaseRef(root, branch.stdout.strip(), head)


def uncommitted(worktree: str | os.PathLike, *paths: str | os.PathLike, untracked: bool = False) -> list[str]:
    """Files under `paths` (pathspecs relative to the worktree; default all of it) changed since its HEAD: tracked
    ones (what a build of the worktree would contain that no commit does), and with `untracked` new ones too (a
    person's edit)."""
    res = g.git(Path(worktree), "status", "--porcelain=v1", "-z", *([] if untracked else ["--untracked-files=no"]),
                "--", *(str(p) for p in paths or ["."]), check=False)
    if not res.ok:
        return []
    names: set[str] = set()
    entries = iter(res.stdout.split("\0"))  # "XY path", unquoted; a rename or copy's source follows as its own entry
    for entry in entries:
        if len(entry) > 3:
            names.add(entry[3:])
            if entry[0] in "RC":
                next(entries, None)
    return sorted(names)


def changed_between(worktree: str | os.PathLike, a: str, b: str, path: str, *, ignore: str | None = None) -> list[str] | None:
    """Files under `path` that differ between commits a and b (`ignore`: a sub-path of it left out, such as the
    stage records under a port's `.tileport/`); None when git cannot tell (an unknown commit)."""
    spec = [path] + ([f":(exclude){ignore}" if path == "." else f":(exclude){path.rstrip('/')}/{ignore}"] if ignore else [])
    res = g.git(Path(worktree), "diff", "--name-only", a, b, "--", *spec, check=False)
    return [ln for ln in res.stdout.splitlines() if ln.strip()] if res.ok else None


def branch_exists(repo: str | os.PathLike, name: str) -> bool:
    return g.git(_root(repo), "show-ref", "--verify", "--quiet", g.branch_ref(name), check=False).ok


def head_branch(repo: str | os.PathLike) -> str | None:
    """The branch checked out at `repo` (short name), None when HEAD is detached."""
    res = g.git(_root(repo), "symbolic-ref", "-q", "--short", "HEAD", check=False)
    return res.stdout.strip() if res.ok else None


@dataclass(frozen=True)
class Snapshot:
    """What a stage must leave as it was in the parent checkout: HEAD, the checked-out branch ("" when detached),
    and each tracked file that differs from HEAD with its size and modification time."""

    head: str
    branch: str
    changed: tuple[tuple[str, int, int], ...]

    def moved(self, after: "Snapshot") -> str | None:
        """What changed between this snapshot and `after`, in a few words; None when nothing did."""
        if (self.head, self.branch) != (after.head, after.branch):
            return "HEAD or the checked-out branch moved"
        if self.changed != after.changed:
            files = sorted({c[0] for c in set(self.changed) ^ set(after.changed)})
            return f"tracked files changed: {', '.join(files[:3])}" + (f" and {len(files) - 3} more"
                                                                        if len(files) > 3 else "")
        return None


def snapshot(repo: str | os.PathLike) -> Snapshot:
    """The parent checkout as a stage must leave it: a commit, checkout, reset, merge or rebase moves HEAD or the
    branch; a write into a tracked file (an op's script run in the checkout itself) changes `changed`."""
    root = _root(repo)
    lines = g.out(root, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD").splitlines()
    sha, ref = (lines + ["", ""])[:2]
    changed = []
    for name in uncommitted(root):
        try:
            st = (root / name).stat()
            changed.append((name, st.st_size, st.st_mtime_ns))
        except OSError:
            changed.append((name, -1, -1))  # deleted
    return Snapshot(sha, "" if ref == "HEAD" else ref, tuple(changed))


def identity_env(repo: str | os.PathLike, name: str | None = None) -> dict[str, str]:
    """Author/committer for the commits and notes tileport writes, only where git has no identity of its own
    (config or environment): `name` (an approver) or tileport's fallback. The one rule for every git write."""
    if g.git(_root(repo), "var", "GIT_COMMITTER_IDENT", check=False).ok:
        return {}
    if not name:
        return dict(FALLBACK_IDENTITY)
    email = f"{name.replace(' ', '.')}@tileport.invalid"
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email}
