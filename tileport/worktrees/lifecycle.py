"""The life of a conversion's worktree after the pipeline: list, prune after merge or reject, recover after a crash.

Nothing a user made is deleted: before a worktree is removed or reset, its uncommitted changes (staged, unstaged and
untracked, minus ignored files) are committed on a rescue branch `tileport/rescue/<id>-<time>` through a temporary
index, without touching the files. Recovery handles a worktree whose directory vanished (dangling), a directory git
no longer knows (orphan), a branch that is gone, a half-written commit (a corrupt index, staged work), lock files a
dead git left behind, and a store that disagrees with git (unrecorded commits, a merge that was not recorded).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

from tileport.config import Config
from tileport.records import utcnow
from tileport.store import Store, queries
from tileport.worktrees import _gitcli as g
from tileport.worktrees.approval import approver_name, identity_env

DONE_STATUSES = ("merged", "rejected")


class WorktreeState(BaseModel):
    """What git says about one conversion's branch and worktree, beside what the store says."""

    conversion_id: int
    status: str
    repo: str | None
    branch: str | None
    worktree: str | None
    branch_head: str | None = None
    store_head: str | None = None
    worktree_exists: bool = False
    registered: bool = False
    dirty: bool = False
    locks: list[str] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    actions: list[str] = Field(default_factory=list)  # what prune / recover did


def _repo_of(conv: dict) -> Path | None:
    p = conv.get("repo")
    return Path(p) if p and Path(p).is_dir() and g.git(p, "rev-parse", "--git-dir", check=False).ok else None


def _admin_dir(repo: Path, wt: Path) -> Path | None:
    """The worktree's private git dir (where index and index.lock live), if git knows it."""
    gitfile = wt / ".git"
    if gitfile.is_file():
        text = gitfile.read_text(errors="replace").strip()
        if text.startswith("gitdir:"):
            d = Path(text.split(":", 1)[1].strip())
            return d if d.is_absolute() else (wt / d).resolve()
    if gitfile.is_dir():
        return gitfile
    return None


def _lock_files(repo: Path, wt: Path | None, branch: str | None) -> list[Path]:
    common = g.common_dir(repo)
    cands = [common / "index.lock", common / "HEAD.lock", common / "packed-refs.lock",
             common / (g.NOTES_REF + ".lock")]
    if branch:
        cands.append(common / (g.branch_ref(branch) + ".lock"))
    admin = _admin_dir(repo, wt) if wt and wt.is_dir() else None
    if admin is not None:
        cands += [admin / "index.lock", admin / "HEAD.lock"]
    return [p for p in cands if p.exists()]


def inspect_conversion(store: Store, conv: dict) -> WorktreeState:
    st = WorktreeState(conversion_id=conv["id"], status=conv["status"], repo=conv.get("repo"),
                       branch=conv.get("branch"), worktree=conv.get("worktree"), store_head=conv.get("head_commit"))
    repo = _repo_of(conv)
    if repo is None:
        if conv.get("branch"):
            st.problems.append(f"repository {conv.get('repo')} is gone")
        return st
    wt = Path(conv["worktree"]) if conv.get("worktree") else None
    if conv.get("branch"):
        st.branch_head = g.rev(repo, g.branch_ref(conv["branch"]))
        if st.branch_head is None and conv["status"] != "merged":  # a merged branch is deleted by prune
            st.problems.append(f"branch {conv['branch']} is missing")
    registered = {Path(w["path"]).resolve(): w for w in g.worktrees(repo)}
    if wt is not None:
        st.worktree_exists = wt.is_dir()
        entry = registered.get(wt.resolve())
        st.registered = entry is not None
        if st.registered and not st.worktree_exists:
            st.problems.append(f"worktree {wt} is registered but its directory is gone (dangling)")
        elif st.worktree_exists and not st.registered:
            st.problems.append(f"{wt} is not a worktree git knows (orphan)")
        elif not st.worktree_exists and conv["status"] not in DONE_STATUSES and conv.get("branch"):
            st.problems.append(f"worktree {wt} is missing")
        if st.worktree_exists and st.registered:
            res = g.git(wt, "status", "--porcelain", check=False)
            if not res.ok:
                st.problems.append(f"worktree {wt}: git status fails ({res.stderr.strip().splitlines()[0][:120]})")
            else:
                st.dirty = bool(res.stdout.strip())
    st.locks = [str(p) for p in _lock_files(repo, wt, conv.get("branch"))]
    for lk in st.locks:
        st.problems.append(f"lock file left behind: {lk}")
    if st.branch_head and st.store_head and st.branch_head != st.store_head:
        st.problems.append(f"store records HEAD {st.store_head[:10]}, branch is at {st.branch_head[:10]}")
    if conv["status"] != "merged" and st.branch_head and _recorded_merge(repo, conv, st.branch_head):
        st.problems.append("merged in git but not in the store")
    return st


