"""Processes killed by a shared store: N writer processes open one fresh store at the same instant and each
records 25 stage runs (the issue #8 probe). Prints how many died and why.

    python benchmarks/bench_store_race.py [--rounds 3] [--procs 8] [--code DIR]

--code runs the writers against another checkout (e.g. an older tileport) for a before/after figure.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.store.test_store_concurrency import WRITER  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--code", default=str(REPO), help="checkout whose tileport the writers import")
    ns = ap.parse_args()
    deaths = total = 0
    why: dict[str, int] = {}
    for _ in range(ns.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "fresh" / "tileport.db"
            start = time.time() + 3
            ps = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(start), "25", f"p{k}"],
                                   env={**os.environ, "PYTHONPATH": ns.code}, cwd=tmp,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                  for k in range(ns.procs)]
            for p in ps:
                _, err = p.communicate()
                total += 1
                if p.returncode:
                    deaths += 1
                    last = (err.strip().splitlines() or ["?"])[-1][:120]
                    why[last] = why.get(last, 0) + 1
    print(f"{deaths} of {total} processes died ({ns.rounds} rounds x {ns.procs} processes, 25 writes each)")
    for line, n in sorted(why.items(), key=lambda kv: -kv[1]):
        print(f"  {n:3d}  {line}")


if __name__ == "__main__":
    main()
