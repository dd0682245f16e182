"""Whether the port and its reference ran the same machine code, per timed configuration of a GPU run.

The GPU runner keeps, per timed row, the Tile IR bytecode each side's JIT compiled (results.json `bytecode`).
This assembles both with one tileiras (the bundle's version or newer: the H200 run's cutile writes 13.5 bytecode),
disassembles them with cuobjdump and compares the instruction streams with register and predicate numbers and
immediates taken out. Where they are the same, port/ref can differ by noise only; the geomean is printed over
those rows and over the rest, beside the A/A spread of the same run (the reference timed twice).

    python benchmarks/gpu_sass_compare.py OUT/*.json --bin DIR   # DIR holds tileiras and cuobjdump (13.5:
                                                                 # pip download nvidia-cuda-tileiras==13.5.*
                                                                 # nvidia-cuda-cuobjdump==13.5.*, unzip)
"""

from __future__ import annotations

import argparse
import base64
import collections
import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path

INSTRUCTION = re.compile(r"\s*/\*[0-9a-f]{4}\*/\s+(.*?)\s*;")


def _normal(line: str) -> str:
    line = re.sub(r"0x[0-9a-f]+", "K", line)
    line = re.sub(r"\bU?R\d+\b", "R", line)
    return re.sub(r"\bU?P\d\b", "P", line)


def sass(bytecode: bytes, tools: Path, work: Path, gpu: str) -> list[str]:
    """The normalised SASS instructions tileiras makes of one bytecode for `gpu`."""
    bc, cubin = work / "k.tileirbc", work / "k.cubin"
    bc.write_bytes(bytecode)
    subprocess.run([str(tools / "tileiras"), "--gpu-name", gpu, "--opt-level", "3", "-o", str(cubin), str(bc)],
                   check=True, capture_output=True, text=True, timeout=300)
    out = subprocess.run([str(tools / "cuobjdump"), "-sass", str(cubin)], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    return [_normal(m.group(1)) for m in map(INSTRUCTION.match, out.splitlines()) if m]


def geomean(xs: list[float]) -> float | None:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="same machine code on both sides? per timed configuration")
    ap.add_argument("results", nargs="+", type=Path, help="results.json files of a GPU run")
    ap.add_argument("--bin", required=True, type=Path, help="directory with tileiras and cuobjdump")
    ap.add_argument("--gpu", default="sm_90")
    args = ap.parse_args(argv)
    for tool in ("tileiras", "cuobjdump"):
        if not (args.bin / tool).exists():
            print(f"no {tool} in {args.bin}", file=sys.stderr)
            return 2
    cache: dict[str, list[str]] = {}
    same, other, spreads = [], [], []
    print("| op | config | port/ref | ref again/first | SASS (ref / port instructions) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="tp-sass-") as tmp:
        for path in args.results:
            try:
                res = json.loads(path.read_text())
            except (OSError, ValueError) as e:
                print(f"{path}: cannot read: {e}", file=sys.stderr)
                return 2
            store = res.get("bytecode") or {}
            for row in (res.get("perf") or {}).get("rows") or []:
                bc = row.get("bytecode") or {}
                if not row.get("ratio") or len(bc.get("ref") or []) != 1 or len(bc.get("port") or []) != 1:
                    continue
                try:
                    r, p = (cache.setdefault(h, sass(base64.b64decode(store[h]), args.bin, Path(tmp), args.gpu))
                            for h in (bc["ref"][0], bc["port"][0]))
                except (KeyError, subprocess.SubprocessError) as e:
                    print(f"{path.stem} {row['config']}: not compared ({type(e).__name__})", file=sys.stderr)
                    continue
                identical = r == p
                if identical:
                    what = f"same ({len(r)})"
                else:
                    cr, cp = collections.Counter(i.split()[0] for i in r), collections.Counter(i.split()[0] for i in p)
                    diff = sorted(k for k in set(cr) | set(cp) if cr[k] != cp[k])
                    what = (f"differs ({len(r)} / {len(p)}" + (f"; counts of {', '.join(diff[:4])}" if diff else
                                                               "; same counts, other order") + ")")
                spread = (row.get("ref_again") or {}).get("spread")
                if not row.get("tiny"):
                    (same if identical else other).append(row["ratio"])
                    if spread:
                        spreads.append(spread)
                print(f"| {res.get('gate', {}).get('op', path.stem)} | {row['config']} | {row['ratio']:.4f} | "
                      f"{spread and round(spread, 4)} | {what}{' (tiny)' if row.get('tiny') else ''} |")
    for label, xs in (("same SASS", same), ("other SASS", other), ("all", same + other), ("A/A", spreads)):
        g = geomean(xs)
        print(f"geomean over timed, not tiny rows, {label}: {g:.4f} ({len(xs)})" if g else f"{label}: none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