def list_worktrees(store: Store) -> list[WorktreeState]:
    return [inspect_conversion(store, c) for c in store.conversions() if c.get("branch")]


def _recorded_merge(repo: Path, conv: dict, head: str) -> str | None:
    """A tileport merge commit of this conversion's HEAD on its base branch, if one exists."""
    base = conv.get("base_branch")
    if not base or g.rev(repo, g.branch_ref(base)) is None:
        return None
    fmt = "%H%x1f%(trailers:key=Tileport-Conversion,valueonly,separator=%x2C)%x1f" \
          "%(trailers:key=Tileport-Head,valueonly,separator=%x2C)"
    for line in g.out(repo, "log", "--merges", f"--format={fmt}", g.branch_ref(base)).splitlines():
        sha, cid, h = (line.split("\x1f") + ["", ""])[:3]
        if cid.strip() == str(conv["id"]) and h.strip() == head:
            return sha
    return None


def save_uncommitted(repo: Path, workdir: Path, parent: str, conversion_id: int, who: str) -> str | None:
    """Commit everything in `workdir` that differs from `parent` (ignored files aside) on a rescue branch, through
    a temporary index so neither the files nor the worktree's own index change. Returns the branch, or None when
    there is nothing to save."""
    common = g.common_dir(repo)
    with tempfile.TemporaryDirectory(prefix="tileport-rescue-") as tmp:
        env = {"GIT_DIR": str(common), "GIT_WORK_TREE": str(workdir), "GIT_INDEX_FILE": str(Path(tmp) / "index"),
               **identity_env(repo, who)}
        g.git(workdir, "read-tree", parent, env=env)
        g.git(workdir, "add", "-A", "--", ".", env=env)
        tree = g.out(workdir, "write-tree", env=env)
        if tree == g.out(repo, "rev-parse", f"{parent}^{{tree}}"):
            return None
        msg = f"tileport: uncommitted work of conversion #{conversion_id}, saved by recovery\n"
        sha = g.out(workdir, "commit-tree", tree, "-p", parent, "-F", "-", input=msg.encode(), env=env)
    name = f"tileport/rescue/{conversion_id}-{utcnow().strftime('%Y%m%dT%H%M%S%f')}"
    g.git(repo, "update-ref", g.branch_ref(name), sha)
    return name


