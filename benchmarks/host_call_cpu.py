"""The Python side of a port launch on the CPU, no GPU: PortLauncher (as `ct.launch`) -> plan -> the bound ctypes
call, with the entry's C function a stub that returns at once (compiled here with cc from the bindings of
examples/vector_add.py's draft), on CPU torch tensors. What it prints is what the host path costs before the
library's own work (benchmarks/gpu_host_call.py measures the whole call on a GPU host).

    ~/.cache/tileport/torch-venv/bin/python benchmarks/host_call_cpu.py [--tileport-python .venv/bin/python]

On a GPU host, whose interpreter has torch but not tileport's dependencies: build the stub here with
`--write-stub DIR/libstub.so`, carry it, and run there with `--stub DIR/libstub.so --runner GATE/runner.py` (the
launcher taken from a packed gate's runner, which carries it whole), to see what the same Python side costs on
that host's CPU.

Prints microseconds per launch: a warm launch through PortLauncher, its parts (the plan's guarded launch, the
call), a C call alone (through tp_invoke, and with the entry's ten arguments as a library without it is called),
and a warm launch with stage E's bytecode dumps on, each the best of 5 rounds of 20000; then a warm launch and ten
tensor.stride() calls right after the thread slept 1 ms and 100 ms (median of 30): what waiting does to any code.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

STUB = r"""
#include <stdint.h>
#include <stddef.h>
extern const char *BINDINGS;
int32_t tp_abi_version(void) { return 1; }
const char *tp_bindings(void) { return BINDINGS; }
int32_t tp_vector_add__f32(void *s, int32_t d, const uint32_t *g, const char *gen, const void *t, int32_t nt,
                           const void *sc, int32_t ns, char *err, size_t len) { return 0; }
typedef int32_t (*entry_t)(void *, int32_t, const uint32_t *, const char *, const void *, int32_t, const void *,
                           int32_t, char *, size_t);
typedef struct { entry_t entry; void *s; int64_t d; const uint32_t *g; const char *gen; const void *t; int64_t nt;
                 const void *sc; int64_t ns; char *err; size_t len; } tp_invoke_t;  /* ffi_prelude.rs's TpInvoke */
int32_t tp_invoke(const tp_invoke_t *p) {
  return p && p->entry ? p->entry(p->s, (int32_t)p->d, p->g, p->gen, p->t, (int32_t)p->nt, p->sc, (int32_t)p->ns,
                                  p->err, p->len) : 2;
}
"""


RENDER = """
import json, sys
from pathlib import Path
from tileport.validators.gpu.ffi import render_ffi
from tileport.validators.rust.spec import load_spec
d = Path(sys.argv[1])
print(json.dumps(render_ffi((d / "kernel.rs").read_text(), load_spec(d / "spec.json"), ["float32"]).bindings))
"""


def _stub_library(work: Path, tileport_python: str) -> Path:
    """NAMED FAKE: a library with the port's ABI whose vector_add entry does nothing (no GPU here). The draft and
    its bindings come from tileport's own interpreter (this one needs only torch and cuda.tile)."""
    draft = work / "draft"
    env = {"PYTHONPATH": str(REPO)}
    subprocess.run([tileport_python, "-m", "tileport", "draft", str(REPO / "examples" / "vector_add.py"), "--out",
                    str(draft)], check=True, capture_output=True, cwd=REPO, env={**os.environ, **env})
    bindings = subprocess.run([tileport_python, "-c", RENDER, str(draft)], check=True, capture_output=True,
                              text=True, cwd=REPO, env={**os.environ, **env}).stdout.strip()
    (work / "stub.c").write_text(STUB + "const char *BINDINGS = " + json.dumps(bindings) + ";\n")
    so = work / "libstub.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(so), str(work / "stub.c")], check=True)
    return so


