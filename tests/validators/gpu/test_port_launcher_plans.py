"""The port's host path (issue 34 item 3): the first launch of a signature (kernel, argument dtypes and ranks,
constants) selects the entry and checks every argument; later launches reuse that plan, and its argument buffers:
a warm launch rewrites only what changed since the plan's previous call. Run with torch (CPU tensors) in the
analysis interpreter through the real PortLibrary / PortLauncher, with the entry's C function replaced by a
recorder of what its argument buffers hold when it is called, so what the library would receive is compared call
by call with what each launch's own tensors say."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from tileport.validators.gpu.ffi import render_ffi
from tileport.validators.rust.spec import DumpSpec, load_spec

TORCH_PY = Path(os.environ.get("TILEPORT_TORCH_VENV", Path.home() / ".cache/tileport/torch-venv")) / "bin" / "python"

PRELUDE = r'''
import json, sys, types
import torch
sys.path.insert(0, sys.argv[2])
import importlib.util
from tileport.validators.gpu.hostrun import PortLauncher, PortLibrary, PortError

spec = importlib.util.spec_from_file_location("op", sys.argv[3]); op = importlib.util.module_from_spec(spec)
spec.loader.exec_module(op)


class Recorder:
    """NAMED FAKE: an entry's C function (no GPU here). Keeps what its argument buffers hold when it is called."""
    def __init__(self, symbol, sink):
        self.symbol, self.sink = symbol, sink
    def __call__(self, stream, device, grid, generics, tensors, nt, scalars, ns, err, errlen):
        nt, ns = nt.value, ns.value
        self.sink.append({"symbol": self.symbol, "stream": stream.value or 0, "device": device.value,
                          "grid": list(grid), "generics": generics.value.decode(),
                          "tensors": [[t.ptr, list(t.shape[:t.ndim]), list(t.strides[:t.ndim]), list(t.part[:t.ndim])]
                                      for t in tensors[:nt]],
                          "scalars": [[s.i, s.f] for s in scalars[:ns]]})
        return 0


class Library(PortLibrary):
    """The real PortLibrary (plans, bound buffers, ctypes packing) over Recorder functions."""
    def __init__(self, bindings):
        self._state(bindings)
        self.seen = []
    def raw_function(self, symbol):
        return Recorder(symbol, self.seen)


