"""Benchmark: structural diff of two ~1,000-op Tile IR kernels (target: under 200 ms).

The kernels are real compiler output: a long straight-line cuTile Python kernel (`unrolled_series`,
`ct.static_iter` unrolls its loop) exported by cuda-tile and disassembled by tileirdisasm, so the
text has the ops, names and layout the diff sees in practice. Timed cases:

* identical   - the kernel against itself with every value renamed (PASS path)
* mutated     - against a mutant whose approx-exp is one op in the middle (FAIL path)
* real pair   - against the same series with N+1 terms (different length: alignment work)
* int forms   - a kernel of masked gathers over integer index arithmetic against a port that writes its
                ceil-divisions out (equivalent integer forms, masks and addresses compared on every op)

Each run is cold (memo caches cleared) and covers parse (both sides) + canonicalize + align + checks
+ report. The budget is judged on the median run (the best run is printed too). The diff keeps
Python's cyclic GC paused while it runs and breaks its own reference cycles, so it should leave no
garbage behind: after every timed run (outside the timing) a full `gc.collect()` counts the objects
it frees ("garbage", the most over the runs); a diff that left cycles behind, whose collection cost
would land after the timed region, shows up there.
Run: .venv/bin/python benchmarks/bench_ir_diff.py [--ops 1000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from ir_kernels.build import compile_text, tileirdisasm  # noqa: E402
from ir_kernels.kernels import (  # noqa: E402
    unrolled_gathers, unrolled_gathers_manual, unrolled_gathers_sig, unrolled_series, unrolled_sig,
)
from tileport.validators.tileir.canon import clear_caches  # noqa: E402
from tileport.validators.tileir.diff import diff_texts  # noqa: E402
from tileport.validators.tileir.parse import parse_text, walk_ops  # noqa: E402


def n_ops(text: str) -> int:
    return sum(1 for e in parse_text(text).entries for _ in walk_ops(e.body.ops))


def kernel_with_ops(target: int) -> tuple[str, int]:
    """Compile the series with enough terms for about `target` ops."""
    terms = max(1, target // 9)
    while True:
        text = compile_text(unrolled_series, unrolled_sig(terms))
        ops = n_ops(text)
        if ops >= target:
            return text, terms
        terms += max(1, (target - ops) // 9 + 1)


def rename_all(text: str) -> str:
    names = sorted(set(re.findall(r"%[A-Za-z_][\w.$-]*|%\d+", text)))
    mapping = {n: f"%r{k}" for k, n in enumerate(reversed(names))}
    return re.sub(r"%[A-Za-z_][\w.$-]*|%\d+", lambda m: mapping[m.group(0)], text)


def time_diff(ref: str, port: str, repeat: int) -> tuple[float, float, float, int, str, int]:
    """(median wall ms, best wall ms, median CPU ms of this process, most objects a full collection
    after a run freed, verdict, findings)."""
    wall, cpu, garbage = [], [], []
    rep = None
    for _ in range(repeat):
        clear_caches()  # every run starts cold, like one `tileport ir-diff` invocation
        c0, t0 = time.process_time(), time.perf_counter()
        rep = diff_texts(ref, port)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        garbage.append(gc.collect())  # what the run left for the cyclic GC (should be nothing)
    return (statistics.median(wall), min(wall), statistics.median(cpu), max(garbage), rep.verdict.value,
            len(rep.findings))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=1000, help="ops per kernel (default 1000)")
    ap.add_argument("--repeat", type=int, default=15, help="timed runs per case (default 15)")
    ap.add_argument("--budget-ms", type=float, default=200.0, help="target per diff (default 200)")
    args = ap.parse_args()
    if tileirdisasm() is None:
        print("tileirdisasm not found: pip install 'cuda-tile[tileiras]'", file=sys.stderr)
        return 2

    ref, terms = kernel_with_ops(args.ops)
    longer = compile_text(unrolled_series, unrolled_sig(terms + 1))
    lines = ref.splitlines()
    exps = [k for k, l in enumerate(lines) if re.search(r"= exp %", l)]
    mid = exps[len(exps) // 2]
    lines[mid] = lines[mid].replace(" : tile<", " rounding<approx> : tile<", 1)
    mutated = "\n".join(lines) + "\n"

    print(f"kernel: unrolled_series, {terms} terms, {n_ops(ref)} ops, {len(ref.splitlines())} lines "
          f"({len(ref) // 1024} KiB); {args.repeat} cold runs per case")
    cases = [("identical (renamed)", ref, rename_all(ref)), ("mutated (1 op)", ref, mutated),
             (f"real pair ({n_ops(longer)} ops)", ref, longer)]
    # integer index arithmetic and masked gathers, the port writing its ceil-divisions out: the equivalence layer,
    # mask and address comparisons on every op
    g_terms = max(1, args.ops // 35)
    g_ref = compile_text(unrolled_gathers, unrolled_gathers_sig(g_terms))
    g_port = compile_text(unrolled_gathers_manual, unrolled_gathers_sig(g_terms))
    cases.append((f"int forms ({n_ops(g_ref)}/{n_ops(g_port)})", g_ref, g_port))
    worst = 0.0
    gc.collect()
    print(f"  {'case':<24} {'wall median':>12} {'wall best':>10} {'CPU median':>11} {'garbage':>8}")
    for label, base, port in cases:
        med, best, cpu, garbage, verdict, nf = time_diff(base, port, args.repeat)
        worst = max(worst, med)
        print(f"  {label:<24} {med:9.1f} ms {best:7.1f} ms {cpu:8.1f} ms {garbage:8d}"
              f"   -> {verdict} ({nf} findings)")
    parse = []
    for _ in range(args.repeat):
        clear_caches()
        t0 = time.perf_counter()
        parse_text(ref)
        parse.append((time.perf_counter() - t0) * 1000)
    print(f"  parse alone (one side)   {statistics.median(parse):9.1f} ms median {min(parse):6.1f} ms best")
    try:
        load = f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    except OSError:
        load = "unknown"
    ok = worst < args.budget_ms
    print(f"{'OK' if ok else 'OVER BUDGET'}: slowest median of {args.repeat} {worst:.1f} ms "
          f"(target < {args.budget_ms:.0f} ms; load average {load})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
