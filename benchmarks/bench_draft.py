"""Drafting time per op (target: under 1 s): `draft_port` on each example's analysis, median of repeats.

    python benchmarks/bench_draft.py [--repeat N] [--out-root out]
    python benchmarks/bench_draft.py --corpus [DIR] [--repeat N]

Needs the analyses (`tileport analyze` writes out/<op>/analysis.json), or with --corpus analyses a corpus of op files
first (not timed; default tests/data/draft_corpus, or any DIR such as tests/data/draft_realworld); prints one line per
op: entries, spec variants, holes, median and max seconds, then the whole corpus drafted once (sum of the ops'
medians) and a verdict against the 1 s per-op target.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tileport.draft import draft_port  # noqa: E402
from tileport.validators.rust.reference import load_analysis  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--out-root", default=str(REPO / "out"))
    ap.add_argument("--corpus", nargs="?", const="", metavar="DIR",
                    help="analyse and time a corpus of op files instead (default tests/data/draft_corpus)")
    args = ap.parse_args()
    if args.corpus is not None:
        import tempfile

        from benchmarks.draft_table import CORPUS, corpus_ops, torch_python
        from tileport.analysis import analyze_op
        tmp = Path(tempfile.mkdtemp(prefix="bench-draft-"))
        root = Path(args.corpus or CORPUS).resolve()
        for op in corpus_ops(None, root):
            try:
                analyze_op(op, targets=["sm_90"], out_dir=tmp / op.parent.name / op.stem, run_tileiras=False,
                           warm=True, python=torch_python())
            except Exception as e:  # noqa: BLE001 - stage A refused it: not timed here
                print(f"{op.stem}: analysis failed ({type(e).__name__}: {str(e)[:80]})", file=sys.stderr)
        args.out_root = str(tmp)
    roots = sorted(p.parent for p in Path(args.out_root).glob("*/analysis.json"))
    roots += sorted(p.parent for p in Path(args.out_root).glob("*/*/analysis.json"))
    if not roots:
        print(f"no analyses under {args.out_root}: run `tileport analyze` first", file=sys.stderr)
        return 2
    worst = 0.0
    total = 0.0
    print(f"{'op':<20} {'entries':>7} {'variants':>8} {'holes':>5} {'median_ms':>10} {'max_ms':>8}")
    for root in roots:
        analysis = load_analysis(root)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            d = draft_port(analysis)
            times.append(time.perf_counter() - t0)
        variants = sum(len(e.variants) for e in d.spec.entries)
        worst = max(worst, max(times))
        total += statistics.median(times)
        print(f"{analysis.op:<20} {len(d.spec.entries):>7} {variants:>8} {len(d.holes):>5} "
              f"{statistics.median(times) * 1e3:>10.1f} {max(times) * 1e3:>8.1f}")
    import os
    print(f"whole corpus: {len(roots)} ops drafted in {total:.2f} s (sum of medians, one process, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    print(f"slowest single draft: {worst * 1e3:.1f} ms (target < 1000 ms): {'OK' if worst < 1.0 else 'TOO SLOW'}")
    return 0 if worst < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
