"""Evidence that stays (issue #8): artifact rows keep matching their files after later runs, and the
staging directory a killed run left behind is cleaned by the next run."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tileport.store import Store

REPO = Path(__file__).resolve().parents[2]
OP = (REPO / "examples" / "vector_add.py").read_text()


def _analyze(cwd: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tileport", "analyze", "op.py", "--no-cubin", "--target", "sm_90",
                           *extra], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_every_artifact_row_still_matches_its_file_after_several_runs(tmp_path):
    op = tmp_path / "op.py"
    for i, tile in enumerate((1024, 512, 1024)):  # each run rewrites out/op/ with different IR
        op.write_text(OP.replace("TILE = 1024", f"TILE = {tile}") + f"\n# run {i}\n")
        r = _analyze(tmp_path)
        assert r.returncode == 0, r.stderr
    s = Store(tmp_path / ".tileport" / "tileport.db")
    try:
        rows = s.db.execute("select path, sha256, bytes from artifacts").fetchall()
    finally:
        s.close()
    assert len(rows) >= 3 * 4  # three runs, each with analysis.json + bytecode + text per dtype
    drifted = [p for p, sha, _ in rows if not Path(p).is_file()
               or hashlib.sha256(Path(p).read_bytes()).hexdigest() != sha]
    assert drifted == []
    # the rows point at content-addressed copies, not at out/op/, which the last run replaced
    assert all("/evidence/" in p for p, _, _ in rows)
    assert len({sha for _, sha, _ in rows}) < len(rows)  # runs 1 and 3 made the same IR: stored once


def test_a_killed_run_leaves_a_staging_dir_that_the_next_run_removes(tmp_path):
    (tmp_path / "op.py").write_text("import time\ntime.sleep(300)\n" + OP)
    p = subprocess.Popen([sys.executable, "-m", "tileport", "analyze", "op.py", "--no-cubin", "--target", "sm_90"],
                         cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = tmp_path / "out"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (out.is_dir() and any(out.glob(".op.tmp-*"))):
        time.sleep(0.1)
    staged = list(out.glob(".op.tmp-*"))
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert staged, "the run was killed before it staged anything"
    time.sleep(0.5)
    (tmp_path / "op.py").write_text(OP)
    r = _analyze(tmp_path)
    assert r.returncode == 0, r.stderr
    assert not any(out.glob(".op.*-*")), list(out.iterdir())
    assert (out / "op" / "analysis.json").is_file() and (out / "op" / ".tileport-output").is_file()
