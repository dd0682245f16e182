"""The store under concurrency (issue #8): real processes opening one fresh store and writing at once.

Before the fix, 7 of 12 `tileport analyze` processes sharing a store died with 'database is locked'
(schema creation at start-up, a new conversion). Now: no process dies, no write is lost."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time

from tileport.store import SCHEMA_VERSION, Store

WRITER = textwrap.dedent("""
    import sys, time
    from tileport.records import Stage, StageResult, utcnow
    from tileport.store import Store
    path, start, n, me = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    while time.time() < start:
        time.sleep(0.001)
    s = Store(path)                      # every process races to create the schema
    for i in range(n):
        cid = s.conversion_for(f"op{i % 3}.py")  # shared conversions: look-up-or-create races
        s.record_stage(cid, StageResult(stage=Stage.ANALYZE, attempt=1, verdict="PASS", started_at=utcnow(),
                                        finished_at=utcnow(), summary=f"{me}-{i}"))
    s.close()
""")


def _race(db, procs: int, writes: int) -> list[subprocess.CompletedProcess]:
    start = time.time() + 3  # every process has started (imports done) before any opens the store
    ps = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(start), str(writes), f"p{k}"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(procs)]
    out = []
    for p in ps:
        o, e = p.communicate(timeout=300)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, o, e))
    return out


def test_eight_processes_open_a_fresh_store_and_write_at_once_none_dies(tmp_path):
    db = tmp_path / "fresh" / "tileport.db"
    results = _race(db, procs=8, writes=25)
    deaths = [r for r in results if r.returncode != 0]
    assert not deaths, deaths[0].stderr[-2000:]
    s = Store(db)
    try:
        assert s.schema_version == SCHEMA_VERSION
        runs = s.db.execute("select summary from stage_runs").fetchall()
        assert len(runs) == 8 * 25 and len(set(runs)) == 8 * 25  # every write kept, none twice
        assert len(s.conversions()) == 3  # look-up-or-create under one lock: no duplicate conversions
        assert s.db.execute("select count(*) from events where kind = 'stage.finished'").fetchone()[0] == 200
    finally:
        s.close()


def test_a_store_held_locked_longer_than_the_limit_is_one_line_not_a_traceback(tmp_path, cli):
    db = tmp_path / "tileport.db"
    Store(db).close()
    (tmp_path / "tileport.toml").write_text(f'store = "{db}"\n')
    (tmp_path / "op.py").write_text("x = 1\n")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the write lock and does not let go
    try:
        r = cli("status", cwd=tmp_path, env={"TILEPORT_STORE_BUSY_S": "1"}, timeout=60)
        # status only reads: WAL readers are not blocked by a writer
        assert r.returncode == 0, r.stderr
        code = ("import sys; from tileport.store import Store; from tileport.errors import UserError\n"
                "s = Store(sys.argv[1])\n"
                "try:\n    s.log_event('x')\nexcept UserError as e:\n    print(e); sys.exit(2)\n")
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, timeout=120,
                           env={**__import__("os").environ, "TILEPORT_STORE_BUSY_S": "1"})
        assert r.returncode == 2 and "TILEPORT_STORE_BUSY_S" in r.stdout, r.stdout + r.stderr
        assert "Traceback" not in r.stderr
        assert time.monotonic() - t0 < 30
    finally:
        holder.execute("ROLLBACK")
        holder.close()
