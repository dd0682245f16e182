"""Launch capture from the corpus' own tests on a real GPU vs on this CPU machine: are the launches the same?

    record OUT.json [--corpus DIR ...]   capture every op of the corpus (each in its own process) from the tests,
                                         __main__ blocks and scripts found for it; on a CPU machine with fake CUDA
                                         tensors, on a GPU machine with real ones (the launches are really made)
    compare CPU.json GPU.json            per op: the launches (kernel, grid, argument dtypes/shapes/values, the
                                         test id that made it) recorded on each side; exit 1 on any difference

Needs only the standard library, torch, cuda.tile and pytest (the GPU image has no pydantic): the capture modules
are imported without tileport's parent-side code. Bench scripts are given to the ops in their kernels/ tree, as
`--tests` would be. See the lead's GPU command in the issue #20 report.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPORA = [REPO / "corpora" / "tilekit" / "tune", REPO / "corpora" / "tilekit" / "heldout"]
TEST_DIRS = {"tests", "test", "bench", "benchmarks"}

ONE = r'''
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from tileport.analysis import capture as C
from tileport.analysis.testfind import discover
from tileport.analysis.mainblock import has_main_block
import importlib
root, dotted, op = Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
extra = json.loads(sys.argv[5])
sys.path.insert(0, str(root))
m = importlib.import_module(dotted)
tests = [str(p) for p in discover(op)] + extra
r = C.capture(m, ["float16", "float32"], tests=tests, op_path=op,
              run_main=has_main_block(op))
def arg(a):
    d = C.describe_arg(a)
    return f"{d['dtype']}[{'x'.join(map(str, d['shape']))}]" if d["kind"] == "tensor" else repr(d.get("value", d["kind"]))
out = sorted({json.dumps({"kernel": ln.kernel._annotated_function.pyfunc.__name__, "grid": repr(tuple(ln.grid)),
                          "args": [arg(a) for a in ln.args], "source": ln.source, "origin": ln.entry})
              for ln in r["launches"]})
print("@@RESULT@@" + json.dumps({"mode": r["mode"], "launches": [json.loads(x) for x in out], "errors": r["errors"],
                                 "tests": tests, "seconds": r["seconds"]}))
'''


def ops(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "ct.kernel" in p.read_text(encoding="utf-8")
                  and not TEST_DIRS & set(p.relative_to(root).parts[:-1]) and not p.name.startswith(("test_", "bench_")))


def dotted(root: Path, op: Path) -> str:
    return ".".join(op.relative_to(root).with_suffix("").parts)


def record(out: Path, corpora: list[Path]) -> int:
    result: dict[str, dict] = {}
    for root in corpora:
        for op in ops(root):
            benches = [str(b) for d in ("bench", "benchmarks") for b in sorted((root / d).glob(f"bench_{op.stem}.py"))] \
                if "kernels" in op.parts else []
            t0 = time.perf_counter()
            name = f"{root.name}/{op.relative_to(root)}"
            try:
                res = subprocess.run([sys.executable, "-c", ONE, str(REPO), str(root), dotted(root, op), str(op),
                                      json.dumps(benches)], capture_output=True, text=True, timeout=600, cwd=root,
                                     env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
                line = next((ln for ln in res.stdout.splitlines() if ln.startswith("@@RESULT@@")), None)
                got = json.loads(line[len("@@RESULT@@"):]) if line else \
                    {"error": f"exit {res.returncode}: {' '.join(res.stderr.split()[-40:])}"}
            except subprocess.TimeoutExpired:
                got = {"error": "timed out after 600 s"}
            result[name] = got
            print(f"{name:<44} {got.get('mode', 'FAILED'):<20} {len(got.get('launches', [])):>4} launches "
                  f"{time.perf_counter() - t0:6.1f} s  {got.get('error', '')[:200]}", flush=True)
    out.write_text(json.dumps(result, indent=1, sort_keys=True))
    print(f"wrote {out}")
    return 0


def _key(ln: dict) -> tuple:
    return (ln["kernel"], ln["grid"], tuple(ln["args"]), ln["source"], ln["origin"])


def compare(cpu_path: Path, gpu_path: Path) -> int:
    cpu, gpu = json.loads(cpu_path.read_text()), json.loads(gpu_path.read_text())
    bad = 0
    for name in sorted(set(cpu) | set(gpu)):
        a, b = cpu.get(name, {}), gpu.get(name, {})
        ka, kb = {_key(x) for x in a.get("launches", [])}, {_key(x) for x in b.get("launches", [])}
        same = ka == kb and bool(ka)
        bad += not same
        print(f"{name:<44} cpu {len(ka):>3}  gpu {len(kb):>3}  {'SAME' if same else 'DIFFERENT'}"
              f"{'' if same else f'  cpu-only {len(ka - kb)}, gpu-only {len(kb - ka)}'}")
        for k in sorted(ka ^ kb)[:4]:
            print(f"    {'cpu' if k in ka else 'gpu'} only: {k}")
        for side, d in (("cpu", a), ("gpu", b)):
            if d.get("error"):
                print(f"    {side} error: {d['error'][:300]}")
    print(f"{len(set(cpu) | set(gpu)) - bad} of {len(set(cpu) | set(gpu))} ops recorded the same launches on both")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("out", type=Path)
    r.add_argument("--corpus", type=Path, action="append")
    c = sub.add_parser("compare")
    c.add_argument("cpu", type=Path)
    c.add_argument("gpu", type=Path)
    args = ap.parse_args()
    if args.cmd == "record":
        return record(args.out, [p.resolve() for p in args.corpus] if args.corpus else CORPORA)
    return compare(args.cpu, args.gpu)


if __name__ == "__main__":
    sys.exit(main())
