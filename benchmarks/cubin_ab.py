"""Same launcher, several cubins: is a port/reference gap in the code or in the launch path?

Stage E times the reference through `ct.launch` and the port through its library (cutile's launcher). When their
kernels have the same launch configuration and near-identical SASS but still differ in device time, this benchmark
takes the launchers out: it loads each cubin with `cuModuleLoadData`, launches every one with plain
`cuLaunchKernel` on the same tensors, with the L2 flushed before each launch, in rotating order, and prints the
device time (CUDA events around the launch) of each, side by side, as a ratio to the first cubin of its case. A
case may also time the op's own Python wrapper (the reference through `ct.launch`) in the same loop.

    python benchmarks/cubin_ab.py PLAN.json [--reps 200] [--out RESULT.json]

PLAN.json (written on the CPU side; cubins from the bytecode stage E kept, `tileiras` with each JIT's flags):
    {"cases": [{"name", "grid": [x,y,z], "block": [x,y,z],
                "tensors": {name: {"shape": [...], "dtype": "float16"}},
                "wrapper": {"module": "examples/rms_norm.py", "function": "rms_norm",
                            "kwargs": {"x": "@x", "weight": "@w", "eps": 1e-6}}          (optional)
                "cubins": [{"label", "path", "entry", "args": [["ptr", name] | ["i32", v] | ["f32", v]]}]}]}

Needs a CUDA GPU with torch; cuda.tile only for a wrapper. Prints one line per cubin; never judges.
"""
from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import statistics
import sys
from pathlib import Path


def _cuda():
    lib = ctypes.CDLL("libcuda.so.1")

    def check(res, what):
        if res != 0:
            msg = ctypes.c_char_p()
            lib.cuGetErrorString(res, ctypes.byref(msg))
            raise RuntimeError(f"{what}: {msg.value.decode() if msg.value else res}")
    return lib, check


class Cubin:
    def __init__(self, lib, check, spec: dict, tensors: dict):
        self.lib, self.check, self.spec = lib, check, spec
        self.image = Path(spec["path"]).read_bytes()
        self.module = ctypes.c_void_p()
        check(lib.cuModuleLoadData(ctypes.byref(self.module), self.image), f"cuModuleLoadData {spec['path']}")
        self.func = ctypes.c_void_p()
        check(lib.cuModuleGetFunction(ctypes.byref(self.func), self.module, spec["entry"].encode()),
              f"cuModuleGetFunction {spec['entry']}")
        self.values = []
        for kind, value in spec["args"]:
            if kind == "ptr":
                self.values.append(ctypes.c_uint64(tensors[value].data_ptr()))
            elif kind == "i32":
                self.values.append(ctypes.c_int32(int(value)))
            elif kind == "i64":
                self.values.append(ctypes.c_int64(int(value)))
            elif kind == "f32":
                self.values.append(ctypes.c_float(float(value)))
            else:
                raise ValueError(f"unknown argument kind {kind!r}")
        self.params = (ctypes.c_void_p * len(self.values))(
            *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in self.values])

    def attributes(self) -> dict:
        out = {}
        for name, code in (("regs", 4), ("local_bytes", 3), ("static_smem", 1), ("max_threads", 0)):
            v = ctypes.c_int()
            self.check(self.lib.cuFuncGetAttribute(ctypes.byref(v), code, self.func), "cuFuncGetAttribute")
            out[name] = v.value
        return out

    def launch(self, grid, block, stream: int):
        self.check(self.lib.cuLaunchKernel(self.func, *grid, *block, 0, ctypes.c_void_p(stream), self.params, None),
                   f"cuLaunchKernel {self.spec['label']}")


def run_case(case: dict, reps: int, torch) -> dict:
    lib, check = _cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    tensors = {name: torch.randn(t["shape"], generator=gen, device="cuda").to(getattr(torch, t["dtype"]))
               for name, t in case["tensors"].items()}
    cubins = [Cubin(lib, check, spec, tensors) for spec in case["cubins"]]
    stream = torch.cuda.current_stream()
    grid, block = case["grid"], case["block"]
    runners = [(c.spec["label"], lambda c=c: c.launch(grid, block, stream.cuda_stream)) for c in cubins]
    outputs = {}
    for label, go in runners:  # one launch each, and what the outputs hold after it
        go()
        torch.cuda.synchronize()
        outputs[label] = {n: t.clone() for n, t in tensors.items()}
    wrapper = case.get("wrapper")
    if wrapper:
        spec = importlib.util.spec_from_file_location("ab_wrapper", wrapper["module"])
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        fn = getattr(mod, wrapper["function"])
        kwargs = {k: tensors[v[1:]] if isinstance(v, str) and v.startswith("@") else v
                  for k, v in wrapper["kwargs"].items()}
        runners.append((wrapper.get("label", "wrapper"), lambda: fn(**kwargs)))
        runners[-1][1]()
        torch.cuda.synchronize()
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    samples = {label: [] for label, _ in runners}
    for _ in range(5):  # warm-up
        for _, go in runners:
            go()
    torch.cuda.synchronize()
    for r in range(reps):
        order = runners[r % len(runners):] + runners[:r % len(runners)]
        events = []
        for label, go in order:
            flush.bitwise_not_()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            go()
            e.record()
            events.append((label, s, e))
        torch.cuda.synchronize()
        for label, s, e in events:
            samples[label].append(s.elapsed_time(e) * 1000.0)
    first = case["cubins"][0]["label"]
    base = statistics.median(samples[first])
    rows = []
    for label, _ in runners:
        med = statistics.median(samples[label])
        row = {"label": label, "median_us": round(med, 3), "ratio": round(med / base, 4),
               "p10_us": round(sorted(samples[label])[len(samples[label]) // 10], 3)}
        cub = next((c for c in cubins if c.spec["label"] == label), None)
        if cub is not None:
            row["attributes"] = cub.attributes()
            row["max_abs_diff_vs_first"] = max(
                (outputs[label][n].double() - outputs[first][n].double()).abs().nan_to_num(1e9).max().item()
                for n in tensors)
        rows.append(row)
    return {"case": case["name"], "reps": reps, "rows": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plan")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("cubin_ab: needs torch with CUDA", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("cubin_ab: no CUDA device", file=sys.stderr)
        return 2
    plan = json.loads(Path(args.plan).read_text())
    results = []
    print(torch.cuda.get_device_name(), flush=True)
    for case in plan["cases"]:
        try:
            res = run_case(case, args.reps, torch)
        except Exception as exc:  # one case's failure never hides the others
            print(f"{case['name']}: failed: {type(exc).__name__}: {exc}", flush=True)
            results.append({"case": case["name"], "error": f"{type(exc).__name__}: {exc}"})
            continue
        results.append(res)
        for row in res["rows"]:
            extra = f" attrs={row['attributes']} diff={row['max_abs_diff_vs_first']:.3g}" if "attributes" in row else ""
            print(f"{res['case']:<34} {row['label']:<22} {row['median_us']:>9.2f} us  x{row['ratio']:.4f}"
                  f"  p10 {row['p10_us']:.2f}{extra}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
