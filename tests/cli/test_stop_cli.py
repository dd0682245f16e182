"""`tileport stop ID` finds the store the way `run`/`tui`/`status` do (`--repo`, `--store`), and never creates an
empty store where there is none (it used to, then said "no conversion 1" for a conversion that was running)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tileport.store import Store

REPO = Path(__file__).resolve().parents[2]


def _stop(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tileport", "stop", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(cwd)})


def test_stop_where_there_is_no_store_says_where_to_look_and_creates_nothing(tmp_path):
    r = _stop("1", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "no tileport store at" in r.stderr and "--repo DIR" in r.stderr
    assert not (tmp_path / ".tileport").exists()


def test_stop_with_repo_opens_that_repositorys_store(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".tileport").mkdir(parents=True)
    s = Store(repo / ".tileport" / "tileport.db")
    (tmp_path / "wt").mkdir()
    cid = s.add_conversion(str(repo / "op.py"), "k", worktree=str(tmp_path / "wt"))
    s.close()
    r = _stop(str(cid), "--repo", str(repo), "--wait", "1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"#{cid} is not running (status pending); nothing to stop" in r.stdout
