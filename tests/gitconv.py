"""Test helper: a real git repository with a conversion branch in its own worktree, stage commits with the
pipeline's trailers, and the matching store rows (written through Store, as the pipeline writes them)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tileport.records import Stage, StageResult
from tileport.store import Store

PASSING = {"A": "PASS", "B": "COMPILED", "C": "PASS", "D": "ALL_PASS", "E": "DONE"}
FAILING = {"A": "FAIL_FIXABLE", "B": "FAIL_COMPILE", "C": "FAIL_FIXABLE", "D": "FAIL", "E": "INVESTIGATE"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


class Conv:
    """One conversion: repo (main checked out), branch tileport/op-<id> in worktree wt, store rows."""

    def __init__(self, root: Path, store: Store, op: str = "op", repo: Path | None = None):
        """A new repository under root, or (repo=...) another conversion in an existing one."""
        self.root, self.store = root, store
        self.repo = repo or root / "repo"
        if repo is None:
            self.repo.mkdir(parents=True)
            git(self.repo, "init", "-q", "-b", "main")
            git(self.repo, "config", "user.name", "Test Person")
            git(self.repo, "config", "user.email", "test@example.invalid")
            (self.repo / f"{op}.py").write_text("# the cuTile op\n")
            (self.repo / "README.md").write_text("readme\n")
            git(self.repo, "add", "-A")
            git(self.repo, "commit", "-q", "-m", "base")
        self.base = git(self.repo, "rev-parse", "HEAD")
        self.cid = store.add_conversion(f"{op}.py", "kern")
        self.branch = f"tileport/{op}-{self.cid}"
        self.wt = root / f"wt-{self.cid}"
        git(self.repo, "worktree", "add", "-q", "-b", self.branch, str(self.wt), "main")
        store.update_conversion(self.cid, repo=str(self.repo), branch=self.branch, worktree=str(self.wt),
                                base_branch="main", base_commit=self.base, head_commit=self.base, status="running")
        self.n = 0
        self.attempts: dict[str, int] = {}  # stage -> newest attempt number
        self.commit_attempt: dict[str, tuple[str, int]] = {}  # stage commit -> (stage, attempt)

    def head(self) -> str:
        return git(self.repo, "rev-parse", self.branch)

    def main(self) -> str:
        return git(self.repo, "rev-parse", "main")

    def contains(self, ref: str, commit: str) -> bool:
        return subprocess.run(["git", "merge-base", "--is-ancestor", commit, ref], cwd=self.repo).returncode == 0

    def stage_commit(self, stage: str, path: str | None = None, attempt: int | None = None) -> str:
        """A pipeline-style stage commit: one file written, trailers naming stage, attempt and conversion."""
        if attempt is None:
            self.attempts[stage] = attempt = self.attempts.get(stage, 0) + 1
        self.n += 1
        f = self.wt / (path or f"evidence/{self.cid}/{stage}-{self.n}.txt")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(f"{stage} attempt {self.n}\n")
        git(self.wt, "add", "-A")
        git(self.wt, "commit", "-q", "-m", f"stage {stage} attempt {self.n}", "--trailer", f"Tileport-Stage: {stage}",
            "--trailer", f"Tileport-Conversion: {self.cid}", "--trailer", f"Tileport-Attempt: {attempt}")
        sha = self.head()
        self.commit_attempt[sha] = (stage, attempt)
        return sha

    def human_commit(self, path: str = "kernel.rs") -> str:
        self.n += 1
        (self.wt / path).write_text(f"// edit {self.n}\n")
        git(self.wt, "add", "-A")
        git(self.wt, "commit", "-q", "-m", f"hand edit {self.n}")
        return self.head()

    def run(self, stage: str, passing: bool = True, commit: str | None = None, **details) -> int:
        """Record a stage run on `commit` (default: a new stage commit of that stage)."""
        commit = commit or self.stage_commit(stage)
        if self.commit_attempt.get(commit, (None,))[0] == stage:
            attempt = self.commit_attempt[commit][1]
        else:  # a run recorded on a commit that is not its own stage commit: a new attempt
            self.attempts[stage] = attempt = self.attempts.get(stage, 0) + 1
        verdict = (PASSING if passing else FAILING)[stage]
        if stage == "B" and "self_check" not in details:
            details["self_check"] = "PASS"
        if stage == "E" and "geomean" not in details:
            details["geomean"] = 0.97
        r = StageResult(stage=Stage(stage), verdict=verdict, details=details, attempt=attempt)
        rid = self.store.record_stage(self.cid, r, commit=commit)
        self.store.update_conversion(self.cid, head_commit=self.head())
        return rid

    def all_pass(self) -> None:
        for s in "ABDE":
            self.run(s)

    def base_move(self, path: str = "lib.py") -> str:
        (self.repo / path).write_text(f"moved {self.n}\n")
        self.n += 1
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", f"target moves ({path})")
        return self.main()


def conversion_at(root: Path, stages: str = "AB") -> Conv:
    """A new repository and store (root/db/tileport.db) with one conversion whose branch passed `stages` (the
    point where a gate is packed for a GPU host); close `.store` when done."""
    conv = Conv(root, Store(root / "db" / "tileport.db"))
    for s in stages:
        conv.run(s)
    return conv
