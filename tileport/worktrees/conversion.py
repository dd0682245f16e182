"""One branch and one git worktree per conversion, and one commit (with trailers) per stage attempt.

    wt = create_conversion_worktree(repo_dir, "vector_add", 7)      # branch tileport/vector_add-7
    sha = commit_stage(wt, stage="B", verdict="COMPILED", attempt=1, conversion_id=7, summary="...")
    stage_commits(wt)   # [{"sha", "stage", "verdict", "attempt", "conversion"}, ...] oldest first

Worktrees live in `<repo>/.tileport/worktrees/<op>-<id>`; `<repo>/.tileport/` carries its own `.gitignore`
(`*`), so neither the worktrees nor the store show up in the user's `git status`. The base commit is pinned
when the worktree is made; every later check runs against it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from tileport.errors import UserError
from tileport.records import CommandRecord
from tileport.worktrees import _gitcli as g
from tileport.worktrees.git import (BaseRef, branch_exists, check_branchable, head_branch, identity_env, open_repo,
                                    uncommitted)

BRANCH_PREFIX = "tileport/"
STATE_DIR = ".tileport"
TRAILERS = ("Stage", "Verdict", "Attempt", "Conversion")
_TRAILER_RE = re.compile(r"^Tileport-(Stage|Verdict|Attempt|Conversion):\s*(\S+)\s*$", re.M)
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class WorktreeEscape(Exception):
    """A command of a stage ran outside its conversion's worktree (or changed the parent checkout)."""


@dataclass(frozen=True)
class ConversionWorktree:
    conversion_id: int
    repo_root: Path
    path: Path
    branch: str
    base_branch: str
    base_commit: str

    def head(self) -> str:
        return g.out(self.path, "rev-parse", "HEAD")

    def copy_of(self, path: str | os.PathLike) -> Path | None:
        """The worktree's copy of a file of the parent checkout; None when it lies outside it or the worktree has
        none (a file never committed)."""
        try:
            rel = Path(os.path.realpath(path)).relative_to(os.path.realpath(self.repo_root))
        except ValueError:
            return None
        copy = self.path / rel
        return copy if copy.is_file() else None


def branch_name(op: str, conversion_id: int) -> str:
    return f"{BRANCH_PREFIX}{_SAFE.sub('-', op).strip('-') or 'op'}-{conversion_id}"


def worktrees_root(repo_root: Path) -> Path:
    return repo_root / STATE_DIR / "worktrees"


def _ignore_state_dir(repo_root: Path) -> None:
    d = repo_root / STATE_DIR
    d.mkdir(exist_ok=True)
    gi = d / ".gitignore"
    if not gi.exists():
        gi.write_text("# tileport's store and conversion worktrees: never part of the project\n*\n", encoding="utf-8")


BUILD_DIR = ".tileport-build"  # the stages' generated crates and pack dirs inside a worktree (pipeline/context.py)


def _ignore_build_dir(worktree: Path) -> None:
    """The build outputs the stages write in the worktree carry their own `.gitignore` (`*`), so they never look
    like a person's uncommitted work (`tileport worktrees` would call the worktree dirty and recovery would save
    megabytes of build output on a rescue branch)."""
    d = worktree / BUILD_DIR
    d.mkdir(exist_ok=True)
    gi = d / ".gitignore"
    if not gi.exists():
        gi.write_text("# tileport's generated crates and pack dirs: never part of the project\n*\n", encoding="utf-8")


def check_repo(repo_dir: str | Path) -> BaseRef:
    """Refuse a missing, dirty or detached repository before anything is created."""
    return check_branchable(open_repo(repo_dir))


