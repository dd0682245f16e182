"""On a machine with an NVIDIA GPU, torch, cuda.tile and tileiras: the port library's direct launch path (issue 34
item 3) as a caller sees it, through the gate's own runner.py (PortLibrary, PortLauncher) and the op's host
wrapper. Every output is compared with torch's. Skips cleanly elsewhere (CI, the CPU machine).

TILEPORT_TEST_DIRECT_GATES names a directory of gates packed elsewhere (`scripts/gpu-gate-drafts.sh pack`: a GPU
host has no cargo) holding `vector_add` and `silu_and_mul`; without it the test is skipped (packing here would
need cargo beside the GPU)."""

from __future__ import annotations

import importlib.util
import lzma
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import device_missing


def _ready() -> str | None:
    missing = device_missing(cuda_tile=True)
    if missing:
        return missing
    gates = os.environ.get("TILEPORT_TEST_DIRECT_GATES")
    if not gates or not all((Path(gates) / op / "gate.json").is_file() for op in ("vector_add", "silu_and_mul")):
        return "TILEPORT_TEST_DIRECT_GATES does not name packed vector_add and silu_and_mul gates"
    return None


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_ready() is not None, reason=str(_ready()))]

# Runs in a child process per case: the library's records and counters start at zero, and TILEPORT_FFI_DIRECT is
# read once per process.
CHILD = r'''
import importlib.util, json, lzma, os, shutil, sys, tempfile
from pathlib import Path
import torch
import cuda.tile as ct

gate = Path(sys.argv[1]); case = sys.argv[2]
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path); mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod; spec.loader.exec_module(mod); return mod
meta = json.loads((gate / "gate.json").read_text())
R = load(gate / "runner.py", "tp_runner")
op = load(gate / meta["op_file"], "tp_op")
so = Path(tempfile.mkdtemp()) / "libport.so"
with lzma.open(gate / meta["library"]) as f, open(so, "wb") as out:
    shutil.copyfileobj(f, out)
lib = R.PortLibrary(so)
wrapper = getattr(op, meta["op"])
out = {"steps": []}

def call(**inputs):
    with R._Patched(ct, op, R.PortLauncher(lib)):
        got = wrapper(**inputs)
    torch.cuda.synchronize()
    want = op.reference(**inputs)
    ok = torch.allclose(got.float(), want.float(), atol=2e-2, rtol=2e-2)
    out["steps"].append({"ok": bool(ok), **{k: v for k, v in lib.fast_stats().items() if k != "note"}})
    return ok

if case == "vector_add":
    def inputs(n, offset=0):
        x = torch.randn(n + offset, device="cuda")[offset:]
        return {"x": x, "y": torch.randn(n, device="cuda")}
    for _ in range(10):
        call(**inputs(4096))                 # A: cold, warm + recorded, then direct
    for _ in range(3):
        call(**inputs(1 << 20))              # B: another signature of the same entry
    call(**inputs(4096))                     # A again: its record still serves
    for _ in range(3):
        call(**inputs(4096, offset=1))       # A's shapes at an address 4 bytes off 16: another signature
elif case == "silu_and_mul":
    for _ in range(4):
        x = 2.0 * torch.randn(128, 2 * 4096, device="cuda").to(torch.float16)
        call(x=x)
out["note"] = lib.fast_stats()["note"]
print(json.dumps(out))
'''


def _child(tmp_path: Path, case: str, **env) -> dict:
    import json

    script = tmp_path / "child.py"
    script.write_text(CHILD)
    gate = Path(os.environ["TILEPORT_TEST_DIRECT_GATES"]) / case
    r = subprocess.run([sys.executable, str(script), str(gate), case], capture_output=True, text=True, timeout=300,
                       env={**os.environ, **env})
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_repeated_launches_go_direct_for_several_signatures_and_a_changed_one_goes_through_cutile(tmp_path):
    got = _child(tmp_path, "vector_add")
    steps = got["steps"]
    assert all(s["ok"] for s in steps), got
    assert [s["recorded"] for s in steps[:3]] == [0, 1, 1], got  # recorded by the second launch (warm), once
    d = [s["direct"] for s in steps]
    assert d[9] == 8, got  # launches 3..10 of A went direct
    # B: recorded by its first warm launch through cutile (its first, when cutile's JIT already holds the entry's
    # function, as with the release library on an H100), then direct
    assert steps[12]["recorded"] == 2 and d[12] - d[9] in (1, 2), got
    assert d[13] == d[12] + 1, got  # A again: the first record still serves
    # the misaligned address: not A's signature; through cutile, then a record of its own
    assert d[14] == d[13] and steps[16]["recorded"] == 3 and d[16] - d[13] in (1, 2), got
    assert steps[-1]["refused"] == 0 and steps[-1]["driver_refused"] == 0, got


def test_with_the_direct_path_off_every_launch_goes_through_cutile_and_is_still_right(tmp_path):
    got = _child(tmp_path, "vector_add", TILEPORT_FFI_DIRECT="0")
    assert all(s["ok"] for s in got["steps"]), got
    assert got["steps"][-1]["direct"] == 0 and got["steps"][-1]["recorded"] == 0, got


def test_an_integer_scalar_entry_launches_directly_the_function_compiled_without_its_value_hint(tmp_path):
    got = _child(tmp_path, "silu_and_mul")
    steps = got["steps"]
    assert all(s["ok"] for s in steps), got
    assert steps[-1]["recorded"] == 1 and steps[-1]["hint_free"] == 1 and steps[-1]["hint_free_failed"] == 0, got
    assert steps[-1]["direct"] == 2, got
