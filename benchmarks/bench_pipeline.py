"""Benchmark: `tileport run` orchestration overhead per stage, and N conversions at once.

Everything is real (git worktrees and commits, SQLite, cuda-tile exports, cargo when the writer writes a
kernel); the writer is `none` (no model) by default, or `--model scripted:pipeline_vector_add_rustc_fix`
for real cargo builds in stage B.

1. Overhead per stage (target < 50 ms): for every stage attempt the runner records its wall time, the stage's
   own time (the tools it ran: analysis, cargo, model) and the git commit (a tool too); overhead is the rest:
   discarding leftovers, the parent-checkout check, routing, the JSON record, the store write and events.
2. Concurrency: one conversion alone, then N conversions (copies of examples/vector_add.py) with --jobs J.
   The claim: N at once finish no slower than the slowest single one plus the cargo queue (the sum of the
   cargo-bound stage time, since cargo builds are limited to one at a time).

Run: .venv/bin/python benchmarks/bench_pipeline.py [--n 8] [--jobs 4] [--model none|scripted:NAME]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import git

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tileport.agents.context import Limits  # noqa: E402
from tileport.agents.runner import Runner  # noqa: E402
from tileport.config import Config  # noqa: E402


def make_repo(root: Path, n: int) -> Path:
    repo = root / "proj"
    repo.mkdir()
    g = git.Repo.init(repo, initial_branch="main")
    src = (ROOT / "examples" / "vector_add.py").read_text()
    names = []
    for i in range(n):
        name = f"va{i}.py"
        (repo / name).write_text(src)
        names.append(name)
    g.index.add(names)
    g.index.commit("ops", author=git.Actor("b", "b@b"), committer=git.Actor("b", "b@b"))
    return repo


def run(repo: Path, ops: list[str], model: str, jobs: int) -> tuple[float, Runner, list]:
    config = Config(targets=["sm_90"], store=str(repo / ".tileport" / "tileport.db"))
    runner = Runner(config, model=model, limits=Limits.of(model=2, cargo=1, gpu=1), out=lambda _l: None)
    t0 = time.perf_counter()
    finished = runner.run_many([(str(repo / op), None) for op in ops], repo=repo, jobs=jobs)
    return time.perf_counter() - t0, runner, finished


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--model", default="none")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    try:
        repo = make_repo(tmp, args.n + 1)
        single_s, r1, f1 = run(repo, ["va0.py"], args.model, 1)
        many_s, rn, fn = run(repo, [f"va{i + 1}.py" for i in range(args.n)], args.model, args.jobs)
        rows = [t for runner in (r1, rn) for ts in runner.timing.values() for t in ts]
        by_stage: dict[str, list[float]] = {}
        for t in rows:
            by_stage.setdefault(t["stage"], []).append(t["overhead_s"] * 1000)
        print(f"tileport run benchmark: model {args.model}, {len(rows)} stage attempts "
              f"({1 + args.n} conversions of vector_add)")
        print(f"  {'stage':<6} {'n':>3} {'overhead median ms':>19} {'max ms':>8} {'commit median ms':>17} "
              f"{'stage median s':>15}")
        for stage in sorted(by_stage):
            ts = [t for t in rows if t["stage"] == stage]
            print(f"  {stage:<6} {len(ts):>3} {statistics.median(by_stage[stage]):>19.1f} "
                  f"{max(by_stage[stage]):>8.1f} {statistics.median(t['commit_s'] * 1000 for t in ts):>17.1f} "
                  f"{statistics.median(t['stage_s'] for t in ts):>15.2f}")
        allo = [x for v in by_stage.values() for x in v]
        print(f"  overhead per stage: median {statistics.median(allo):.1f} ms, max {max(allo):.1f} ms "
              f"(target < 50 ms) -> {'OK' if max(allo) < 50 else 'OVER'}")
        single_stage = {t["stage"]: t["stage_s"] for ts in r1.timing.values() for t in ts}
        cargo_queue = sum(t["stage_s"] for ts in rn.timing.values() for t in ts if t["stage"] == "B") \
            if args.model != "none" else 0.0
        print(f"  1 conversion alone: {single_s:.1f} s ({', '.join(f'{k} {v:.1f} s' for k, v in single_stage.items())}; "
              f"{f1[0].status})")
        print(f"  {args.n} conversions, --jobs {args.jobs}: {many_s:.1f} s "
              f"({', '.join(sorted({f.status for f in fn}))}); bound = slowest single {single_s:.1f} s "
              f"+ cargo queue {cargo_queue:.1f} s = {single_s + cargo_queue:.1f} s -> "
              f"{'OK' if many_s <= single_s + cargo_queue else 'OVER'}")
        print(f"  (sequential estimate {args.n} x {single_s:.1f} s = {args.n * single_s:.1f} s; 2-core machine shared "
              "with other work: stage A is CPU-bound)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