def _per(fn, n: int = 20000) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tileport-python", default=str(REPO / ".venv" / "bin" / "python"),
                    help="an interpreter with tileport's dependencies (draft, bindings)")
    ap.add_argument("--write-stub", type=Path, help="build the stub library to this path and stop")
    ap.add_argument("--stub", type=Path, help="a stub library built before with --write-stub")
    ap.add_argument("--runner", type=Path, help="a packed gate's runner.py to take the launcher from")
    args_ = ap.parse_args()
    if args_.write_stub:
        built = _stub_library(Path(tempfile.mkdtemp(prefix="tp-hostcpu-")), args_.tileport_python)
        args_.write_stub.write_bytes(built.read_bytes())
        print(f"stub library: {args_.write_stub}")
        return 0
    import torch  # only the timing needs it: the stub is built with tileport's interpreter

    if args_.runner:
        spec = importlib.util.spec_from_file_location("tp_runner_hostcpu", args_.runner)
        hostrun = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = hostrun
        spec.loader.exec_module(hostrun)
    else:
        from tileport.validators.gpu import hostrun
    PortLauncher, PortLibrary, BytecodeDumps = hostrun.PortLauncher, hostrun.PortLibrary, hostrun.BytecodeDumps

    spec = importlib.util.spec_from_file_location("va", REPO / "examples" / "vector_add.py")
    va = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(va)
    lib = PortLibrary(args_.stub or _stub_library(Path(tempfile.mkdtemp(prefix="tp-hostcpu-")), args_.tileport_python))
    launcher = PortLauncher(lib)
    x, y, out = torch.randn(4096), torch.randn(4096), torch.empty(4096)
    stream = types.SimpleNamespace(cuda_stream=0)
    args, grid = (x, y, out, 1024), (4, 1, 1)
    launcher(stream, grid, va.vector_add_kernel, args)
    plan = lib.hot[id(va.vector_add_kernel)][0]

    def warm():
        launcher(stream, grid, va.vector_add_kernel, args)
        launcher.clear()

    def plan_only():
        plan.launch(launcher, stream, grid, args)
        launcher.clear()

    print(f"warm launch through PortLauncher: {_per(warm):.2f} us")
    print(f"  the plan's launch (its guards read with the arguments, rewrite what changed, call): "
          f"{_per(plan_only):.2f} us")
    print(f"  the C call alone (arguments converted once, one block through tp_invoke): "
          f"{_per(lambda: plan.bound.call(0)):.2f} us")
    ten = PortLibrary(lib.path)
    ten.invoker = None  # a library built before tp_invoke: the entry called with its ten arguments
    PortLauncher(ten)(stream, grid, va.vector_add_kernel, args)
    print(f"  the C call alone, ten arguments (a library without tp_invoke): "
          f"{_per(lambda: ten.hot[id(va.vector_add_kernel)][0].bound.call(0)):.2f} us")
    # stage E keeps the IR each side compiled (bytecode dumps on): a warm launch, which compiles nothing, must not
    # pay for finding out which launch compiled what
    lib.dumps = BytecodeDumps(Path(tempfile.mkdtemp(prefix="tp-hostcpu-dumps-")))
    print(f"warm launch through PortLauncher, bytecode dumps on (stage E): {_per(warm):.2f} us")
    lib.dumps = None
    # a call made after the thread waited (as stage E's host timing makes one after a synchronise): on a virtual
    # CPU that idled, the same code runs several times slower, the longer the wait the slower, whatever the code
    def ten_strides():
        for _ in range(10):
            x.stride()

    for ms in (1, 100):
        print(f"after the thread slept {ms} ms: a warm launch {_after_sleep(warm, ms / 1000):.2f} us, "
              f"ten tensor.stride() calls {_after_sleep(ten_strides, ms / 1000):.2f} us")
    return 0


def _after_sleep(fn, seconds: float, n: int = 30) -> float:
    """Median time of fn() right after sleeping `seconds`, in us."""
    times = []
    for _ in range(n):
        time.sleep(seconds)
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return sorted(times)[n // 2]


if __name__ == "__main__":
    sys.exit(main())
