"""Benchmark: how long the merge rule takes to answer (the dashboard asks it per conversion on refresh).

A real git repository with a conversion branch of N stage commits (trailers as `tileport run` writes them) and a
store holding N stage runs; every required gate passed and HEAD is approved. Timed, each repeated:

* check_merge  - the full rule, no change made (gate freshness walks the commits since each gate's run; merge-tree)
* approve      - a decision: gate snapshot, store row and git note, under the repository lock
* merge        - check + merge commit + compare-and-swap of the target (a fresh conversion each time)

Medians and the git commands per check are printed. Run: .venv/bin/python benchmarks/bench_merge_gate.py
[--commits 40] [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from gitconv import Conv  # noqa: E402  (the tests' real-git conversion builder)

from tileport.config import Config  # noqa: E402
from tileport.store import Store  # noqa: E402
from tileport.worktrees import _gitcli, approval, merge  # noqa: E402


def build(root: Path, store: Store, commits: int, repo: Path | None = None) -> Conv:
    conv = Conv(root, store, repo=repo)
    stages = "ABCDE"
    for i in range(commits - 4):
        conv.run(stages[i % 5], passing=True) if stages[i % 5] != "C" else conv.stage_commit("C")
    conv.all_pass()  # the newest A, B, D, E pass near HEAD, with C/E commits between them
    return conv


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    cfg = Config()
    cfg.approval.name = "bench"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = Store(root / "t.db")
        conv = build(root / "c0", store, args.commits)
        approval.approve(store, cfg, conv.cid)
        calls = []
        real = _gitcli.run_command
        with mock.patch.object(_gitcli, "run_command", side_effect=lambda *a, **k: calls.append(a) or real(*a, **k)):
            assert merge.check_merge(store, cfg, conv.cid).refusals == []
        checks, approves, merges = [], [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            merge.check_merge(store, cfg, conv.cid)
            checks.append(time.perf_counter() - t)
            t = time.perf_counter()
            approval.approve(store, cfg, conv.cid)
            approves.append(time.perf_counter() - t)
        for i in range(args.repeat):
            other = build(root / f"m{i}", store, 8, repo=conv.repo)
            approval.approve(store, cfg, other.cid)
            t = time.perf_counter()
            out = merge.merge(store, cfg, other.cid)
            merges.append(time.perf_counter() - t)
            assert out.merged, out.refusals
        store.close()
    print(f"branch of {args.commits} stage commits, {args.repeat} repeats (real git, real SQLite)")
    print(f"  check_merge  median {statistics.median(checks) * 1e3:7.1f} ms  best {min(checks) * 1e3:7.1f} ms  "
          f"({len(calls)} git commands)")
    print(f"  approve      median {statistics.median(approves) * 1e3:7.1f} ms  best {min(approves) * 1e3:7.1f} ms")
    print(f"  merge        median {statistics.median(merges) * 1e3:7.1f} ms  best {min(merges) * 1e3:7.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