def create_conversion_worktree(repo_dir: str | Path, op: str, conversion_id: int,
                               base: BaseRef | None = None) -> ConversionWorktree:
    """Branch `tileport/<op>-<id>` at the base commit, checked out in its own worktree."""
    repo = open_repo(repo_dir)
    base = base or check_branchable(repo)
    branch = branch_name(op, conversion_id)
    path = worktrees_root(base.root) / branch.removeprefix(BRANCH_PREFIX)
    with g.repo_lock(repo):
        if branch_exists(repo, branch):
            raise UserError(f"branch {branch} already exists in {base.root}; delete it (git branch -D {branch}) or "
                            "point `store` at the store that made it")
        if path.exists():
            raise UserError(f"{path} already exists; remove it (git worktree remove --force {path})")
        _ignore_state_dir(base.root)
        path.parent.mkdir(parents=True, exist_ok=True)
        res = g.git(repo, "worktree", "add", "-q", "-b", branch, str(path), base.commit, check=False)
        if not res.ok:
            why = (res.stderr.strip() or res.stdout.strip() or f"exit {res.returncode}").splitlines()[-1]
            raise UserError(f"git worktree add failed for {branch}: {why}")
        _ignore_build_dir(path)
    return ConversionWorktree(conversion_id, base.root, path.resolve(), branch, base.branch, base.commit)


def open_conversion_worktree(conversion: dict) -> ConversionWorktree:
    """The worktree of a stored conversion (for --resume); a one-line error when it is gone."""
    path = Path(conversion.get("worktree") or "")
    if not conversion.get("worktree") or not (path / ".git").exists():
        raise UserError(f"conversion {conversion['id']}: its worktree {path} is gone; start a new conversion")
    if head_branch(path) != conversion["branch"]:
        raise UserError(f"conversion {conversion['id']}: {path} is not on {conversion['branch']} any more; "
                        f"check it out again (git -C {path} switch {conversion['branch']})")
    _ignore_build_dir(path)  # worktrees made before the build dir ignored itself
    return ConversionWorktree(conversion["id"], Path(conversion["repo"]), path.resolve(), conversion["branch"],
                              conversion["base_branch"], conversion["base_commit"])


def commit_message(*, stage: str, verdict: str, attempt: int, conversion_id: int, op: str, summary: str) -> str:
    body = summary.strip()[:2000]
    return (f"tileport: {stage} attempt {attempt} {verdict} ({op} #{conversion_id})\n\n"
            + (body + "\n\n" if body else "")
            + f"Tileport-Stage: {stage}\nTileport-Verdict: {verdict}\nTileport-Attempt: {attempt}\n"
              f"Tileport-Conversion: {conversion_id}\n")


def commit_stage(wt: ConversionWorktree, *, stage: str, verdict: str, attempt: int, op: str, summary: str = "",
                 paths: list[str | Path] | None = None, commands: list[CommandRecord] | None = None) -> str:
    """Commit `paths` (default: everything under the worktree that git does not ignore) with the stage trailers;
    returns the commit sha. A commit is made even when nothing changed, so every attempt has one. The git
    commands are appended to `commands` (the stage run's record) when given."""
    rel = [str(Path(p).resolve().relative_to(wt.path)) if Path(p).is_absolute() else str(p) for p in (paths or [])]
    msg = commit_message(stage=stage, verdict=verdict, attempt=attempt, conversion_id=wt.conversion_id, op=op,
                         summary=summary)
    ran = [g.git(wt.path, "add", "--all", *(["--", *rel] if rel else [])),
           g.git(wt.path, "commit", "--allow-empty", "--no-verify", "-q", "-m", msg, env=identity_env(wt.path))]
    if commands is not None:
        commands.extend(r.record for r in ran)
    return wt.head()


def parse_trailers(message: str) -> dict[str, str]:
    return {k.lower(): v for k, v in _TRAILER_RE.findall(message)}


def stage_commits(wt: ConversionWorktree) -> list[dict]:
    """The stage commits on the conversion branch since its base, oldest first."""
    out = []
    log = g.out(wt.path, "log", "--reverse", "-z", "--format=%H%n%B", f"{wt.base_commit}..HEAD")
    for entry in filter(None, log.split("\0")):
        sha, _, message = entry.strip("\n").partition("\n")
        t = parse_trailers(message)
        if set(t) == {x.lower() for x in TRAILERS} and t["conversion"] == str(wt.conversion_id):
            out.append({"sha": sha, "stage": t["stage"], "verdict": t["verdict"], "attempt": int(t["attempt"])})
    return out


