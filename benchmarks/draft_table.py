"""The draft translator's scorecard: every example and held-out op drafted with no model, built by real cargo +
cutile 0.5.0, and IR-self-checked against its real reference export (sm_90, no cubins).

    python benchmarks/draft_table.py [--ops a,b,...] [--json FILE]

One row per op: kernels, Rust entries, pairs checked, holes, build result, IR self-check verdicts
(PASS / PASS_WITH_NOTES / FAIL_FIXABLE / NOT_COMPILED counts) and drafting time. Slow (one cargo build per op).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tileport.agents.draft import draft_port  # noqa: E402
from tileport.validators.analysis import analyze_op  # noqa: E402
from tileport.validators.rust.build import BuildOptions, build_crate  # noqa: E402
from tileport.validators.rust.crate import crate_cache_root, write_crate  # noqa: E402
from tileport.validators.rust.selfcheck import self_check  # noqa: E402

EXAMPLES = ["vector_add", "matmul", "softmax", "rms_norm", "silu_and_mul", "attention", "persistent_matmul",
            "gather_softmax"]
HELDOUT = ["layer_norm", "masked_axpby", "transpose", "column_sum", "linear_relu", "embedding"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", help="comma-separated subset")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args()
    ops = [o for o in EXAMPLES + HELDOUT if not args.ops or o in args.ops.split(",")]
    rows = []
    print(f"{'op':<18} {'set':<8} {'kernels':>7} {'entries':>7} {'pairs':>5} {'holes':>5} {'build':>6} "
          f"{'PASS':>4} {'NOTES':>5} {'FAIL':>4} {'draft_ms':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for op in ops:
            held = op in HELDOUT
            src = REPO / ("tests/draft_heldout" if held else "examples") / f"{op}.py"
            analysis = analyze_op(src, targets=["sm_90"], out_dir=Path(tmp) / op, run_tileiras=False, warm=True)
            t0 = time.perf_counter()
            draft = draft_port(analysis)
            ms = (time.perf_counter() - t0) * 1e3
            row = {"op": op, "set": "heldout" if held else "example", "kernels": len(analysis.kernels),
                   "entries": len(draft.spec.entries), "holes": [str(h) for h in draft.holes], "draft_ms": ms}
            if draft.holes:
                row.update(build="holes", verdicts={})
            else:
                layout = write_crate(crate_cache_root() / f"table-{op}", draft.spec, draft.kernel_rs)
                result = build_crate(layout, BuildOptions(cubins=False))
                report = self_check(result, analysis, layout.spec)
                row.update(build="ok" if result.ok else "FAIL",
                           verdicts=dict(Counter(p.verdict for p in report.pairs)),
                           failing_checks=sorted({f.check for p in report.pairs for f in p.findings
                                                  if f.severity.value == "error"}))
            v = row["verdicts"]
            rows.append(row)
            print(f"{op:<18} {row['set']:<8} {row['kernels']:>7} {row['entries']:>7} {sum(v.values()):>5} "
                  f"{len(row['holes']):>5} {row['build']:>6} {v.get('PASS', 0):>4} {v.get('PASS_WITH_NOTES', 0):>5} "
                  f"{v.get('FAIL_FIXABLE', 0) + v.get('NOT_COMPILED', 0):>4} {ms:>8.1f}", flush=True)
    for held in (False, True):
        sel = [r for r in rows if (r["set"] == "heldout") == held]
        k = sum(r["kernels"] for r in sel)
        ok = sum(r["kernels"] for r in sel if r["build"] == "ok" and not r["verdicts"].get("FAIL_FIXABLE")
                 and not r["verdicts"].get("NOT_COMPILED"))
        print(f"{'held-out' if held else 'examples'}: {ok}/{k} kernels drafted, built and IR-self-checked "
              f"PASS/PASS_WITH_NOTES")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