def cdiv(a, b):
    return -(-a // b)


lib = Library(json.load(open(sys.argv[1])))
out = {"mismatches": [], "launches": 0}
'''

SCRIPT = PRELUDE + r'''
def check(want):
    got = lib.seen[-1]
    out["launches"] += 1
    if got != want:
        out["mismatches"].append({"want": want, "got": got})


def transpose(x, stream, grid=None):
    """transpose_kernel -> port entry `permuted` (x: &Tensor, out: whole &mut Tensor, its partition from the grid)"""
    m, n = x.shape
    t = torch.empty(n, m)
    grid = grid or (cdiv(m, 64), cdiv(n, 64), 1)
    PortLauncher(lib)(stream, grid, op.transpose_kernel, (x, t, 64))
    check({"symbol": "tp_permuted__f32", "stream": stream.cuda_stream, "device": 0, "grid": list(grid),
           "generics": "f32,64",
           "tensors": [[x.data_ptr(), list(x.shape), list(x.stride()), [0, 0]],
                       [t.data_ptr(), [n, m], [m, 1], [cdiv(n, grid[0]), cdiv(m, grid[1])]]],
           "scalars": []})


def copy(x, stream):
    """copy_kernel -> port entry `through_pointer` (out by pointer, its extent and stride as scalars)"""
    flat = x.reshape(-1)
    c = torch.empty_like(flat)
    PortLauncher(lib)(stream, (cdiv(flat.numel(), 1024), 1, 1), op.copy_kernel, (flat, c, 1024))
    check({"symbol": "tp_through_pointer__f32", "stream": stream.cuda_stream, "device": 0,
           "grid": [cdiv(flat.numel(), 1024), 1, 1], "generics": "f32,1024",
           "tensors": [[flat.data_ptr(), [flat.numel()], [1], [0]], [c.data_ptr(), [c.numel()], [1], [0]]],
           "scalars": [[c.numel(), float(c.numel())], [1, 1.0]]})


def shared4(x, stream):
    """scale4_kernel -> port entry `shared4` (a rank-4 output taken as &Tensor: the reference's tensor, no partition)"""
    m, n = x.shape
    x4 = x.reshape(2, m // 2, 1, n)
    d = torch.empty_like(x4)
    grid = (2, cdiv(m // 2, 32), cdiv(n, 32))
    PortLauncher(lib)(stream, grid, op.scale4_kernel, (x4, d, 32))
    check({"symbol": "tp_shared4__f32", "stream": stream.cuda_stream, "device": 0, "grid": list(grid),
           "generics": "f32,32",
           "tensors": [[x4.data_ptr(), list(x4.shape), list(x4.stride()), [0, 0, 0, 0]],
                       [d.data_ptr(), list(d.shape), list(d.stride()), [0, 0, 0, 0]]],
           "scalars": []})


s0, s1 = types.SimpleNamespace(cuda_stream=0), types.SimpleNamespace(cuda_stream=7)
for x in (torch.randn(1000, 300), torch.randn(1000, 300), torch.randn(64, 4096), torch.randn(300, 1000).t(),
          torch.randn(1000, 300)):
    transpose(x, s0)   # same shape twice, a new shape and grid, the first shape with other strides, back
    copy(x.contiguous(), s0)
    shared4(x.contiguous(), s0)
transpose(torch.randn(1000, 300), s0, grid=(32, 10, 1))  # the same shapes, another grid: another partition
transpose(torch.randn(1000, 300), s1)  # another stream
g = [32, 10, 1]
transpose(torch.randn(1000, 300), s1, grid=g)  # a grid passed as a list, then the same list changed in place
g[0] = 16
transpose(torch.randn(1000, 300), s1, grid=g)
copy(torch.randn(7, 9), s1)
out["plans"] = len(lib.plans)
try:
    transpose(torch.randn(8, 8, dtype=torch.float16), s0)
except PortError as e:
    out["float16"] = str(e)
out["plans_after_float16"] = len(lib.plans)
# a refused launch with a new grid (the f32 plan, tried first, reads the grid before the dtype refuses it), then the
# f32 plan's last shapes on that grid: the output's partition must follow the grid, not the one before the refusal
try:
    transpose(torch.randn(8, 8, dtype=torch.float16), s0, grid=(1, 1, 1))
except PortError:
    pass
transpose(torch.randn(1000, 300), s0, grid=(1, 1, 1))
# the same with a refusal that comes late: a rank-3 input of the right dtype passes the dtype guards, the new grid is
# written, and the rank (read only because the shape changed) refuses it; then the plan's last shapes on that grid
try:
    PortLauncher(lib)(s0, (3, 3, 1), op.transpose_kernel, (torch.randn(4, 1000, 300), torch.empty(300, 1000), 64))
except PortError:
    pass
transpose(torch.randn(1000, 300), s0, grid=(3, 3, 1))
transpose(torch.randn(1000, 300), s0)  # the f32 plan still serves after the refused one
# a launch the f32 plan's guards refuse part-way: its first tensor (a new shape, read and written) passes, the
# second is float16; then the first tensor's new shape with the right dtype, and the old shape again
x2 = torch.randn(96, 200)
out["launches_before_mixed"] = out["launches"]
try:
    PortLauncher(lib)(s0, (2, 4, 1), op.transpose_kernel, (x2, torch.empty(200, 96, dtype=torch.float16), 64))
except PortError as e:
    out["mixed"] = str(e)
out["seen_after_mixed"] = len(lib.seen)
transpose(x2, s0, grid=(2, 4, 1))
transpose(torch.randn(1000, 300), s0)
out["plans_at_end"] = len(lib.plans)
out["calls"] = PortLauncher(lib).calls
launcher = PortLauncher(lib)
x = torch.randn(64, 4096)
launcher(s0, (1, 64, 1), op.transpose_kernel, (x, torch.empty(4096, 64), 64))
out["calls"] = launcher.calls
# stage E keeps the bytecode each side compiled: which file a launch compiled is watched only on the calls that may
# compile (the first ones after a change), not on the warm calls whose host time E measures
import tempfile
from pathlib import Path
from tileport.validators.gpu.hostrun import ATTRIBUTED_CALLS, BytecodeDumps
lib.dumps = BytecodeDumps(Path(tempfile.mkdtemp()))
watched, attributing = [], lib.attributing
lib.attributing = lambda symbol, generics, shapes: (watched.append(shapes[0]), attributing(symbol, generics, shapes))[1]
y = torch.randn(4096)
for _ in range(6):
    copy(y, s0)
out["watched_same"] = [list(s) for s in watched]
for _ in range(6):
    copy(torch.randn(8192), s0)
out["watched_after"] = [list(s) for s in watched]
out["attributed_calls"] = ATTRIBUTED_CALLS
print(json.dumps(out))
'''


EXTENT_SCRIPT = PRELUDE + r'''
# head_kernel -> port entry `head`, whose TILE generic the spec names as the extent of `out` on axis 0: the warm
# launch reads it from each call's output, and the output's slab (its partition) follows it
x = torch.randn(4096)
for n in (1024, 1024, 512, 2048, 512):
    h = torch.empty(n)
    PortLauncher(lib)(types.SimpleNamespace(cuda_stream=0), (2, 1, 1), op.head_kernel, (x, h, 1024))
    got = lib.seen[-1]
    out["launches"] += 1
    want = {"generics": f"f32,{n}", "tensors": [[x.data_ptr(), [4096], [1], [0]], [h.data_ptr(), [n], [1], [n]]]}
    if {k: got[k] for k in want} != want:
        out["mismatches"].append({"want": want, "got": got})
print(json.dumps(out))
'''


def _run(script: str, bindings: dict, tmp: Path) -> dict:
    (tmp / "bindings.json").write_text(json.dumps(bindings))
    (tmp / "script.py").write_text(script)
    r = subprocess.run([str(TORCH_PY), str(tmp / "script.py"), str(tmp / "bindings.json"), str(REPO),
                        str(REPO / "tests" / "data" / "ffi_kinds" / "kinds.py")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    if not TORCH_PY.is_file():
        pytest.skip(f"no interpreter with torch at {TORCH_PY} (scripts/setup-torch-venv.sh)")
    kinds = REPO / "tests" / "data" / "ffi_kinds"
    b = render_ffi((kinds / "kernel.rs").read_text(), load_spec(kinds / "spec.json"), ["float32"]).bindings
    return _run(SCRIPT, b, tmp_path_factory.mktemp("plans"))


def test_a_generic_read_from_an_output_extent_follows_each_call_and_so_does_the_slab(tmp_path):
    """A generic that is a tensor's extent changes from call to call with that tensor: the warm launch writes the
    new generics and rewrites the partition that follows them, and keeps both when the extent repeats."""
    if not TORCH_PY.is_file():
        pytest.skip(f"no interpreter with torch at {TORCH_PY} (scripts/setup-torch-venv.sh)")
    kinds = REPO / "tests" / "data" / "ffi_kinds"
    spec = load_spec(kinds / "spec.json").model_dump()
    for e in spec["entries"]:
        if e["name"] == "head":
            e["extents"] = {"TILE": {"param": "out", "axis": 0}}
    b = render_ffi((kinds / "kernel.rs").read_text(), DumpSpec.model_validate(spec), ["float32"]).bindings
    got = _run(EXTENT_SCRIPT, b, tmp_path)
    assert got["launches"] == 5
    assert got["mismatches"] == []


def test_every_warm_launch_hands_the_library_exactly_its_own_tensors_grid_scalars_and_stream(recorded):
    """The plan's buffers are reused call after call: a new allocation, a new shape and grid, the same shape with
    other strides (a transposed view), another grid, a scalar read from a new extent, another stream; each call's C function
    sees that call's values (an output partition that follows the grid too; a rank-4 output the port takes as `&Tensor`
    passed whole, every dim and stride), never a stale one from the previous call."""
    assert recorded["launches"] == 23 + 14
    assert recorded["mismatches"] == []


def test_only_the_calls_that_may_compile_are_watched_for_the_bytecode_they_compiled(recorded):
    """With stage E's bytecode dumps on, every warm port call used to stat the dump index and build a key (about 3 us
    a call on this CPU, benchmarks/host_call_cpu.py), and stage E timed that as the port's host time: the persistent
    GEMM's port call came out 3.1x the reference's on an H100."""
    n = recorded["attributed_calls"]
    assert recorded["watched_same"] == [[4096]] * n  # 6 calls of one signature: the first n watched
    assert recorded["watched_after"] == [[4096]] * n + [[8192]] * n  # a new extent: its first n calls watched
    assert recorded["mismatches"] == []  # and each of those calls still got its own values


def test_a_second_shape_reuses_the_plan_and_a_new_dtype_is_a_new_plan_checked_like_a_first_launch(recorded):
    assert recorded["plans"] == 3  # one per kernel, not per shape, stride or stream
    assert "no port entry for reference launch transpose_kernel[TILE=64]/float16" in recorded["float16"]
    assert recorded["plans_after_float16"] == 3 and recorded["plans_at_end"] == 3  # refused before a plan is kept


def test_a_launch_the_plan_refuses_part_way_leaves_nothing_stale_for_the_next(recorded):
    """A warm plan reads its guards with the arguments, in one pass: a launch whose first tensor has a new shape and
    whose second is another dtype is refused after the first was written. It reaches no C function, and the next
    launches (that shape with the right dtype, then the old shape) get exactly their own values."""
    assert recorded["mixed"] == "permuted: out is float16, the port takes float32"  # checked like a first launch
    assert recorded["seen_after_mixed"] == recorded["launches_before_mixed"]  # nothing reached the library for it
    assert recorded["mismatches"] == []


def test_the_launches_served_are_listed_with_entry_generics_grid_and_shapes(recorded):
    assert recorded["calls"] == [{"symbol": "tp_permuted__f32", "entry": "permuted", "generics": ["f32", "64"],
                                  "grid": [1, 64, 1], "shapes": [[64, 4096], [4096, 64]]}]


ECHO_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
typedef struct { uint64_t ptr; int64_t ndim; int64_t shape[8]; int64_t strides[8]; int64_t part[8]; } TpTensor;
typedef struct { int64_t i; double f; } TpScalar;
int32_t tp_abi_version(void) { return 1; }
const char *tp_bindings(void) { return BINDINGS; }
/* NAMED FAKE: the entry's C function (no GPU here); says what it received, as the message of a refused launch */
int32_t tp_permuted__f32(void *s, int32_t d, const uint32_t *g, const char *gen, const TpTensor *t, int32_t nt,
                         const TpScalar *sc, int32_t ns, char *err, size_t len) {
  snprintf(err, len, "stream=%llu device=%d grid=%u,%u,%u generics=%s tensors=%d x=%llu:%lld:%lldx%lld:%lld,%lld "
           "out.part=%lld,%lld scalars=%d errlen=%zu", (unsigned long long)(uintptr_t)s, d, g[0], g[1], g[2], gen, nt,
           (unsigned long long)t[0].ptr, (long long)t[0].ndim, (long long)t[0].shape[0], (long long)t[0].shape[1],
           (long long)t[0].strides[0], (long long)t[0].strides[1], (long long)t[1].part[0], (long long)t[1].part[1],
           ns, len);
  return 7;
}
"""

ECHO_SCRIPT = r'''
import json, sys, types
sys.path.insert(0, sys.argv[2])
import importlib.util
import torch
from tileport.validators.gpu.hostrun import PortLauncher, PortLibrary, PortError
spec = importlib.util.spec_from_file_location("op", sys.argv[3]); op = importlib.util.module_from_spec(spec)
spec.loader.exec_module(op)
lib = PortLibrary(sys.argv[1])
x = torch.randn(1000, 300)
got = []
for stream in (1 << 40 | 0x1234, 0):
    for _ in range(2):
        try:
            PortLauncher(lib)(types.SimpleNamespace(cuda_stream=stream), (16, 5, 1), op.transpose_kernel,
                              (x, torch.empty(300, 1000), 64))
        except PortError as e:
            got.append(str(e))
print(json.dumps({"ptr": x.data_ptr(), "got": got}))
'''


def test_the_bound_call_reaches_a_c_function_with_the_entry_signature_intact(tmp_path):
    """The warm call passes converted ctypes objects without argtypes: a 64-bit stream, the int32 counts and the
    size_t length must arrive as the C ABI of the generated entry declares them."""
    if not TORCH_PY.is_file():
        pytest.skip(f"no interpreter with torch at {TORCH_PY} (scripts/setup-torch-venv.sh)")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    kinds = REPO / "tests" / "data" / "ffi_kinds"
    b = render_ffi((kinds / "kernel.rs").read_text(), load_spec(kinds / "spec.json"), ["float32"]).bindings
    (tmp_path / "echo.c").write_text("static const char *BINDINGS = " + json.dumps(json.dumps(b)) + ";\n" + ECHO_C)
    so = tmp_path / "libecho.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(so), str(tmp_path / "echo.c")], check=True, timeout=120)
    (tmp_path / "script.py").write_text(ECHO_SCRIPT)
    r = subprocess.run([str(TORCH_PY), str(tmp_path / "script.py"), str(so), str(REPO), str(kinds / "kinds.py")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    tail = (f"grid=16,5,1 generics=f32,64 tensors=2 x={out['ptr']}:2:1000x300:300,1 out.part=19,200 scalars=0 "
            "errlen=4096")
    assert out["got"] == [f"tp_permuted__f32(f32,64) rc=7: stream={(1 << 40) | 0x1234} device=0 {tail}"] * 2 + \
        [f"tp_permuted__f32(f32,64) rc=7: stream=0 device=0 {tail}"] * 2
