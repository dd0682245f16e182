"""Time a cuTile Python op and its Triton twin on the GPU with the performance gate's own harness.

Travels to the GPU host and imports only the standard library, torch, triton and cuda.tile, plus its neighbours
`hostrun.py` and `../correctness.py` (loaded by path: run as a file, it needs no tileport package or its
dependencies there): the same CUPTI device time
(torch.profiler), the same L2 flush before every timed call (verified once per run), the same NaN-poisoned
allocations, medians of >= 20 repetitions after warm-up, and every timed output checked again against the op's
torch `reference`. Configurations are paired: each (dtype, shape, check variant) of the cuTile Python op's
TILEPORT declaration runs on both sides with the same inputs. Each row names the cuTile Python variant it
exercised (kernel and constants, recorded from its `ct.launch`), so the CPU side (`pairing.choose`) can pick the
faster side per variant.

    python tileport/validators/gpu/triton_bench.py CUTILE_OP.py TRITON_OP.py [--out bench.json] [--reps N]
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
GPU_DIR = HERE.parent


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _op_function(module, path: Path):
    name = path.stem
    fn = getattr(module, name, None)
    if not callable(fn):
        raise SystemExit(f"{path.name}: no function {name}() (the op's wrapper is named like its file)")
    return fn


class VariantRecorder:
    """Forwards `ct.launch` and remembers which kernel and ct.Constant values the wrapper launched."""

    def __init__(self, real, runner):
        self.real, self.runner, self.seen = real, runner, []

    def __call__(self, stream, grid, kernel, args):
        func = getattr(kernel, "_pyfunc", None) or getattr(getattr(kernel, "_annotated_function", None), "pyfunc",
                                                                   None)
        consts = {}
        if func is not None:
            for (pname, p), a in zip(inspect.signature(func).parameters.items(), args):
                if self.runner._is_constant(p.annotation):
                    consts[pname] = a if isinstance(a, (bool, int, float)) else str(a)
        self.seen.append({"kernel": getattr(func, "__name__", str(kernel)), "constants": consts})
        return self.real(stream, grid, kernel, args)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cutile")
    ap.add_argument("triton")
    ap.add_argument("--out", default="bench.json")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args(argv)
    R = _load(GPU_DIR / "hostrun.py", "tp_runner")
    C = _load(GPU_DIR.parent / "correctness.py", "tp_correctness")
    import torch
    import cuda.tile as ct

    if not torch.cuda.is_available():
        print("no GPU: torch sees no CUDA device", file=sys.stderr)
        return 3
    cpath, tpath = Path(args.cutile).resolve(), Path(args.triton).resolve()
    cmod, tmod = C.load_module(cpath), C.load_module(tpath)
    cfn, tfn = _op_function(cmod, cpath), _op_function(tmod, tpath)
    decl = C.read_declaration(cpath)
    variants = cmod.check_variants() if callable(getattr(cmod, "check_variants", None)) else [{}]
    flusher = R.Flusher(torch)
    hw = R.measure_hw(torch, flusher)
    reps = max(20, args.reps)
    out = {"cutile": str(cpath), "triton": str(tpath), "device": torch.cuda.get_device_name(0),
           "torch": torch.__version__, "triton_version": __import__("triton").__version__,
           "timing": (f"CUPTI device time (torch.profiler), L2 flushed before each call "
                      f"(verified: {hw.get('flush', {}).get('verified')}), median of {reps} after {args.warmup} "
                      "warm-up calls, timed outputs checked"), "hw": hw, "rows": [], "started_at": time.time()}
    for dtype in decl.get("dtypes") or ["float16"]:
        atol, rtol = C.tolerance_for(decl, dtype)
        for shape in decl.get("shapes") or []:
            for variant in variants:
                label = ",".join(f"{k}={v}" for k, v in shape.items()) + "".join(f" {k}={v}" for k, v in variant.items())
                row = {"config": f"{dtype} [{label}]", "dtype": dtype, "shape": shape, "variant": variant,
                       "flags": []}
                seed = C.case_seed(cpath.stem, dtype, shape, variant)
                sets = [cmod.make_inputs(dict(shape), dtype, device="cuda", seed=seed + 1 + i) for i in range(reps)]
                rec = VariantRecorder(ct.launch, R)
                with R._Patched(ct, cmod, rec):
                    cfn(**sets[0], **variant)
                torch.cuda.synchronize()
                row["cutile_variant"] = rec.seen
                for side, fn in (("cutile", cfn), ("triton", tfn)):
                    try:
                        for i in range(args.warmup):  # Triton's autotuner runs here, never inside the timed calls
                            fn(**sets[i % reps], **variant)
                        torch.cuda.synchronize()
                        outs = []

                        def one(i, fn=fn):
                            flusher()
                            with C.poisoned_allocations(torch):
                                outs.append(fn(**sets[i], **variant))

                        events = R._profile(one, reps)
                        segs = R._segments(events)
                        samples = [round(sum(d for _, d, n in seg if not R._harness(n)) / 1000.0, 6) for seg in segs]
                        row[f"{side}_kernels"] = sorted({n for seg in segs[:1] for _, _, n in seg if not R._harness(n)})
                        bad = 0
                        for i, o in enumerate(outs):
                            ref = C._outputs(cmod.reference(**sets[i], **variant))
                            for a, b in zip(C._outputs(o), ref):
                                if not C.compare(a.double(), b.double(), atol, rtol).ok:
                                    bad += 1
                        if bad:
                            row["flags"].append(f"{side}: {bad} timed outputs do not match the reference")
                        if len(segs) != reps:
                            row["flags"].append(f"{side}: {len(segs)} flushed segments for {reps} calls")
                        row[f"{side}_samples"] = samples
                        row[f"{side}_ms"] = statistics.median(samples) if samples and not bad else None
                    except Exception as e:  # one side failing must not lose the other's numbers
                        row["flags"].append(f"{side}: {type(e).__name__}: {str(e)[:300]}")
                        row[f"{side}_ms"] = None
                if row.get("cutile_ms") and row.get("triton_ms"):
                    row["ratio"] = row["triton_ms"] / row["cutile_ms"]
                out["rows"].append(row)
                print(f"{row['config']:<40} cutile {row.get('cutile_ms')} ms  triton {row.get('triton_ms')} ms  "
                      f"triton/cutile {row.get('ratio')}", flush=True)
                Path(args.out).write_text(json.dumps(out, indent=1, default=str))
    out["finished_at"] = time.time()
    Path(args.out).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