def discard_uncommitted(wt: ConversionWorktree, paths: list[str]) -> None:
    """Throw away what an interrupted attempt left in `paths` (tracked changes and untracked files)."""
    g.git(wt.path, "reset", "-q", "--hard", "HEAD")
    existing = [p for p in paths if (wt.path / p).exists()]
    if existing:
        g.git(wt.path, "clean", "-fdq", "--", *existing)


def restore_outside(wt: ConversionWorktree, paths: list[str]) -> list[str]:
    """Put back, as HEAD has them, the tracked files outside `paths` that an attempt changed (the op's own code
    writing beside itself: a results file, a cache); returns their names. The conversion's commits hold only its
    own paths, so nothing else may stay changed in its worktree (a rebase at merge would refuse)."""
    changed = uncommitted(wt.path, ".", *(f":(exclude){p}" for p in paths))
    if changed:
        g.git(wt.path, "checkout", "-q", "HEAD", "--", *(f":(literal){n}" for n in changed))
    return changed


def check_commands_inside(wt: ConversionWorktree, commands: list[CommandRecord]) -> None:
    """Every command a stage ran must have run inside this worktree."""
    for c in commands:
        cwd = Path(c.cwd).resolve() if c.cwd else None
        if cwd is None or not cwd.is_relative_to(wt.path):
            raise WorktreeEscape(f"`{' '.join(c.argv)[:120]}` ran in {c.cwd or 'the parent process directory'}, "
                                 f"outside the conversion worktree {wt.path}")


HUMAN_TRAILER = "Tileport-Human"


def person_paths(port: str) -> list[str]:
    """The pathspecs of what a person edits in a port directory: everything but its recorded evidence."""
    return [port, f":(exclude){port}/.tileport"]


def ungated_edit(wt: ConversionWorktree, b_commits: list[str | None]) -> str | None:
    """HEAD when a person's edit of this conversion (a `Tileport-Human` commit) came after the commit stage B last
    ran on (`b_commits`: its runs' commits, oldest first), so no B run judged it: a commit without its gates, or gates
    that were stopped. None when B never ran (the router runs it anyway) or no edit came after its newest run."""
    if not b_commits:
        return None
    fmt = (f"--format=%(trailers:key={HUMAN_TRAILER},valueonly,separator=%x2C)%x1f"
           "%(trailers:key=Tileport-Conversion,valueonly,separator=%x2C)")
    res = g.git(wt.path, "log", "-z", fmt, f"{b_commits[-1] or wt.base_commit}..HEAD", check=False)
    if not res.ok:  # B's commit is gone (a rebase): only HEAD itself can say it is an edit
        res = g.git(wt.path, "log", "-z", "-1", fmt, "HEAD", check=False)
    for entry in filter(None, res.stdout.split("\0") if res.ok else []):
        human, _, conv = entry.strip("\n").partition("\x1f")
        if human.strip() and conv.strip() == str(wt.conversion_id):
            return wt.head()
    return None


def commit_human(wt: ConversionWorktree, paths: list[str], what: str) -> tuple[str, list[CommandRecord]]:
    """Commit a person's edit of `paths` on the conversion branch: no stage trailers (it is no stage attempt, so
    recovery and the router's replay leave it alone; the merge gates see a commit that is not a stage commit) and a
    `Tileport-Human: edit` trailer. Returns the new HEAD and the git commands run."""
    msg = f"{what}\n\n{HUMAN_TRAILER}: edit\nTileport-Conversion: {wt.conversion_id}\n"
    ran = [g.git(wt.path, "add", "--all", "--", *paths),
           g.git(wt.path, "commit", "--no-verify", "-q", "-m", msg, env=identity_env(wt.path))]
    return wt.head(), [r.record for r in ran]
