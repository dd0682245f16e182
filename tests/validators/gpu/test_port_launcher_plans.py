"""The port's host path (issue 34 item 3): the first launch of a signature (kernel, argument dtypes and ranks,
constants) selects the entry and checks every argument; later launches reuse that plan and read only pointers,
shapes and strides. Run with torch (CPU tensors) in the analysis interpreter against a recording library, so
what the C function would receive is compared call by call."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from tileport.validators.gpu.ffi import render_ffi
from tileport.validators.rust.spec import load_spec

TORCH_PY = Path(os.environ.get("TILEPORT_TORCH_VENV", Path.home() / ".cache/tileport/torch-venv")) / "bin" / "python"

SCRIPT = r'''
import json, sys, types
import torch
sys.path.insert(0, sys.argv[2])
import importlib.util
from tileport.validators.gpu.runner import PortLauncher, PortError

spec = importlib.util.spec_from_file_location("op", sys.argv[3]); op = importlib.util.module_from_spec(spec)
spec.loader.exec_module(op)

class Recording:
    """Stands in for PortLibrary: keeps every launch as the C function would get it."""
    def __init__(self, bindings):
        self.bindings, self.plans, self.launches = bindings, {}, []
    def launch(self, symbol, stream, device, grid, generics, tensors, scalars):
        self.launches.append({"symbol": symbol, "grid": list(grid), "generics": generics.decode(),
                              "tensors": [[list(t[1]), list(t[2]), list(t[3])] for t in tensors],
                              "scalars": list(scalars)})
        return 0, ""

lib = Recording(json.load(open(sys.argv[1])))
stream = types.SimpleNamespace(cuda_stream=0)
out = {}
def launch(x, t):
    PortLauncher(lib)(stream, (-(-x.shape[0] // 64), -(-x.shape[1] // 64), 1), op.transpose_kernel, (x, t, 64))
    flat = x.reshape(-1)
    PortLauncher(lib)(stream, (-(-flat.numel() // 1024), 1, 1), op.copy_kernel, (flat, torch.empty_like(flat), 1024))
for m, n in ((1000, 300), (64, 4096)):
    x = torch.randn(m, n)
    launch(x, torch.empty(n, m))
out["plans_after_two_shapes"] = len(lib.plans)
try:
    launch(torch.randn(8, 8, dtype=torch.float16), torch.empty(8, 8, dtype=torch.float16))
except PortError as e:
    out["float16"] = str(e)
out["plans_after_float16"] = len(lib.plans)
out["launches"] = lib.launches
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    if not TORCH_PY.is_file():
        pytest.skip(f"no interpreter with torch at {TORCH_PY} (scripts/setup-torch-venv.sh)")
    d = tmp_path_factory.mktemp("plans")
    kinds = REPO / "tests" / "data" / "ffi_kinds"
    b = render_ffi((kinds / "kernel.rs").read_text(), load_spec(kinds / "spec.json"), ["float32"]).bindings
    (d / "bindings.json").write_text(json.dumps(b))
    (d / "script.py").write_text(SCRIPT)
    r = subprocess.run([str(TORCH_PY), str(d / "script.py"), str(d / "bindings.json"), str(REPO),
                        str(kinds / "kinds.py")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_second_shape_reuses_the_plan_and_passes_its_own_shapes_strides_and_extents(recorded):
    assert recorded["plans_after_two_shapes"] == 2  # one per kernel, not per shape
    l = recorded["launches"]
    assert [x["symbol"] for x in l] == ["tp_permuted__f32", "tp_through_pointer__f32"] * 2
    t0, t1 = l[0], l[2]
    assert t0["grid"] == [16, 5, 1] and t1["grid"] == [1, 64, 1] and t0["generics"] == t1["generics"] == "f32,64"
    assert t0["tensors"][0][:2] == [[1000, 300], [300, 1]] and t1["tensors"][0][:2] == [[64, 4096], [4096, 1]]
    assert t0["tensors"][1][:2] == [[300, 1000], [1000, 1]] and t1["tensors"][1][:2] == [[4096, 64], [64, 1]]
    # the pointer entry: its out_dim_0 / out_stride_0 are read from the reference's `out` on every launch
    assert l[1]["scalars"] == [300000, 1] and l[3]["scalars"] == [262144, 1]
    assert [t[0] for t in l[1]["tensors"]] == [[300000], [300000]]


def test_a_new_dtype_is_a_new_plan_checked_like_a_first_launch(recorded):
    assert recorded["plans_after_float16"] == 2  # refused before a plan is kept
    assert "no port entry for reference launch transpose_kernel[TILE=64]/float16" in recorded["float16"]
