"""Figures for Triton as a source: per example in examples/triton/, the analysis time (static + the capture child),
variants and captured launches, then the lift + lifted analysis + draft time and the holes left.

    python benchmarks/bench_triton.py [--python ~/.cache/tileport/torch-venv/bin/python] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tileport.draft.triton_lift import LiftIncomplete, draft_triton  # noqa: E402
from tileport.config import Config  # noqa: E402
from tileport.analysis.triton.pipeline import analyze_triton_op  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=str(Path.home() / ".cache/tileport/torch-venv/bin/python"))
    ap.add_argument("--out")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-triton-"))
    config = Config(targets=["sm_90"])
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; analysis python {args.python}")
    print(f"{'op':<10} {'analyse':>8} {'child':>7} {'capture':>8} {'variants':>8} {'launches':>8} "
          f"{'draft':>7} {'entries':>7} {'holes':>5}")
    for op in sorted((REPO / "examples" / "triton").glob("*.py")):
        t0 = time.perf_counter()
        a = analyze_triton_op(op, out_dir=out / f"{op.stem}.triton", config=config, python=args.python)
        t_an = time.perf_counter() - t0
        t1 = time.perf_counter()
        try:
            d, _, _ = draft_triton(a, out / f"{op.stem}.lift", config=config)
            entries, holes = len(d.spec.entries), len(d.holes)
        except LiftIncomplete as e:
            entries, holes = 0, len(e.holes)
        t_dr = time.perf_counter() - t1
        print(f"{op.stem:<10} {t_an:>7.1f}s {a.timings.child_s:>6.1f}s {a.timings.capture_s:>7.1f}s "
              f"{len(a.variants):>8} {a.capture.launches if a.capture else 0:>8} {t_dr:>6.1f}s {entries:>7} {holes:>5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