def _restore_branch(repo: Path, store: Store, conv: dict, wt: Path | None) -> str | None:
    """Re-create a missing branch at the newest commit tileport knows for it."""
    cands = []
    if wt is not None and wt.is_dir():
        res = g.git(wt, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
        if res.ok and res.stdout.strip():
            cands.append(res.stdout.strip())
    if conv.get("head_commit"):
        cands.append(conv["head_commit"])
    cands += [r.commit for r in reversed(queries.stage_runs(store, conv["id"])) if r.commit]
    for sha in cands:
        if g.rev(repo, sha):
            g.git(repo, "update-ref", g.branch_ref(conv["branch"]), sha, "")
            return sha
    return None


def recover(store: Store, config: Config, lock_age_s: float = 60.0) -> list[WorktreeState]:
    """Bring every conversion's branch, worktree and store row back into agreement without losing work."""
    who = approver_name(config)
    pruned_repos: set[Path] = set()
    results = []
    for conv in store.conversions():
        if not conv.get("branch"):
            continue
        repo = _repo_of(conv)
        if repo is None:
            results.append(inspect_conversion(store, conv))
            continue
        with g.repo_lock(repo):
            results.append(_recover_one(store, conv, repo, who, lock_age_s, pruned_repos))
    return results


def _recover_one(store: Store, conv: dict, repo: Path, who: str, lock_age_s: float,
                 pruned_repos: set[Path]) -> WorktreeState:
    actions: list[str] = []
    cid, branch = conv["id"], conv["branch"]
    wt = Path(conv["worktree"]) if conv.get("worktree") else None
    # 1. lock files a dead git left behind (a young one may belong to a running git: leave it and say so)
    for lk in _lock_files(repo, wt, branch):
        age = time.time() - lk.stat().st_mtime
        if age >= lock_age_s:
            lk.unlink()
            actions.append(f"removed stale lock {lk} (age {age:.0f} s)")
        else:
            actions.append(f"left lock {lk}: only {age:.0f} s old, a git may still be running; retry later")
    # 2. dangling worktrees: registered, directory gone
    if repo not in pruned_repos:
        res = g.git(repo, "worktree", "prune", "--verbose", check=False)
        for line in (res.stdout + res.stderr).splitlines():
            if line.strip():
                actions.append(f"git worktree prune: {line.strip()}")
        pruned_repos.add(repo)
    # 3. a missing branch
    if g.rev(repo, g.branch_ref(branch)) is None and conv["status"] != "merged":
        sha = _restore_branch(repo, store, conv, wt)
        actions.append(f"re-created branch {branch} at {sha[:10]}" if sha else
                       f"branch {branch} is gone and none of its commits is left; the store keeps its record")
    head = g.rev(repo, g.branch_ref(branch))
    registered = {Path(w["path"]).resolve() for w in g.worktrees(repo)}
    if wt is not None and head is not None:
        # 4. an orphan directory (git forgot it): save its work, move it aside, never delete it
        if wt.is_dir() and wt.resolve() not in registered:
            saved = save_uncommitted(repo, wt, head, cid, who)
            aside = wt.with_name(f"{wt.name}.orphan-{utcnow().strftime('%Y%m%dT%H%M%S')}")
            os.rename(wt, aside)
            actions.append(f"{wt} was not a worktree git knows: moved to {aside}"
                           + (f", its changes saved on {saved}" if saved else ""))
        # 5. a missing worktree of a live conversion: add it again on its branch
        if not wt.is_dir() and conv["status"] not in DONE_STATUSES:
            if g.checked_out_at(repo, branch) is None:
                g.git(repo, "worktree", "add", "--quiet", str(wt), branch)
                actions.append(f"re-created worktree {wt} on {branch}")
        # 6. a half-written commit: a corrupt index, or staged/unstaged work the pipeline never committed
        if wt.is_dir() and wt.resolve() in {Path(w["path"]).resolve() for w in g.worktrees(repo)}:
            if not g.git(wt, "status", "--porcelain", check=False).ok:
                admin = _admin_dir(repo, wt)
                if admin is not None and (admin / "index").exists():
                    aside = admin / f"index.corrupt-{int(time.time())}"
                    os.rename(admin / "index", aside)
                    g.git(wt, "read-tree", "HEAD")
                    actions.append(f"index of {wt} was unreadable: moved to {aside}, rebuilt from HEAD")
            if g.out(wt, "status", "--porcelain"):
                wt_head = g.out(wt, "rev-parse", "HEAD")
                saved = save_uncommitted(repo, wt, wt_head, cid, who)
                if saved:
                    g.git(wt, "reset", "--hard", "--quiet")
                    g.git(wt, "clean", "-fdq")
                    actions.append(f"uncommitted changes in {wt} saved on {saved}; worktree reset to "
                                   f"{wt_head[:10]} (`git diff {wt_head[:10]} {saved}` shows them)")
    # 7. store vs git
    if head is not None:
        store_head = conv.get("head_commit")
        merged_as = _recorded_merge(repo, conv, head) if conv["status"] != "merged" else None
        if merged_as:
            store.update_conversion(cid, status="merged", head_commit=head)
            store.log_event("conversion.merged", cid, merge_commit=merged_as, head=head, recovered=True)
            actions.append(f"git has merge {merged_as[:10]} of {head[:10]}: store marked merged")
        elif store_head and store_head != head:
            if g.rev(repo, store_head) and g.is_ancestor(repo, store_head, head):
                store.update_conversion(cid, head_commit=head)
                actions.append(f"store caught up with {branch}: HEAD {store_head[:10]} -> {head[:10]}")
            elif g.rev(repo, store_head) and g.is_ancestor(repo, head, store_head):
                at = g.checked_out_at(repo, branch)
                if at is not None:
                    g.git(at, "merge", "--ff-only", "--quiet", store_head)
                else:
                    g.git(repo, "update-ref", g.branch_ref(branch), store_head, head)
                actions.append(f"{branch} had lost commits: moved forward to {store_head[:10]} as the store records")
            else:
                actions.append(f"{branch} ({head[:10]}) and the store ({store_head[:10]}) have diverged; left as is")
        elif not store_head:
            store.update_conversion(cid, head_commit=head)
    if actions:
        store.log_event("worktree.recovered", cid, actions=actions)
    st = inspect_conversion(store, store.conversion(cid))
    st.actions = actions
    return st


def prune(store: Store, config: Config, conversion_ids: list[int] | None = None) -> list[WorktreeState]:
    """Remove the worktrees of merged and rejected conversions (uncommitted work saved first). A merged branch is
    deleted only when its target contains it; a rejected branch is kept: it is someone's work."""
    who = approver_name(config)
    results = []
    for conv in store.conversions():
        if conversion_ids is not None and conv["id"] not in conversion_ids:
            continue
        if conv["status"] not in DONE_STATUSES or not conv.get("branch"):
            continue
        repo = _repo_of(conv)
        if repo is None:
            continue
        actions: list[str] = []
        with g.repo_lock(repo):
            wt = Path(conv["worktree"]) if conv.get("worktree") else None
            head = g.rev(repo, g.branch_ref(conv["branch"]))
            if wt is not None and wt.is_dir():
                if head is not None:
                    saved = save_uncommitted(repo, wt, g.out(wt, "rev-parse", "HEAD"), conv["id"], who)
                    if saved:
                        actions.append(f"uncommitted changes in {wt} saved on {saved}")
                res = g.git(repo, "worktree", "remove", "--force", str(wt), check=False)
                if res.ok:
                    actions.append(f"removed worktree {wt}")
                else:
                    actions.append(f"could not remove {wt}: {res.stderr.strip()[:160]}")
            g.git(repo, "worktree", "prune", check=False)
            if conv["status"] == "merged" and head is not None:
                target = conv.get("base_branch")
                merged_into = [b for b in {target} if b and g.rev(repo, g.branch_ref(b))
                               and g.is_ancestor(repo, head, g.branch_ref(b))]
                if merged_into and g.checked_out_at(repo, conv["branch"]) is None:
                    g.git(repo, "update-ref", "-d", g.branch_ref(conv["branch"]), head)
                    actions.append(f"deleted branch {conv['branch']} ({head[:10]} is in {merged_into[0]})")
                elif not merged_into:
                    actions.append(f"kept branch {conv['branch']}: {target} does not contain {head[:10]}")
            elif conv["status"] == "rejected" and head is not None:
                actions.append(f"kept branch {conv['branch']} ({head[:10]}): rejected work stays")
            if actions:
                store.log_event("worktree.pruned", conv["id"], actions=actions)
        st = inspect_conversion(store, store.conversion(conv["id"]))
        st.actions = actions
        results.append(st)
    return results
