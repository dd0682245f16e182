"""Worktree lifecycle on real git: list, prune after merge or reject, recovery after a crash with no work lost."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from gitconv import Conv, git
from tileport.config import load_config
from tileport.store import Store
from tileport.worktrees import approval, lifecycle, merge


@pytest.fixture
def env(tmp_path):
    store = Store(tmp_path / "db" / "tileport.db")
    conv = Conv(tmp_path, store)
    cfg = tmp_path / "tileport.toml"
    cfg.write_text(f'store = "{store.path}"\n')
    yield conv, cfg
    store.close()


def tp(cfg, *args):
    return subprocess.run([sys.executable, "-m", "tileport", "--config", str(cfg), *args],
                          capture_output=True, text=True, timeout=120)


def rescue_branches(repo):
    return git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/tileport/rescue").split()


def test_list_shows_clean_and_dirty_worktrees(env):
    conv, cfg = env
    conv.run("A")
    r = tp(cfg, "worktrees", "--json")
    [st] = json.loads(r.stdout)
    assert (st["branch"], st["worktree_exists"], st["registered"], st["dirty"], st["problems"]) == \
        (conv.branch, True, True, False, [])
    (conv.wt / "scratch.rs").write_text("wip")
    r = tp(cfg, "worktrees")
    assert r.returncode == 0 and "dirty" in r.stdout and conv.branch in r.stdout


def test_prune_after_merge_removes_worktree_and_branch_saving_stray_work(env):
    conv, cfg = env
    conv.all_pass()
    config = load_config(cfg)
    approval.approve(conv.store, config, conv.cid)
    head = conv.head()
    assert merge.merge(conv.store, config, conv.cid).merged
    (conv.wt / "notes.txt").write_text("an unsaved thought\n")
    r = tp(cfg, "worktrees", "prune")
    assert r.returncode == 0, r.stderr
    assert not conv.wt.exists()
    assert git(conv.repo, "branch", "--list", conv.branch) == ""  # merged: its commits are in main
    assert conv.contains("main", head)
    [saved] = rescue_branches(conv.repo)
    assert git(conv.repo, "show", f"{saved}:notes.txt") == "an unsaved thought"
    assert "problem" not in tp(cfg, "worktrees").stdout


def test_prune_after_reject_keeps_the_branch(env):
    conv, cfg = env
    conv.all_pass()
    head = conv.head()
    approval.reject(conv.store, load_config(cfg), conv.cid, "wrong tiling")
    [st] = lifecycle.prune(conv.store, load_config(cfg))
    assert not conv.wt.exists() and conv.head() == head
    assert any("rejected work stays" in a for a in st.actions)


def test_prune_leaves_live_conversions_alone(env):
    conv, cfg = env
    conv.run("A")
    assert lifecycle.prune(conv.store, load_config(cfg)) == [] and conv.wt.is_dir()


def test_recover_dangling_worktree(env):
    conv, cfg = env
    head = conv.run("A") and conv.head()
    shutil.rmtree(conv.wt)  # the worktree directory vanished (disk cleanup, crash mid-creation)
    r = tp(cfg, "worktrees")
    assert "dangling" in r.stdout and "tileport worktrees recover" in r.stdout
    r = tp(cfg, "worktrees", "recover")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "re-created worktree" in r.stdout
    assert git(conv.wt, "rev-parse", "HEAD") == head and git(conv.wt, "symbolic-ref", "HEAD") == \
        f"refs/heads/{conv.branch}"


def test_recover_missing_branch_from_the_worktree(env):
    conv, cfg = env
    conv.run("A")
    head = conv.run("B") and conv.head()
    git(conv.repo, "update-ref", "-d", f"refs/heads/{conv.branch}")
    r = tp(cfg, "merge", str(conv.cid))
    assert r.returncode == 1 and "branch tileport/op-1 is missing" in r.stderr and "recover" in r.stderr
    r = tp(cfg, "worktrees", "recover")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"re-created branch {conv.branch} at {head[:10]}" in r.stdout
    assert conv.head() == head


def test_recover_half_written_commit_and_stale_lock(env):
    conv, cfg = env
    conv.run("A")
    head = conv.head()
    # a crash between `git add` and `git commit`: staged work, an untracked file and index.lock left behind
    (conv.wt / "kernel.rs").write_text("fn k() {}\n")
    git(conv.wt, "add", "kernel.rs")
    (conv.wt / "host.rs").write_text("fn main() {}\n")
    lock = conv.repo / ".git" / "worktrees" / conv.wt.name / "index.lock"
    lock.write_text("")
    old = time.time() - 600
    os.utime(lock, (old, old))
    r = tp(cfg, "worktrees", "--json")
    assert any("lock file left behind" in p for p in json.loads(r.stdout)[0]["problems"])
    r = tp(cfg, "worktrees", "recover")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "removed stale lock" in r.stdout and "saved on tileport/rescue/" in r.stdout
    assert not lock.exists() and conv.head() == head and not git(conv.wt, "status", "--porcelain")
    [saved] = rescue_branches(conv.repo)
    assert git(conv.repo, "show", f"{saved}:kernel.rs") == "fn k() {}"
    assert git(conv.repo, "show", f"{saved}:host.rs") == "fn main() {}"
    assert git(conv.repo, "rev-parse", f"{saved}^") == head


def test_recover_leaves_a_fresh_lock(env):
    conv, cfg = env
    lock = conv.repo / ".git" / "worktrees" / conv.wt.name / "index.lock"
    lock.write_text("")
    r = tp(cfg, "worktrees", "recover")
    assert r.returncode == 1 and "a git may still be running" in r.stdout and lock.exists()


def test_recover_corrupt_index(env):
    conv, cfg = env
    conv.run("A")
    (conv.wt / "wip.rs").write_text("// typed before the crash\n")
    index = conv.repo / ".git" / "worktrees" / conv.wt.name / "index"
    index.write_bytes(b"DIRC\x00\x00\x00\x02garbage")
    r = tp(cfg, "worktrees", "recover")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "was unreadable" in r.stdout
    [saved] = rescue_branches(conv.repo)
    assert git(conv.repo, "show", f"{saved}:wip.rs") == "// typed before the crash"


def test_recover_orphan_directory_keeps_its_files(env):
    conv, cfg = env
    conv.run("A")
    (conv.wt / "wip.rs").write_text("// mine\n")
    shutil.rmtree(conv.repo / ".git" / "worktrees" / conv.wt.name)  # git forgot the worktree
    r = tp(cfg, "worktrees", "recover")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "moved to" in r.stdout
    aside = [p for p in conv.root.iterdir() if p.name.startswith(conv.wt.name + ".orphan-")]
    assert len(aside) == 1 and (aside[0] / "wip.rs").read_text() == "// mine\n"
    [saved] = rescue_branches(conv.repo)
    assert git(conv.repo, "show", f"{saved}:wip.rs") == "// mine"
    assert git(conv.wt, "rev-parse", "HEAD") == conv.head()  # a fresh worktree on the branch


def test_recover_brings_the_store_up_to_git(env):
    conv, cfg = env
    conv.all_pass()
    config = load_config(cfg)
    unrecorded = conv.stage_commit("C")  # committed, then the process died before the store write
    assert conv.store.conversion(conv.cid)["head_commit"] != unrecorded
    r = tp(cfg, "worktrees", "recover")
    assert "store caught up" in r.stdout and conv.store.conversion(conv.cid)["head_commit"] == unrecorded
    # a merge that moved main but died before the store recorded it
    approval.approve(conv.store, config, conv.cid)
    assert merge.merge(conv.store, config, conv.cid).merged
    conv.store.update_conversion(conv.cid, status="running")
    assert "merged in git but not in the store" in tp(cfg, "worktrees").stdout
    r = tp(cfg, "worktrees", "recover")
    assert "store marked merged" in r.stdout and conv.store.conversion(conv.cid)["status"] == "merged"
