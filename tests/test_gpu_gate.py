"""Stages D and E, the parts a CPU machine can check: entry signatures, generated launchers and their launch mapping,
the cdylib build and its ctypes loading (without launching), i32 refusal, pack, run -> BLOCKED(env), ingest with
the commit check, prefix mode through a loopback prefix, and the report arithmetic. The GPU run itself is in
tests/test_gpu_gate_device.py (skips without a GPU) and docs/gpu-runs.md.
"""

from __future__ import annotations

import json
import lzma
import shutil
import sqlite3
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import REPO, run_cli
from tileport.validators.gpu.ffi import render_ffi
from tileport.validators.gpu.reports import PerfReport, PerfRow, band
from tileport.validators.gpu.runner import PortError, PortLauncher, classify_message
from tileport.validators.gpu.signature import SignatureError, parse_entries
from tileport.validators.rust.spec import DumpSpec, load_spec

PORTS = REPO / "ports"
DTYPES = ["float16", "bfloat16", "float32"]


def bindings(op: str) -> dict:
    return render_ffi((PORTS / op / "kernel.rs").read_text(), load_spec(PORTS / op / "spec.json"), DTYPES).bindings


def entry(b: dict, name: str) -> dict:
    return next(e for e in b["entries"] if e["entry"] == name)


# ------------------------------------------------------------------------------------------- signatures, ffi


def test_every_port_entry_is_read_with_its_parameter_kinds():
    sigs = {e.name: e for op in ("matmul", "rms_norm", "silu_and_mul", "softmax", "vector_add")
            for e in parse_entries((PORTS / op / "kernel.rs").read_text())}
    assert set(sigs) == {"matmul", "rms_norm_single", "rms_norm_chunked", "silu_and_mul", "softmax_row",
                         "softmax_row_scaled", "add"}
    mm = sigs["matmul"]
    assert [(p.name, p.kind, p.dims) for p in mm.params] == [
        ("a", "in", ["-1", "-1"]), ("b", "in", ["-1", "-1"]), ("c", "out", ["TILE_M", "TILE_N"])]
    assert [(g.name, g.kind) for g in mm.generics] == [("E", "type"), ("TILE_M", "const"), ("TILE_N", "const"),
                                                       ("TILE_K", "const")]
    assert [(p.name, p.kind, p.elem) for p in sigs["rms_norm_single"].params][-1] == ("eps", "scalar", "f32")


def test_a_pointer_parameter_is_named_as_undecidable_not_guessed():
    src = """#[cutile::module]
pub mod m { use cutile::core::*;
  #[cutile::entry()] unsafe fn k<T: ElementType>(z: *mut T, n: i32) {} }"""
    with pytest.raises(SignatureError, match=r"parameter z: \*mut T .* cannot launch it"):
        parse_entries(src)


def test_generics_bind_to_reference_constants_by_name_or_by_value():
    va = entry(bindings("vector_add"), "add")
    assert va["generics"] == [{"name": "B", "kind": "const", "from": "constant", "constant": "TILE"}]
    assert va["param_map"] == {"z": "out"} and va["symbols"] == {"float32": "tp_add__f32"}  # f32-only port
    mm = entry(bindings("matmul"), "matmul")
    assert [g.get("constant") for g in mm["generics"][1:]] == ["TILE_M", "TILE_N", "TILE_K"]
    assert set(mm["symbols"]) == set(DTYPES)


def test_constants_no_generic_takes_are_structural_selectors():
    sm = bindings("softmax")
    assert entry(sm, "softmax_row")["structural"] == {"FUSE_SCALE": [0]}
    assert entry(sm, "softmax_row_scaled")["structural"] == {"FUSE_SCALE": [1]}
    rn = bindings("rms_norm")
    assert entry(rn, "rms_norm_single")["structural"] == {"CHUNKS": [1]}
    assert entry(rn, "rms_norm_chunked")["structural"] == {}  # CHUNKS is its generic


def test_ambiguous_constant_is_undecided_and_a_launch_of_it_is_a_host_fault():
    spec = load_spec(PORTS / "vector_add" / "spec.json").model_dump()
    spec["entries"][0]["variants"][0]["reference"]["constants"] = {"TILE": 1024, "OTHER": 1024}
    b = render_ffi((PORTS / "vector_add" / "kernel.rs").read_text(), DumpSpec.model_validate(spec), DTYPES).bindings
    assert "TILE" in entry(b, "add")["undecided"][0] and "OTHER" in entry(b, "add")["undecided"][0]
    launcher = PortLauncher(SimpleNamespace(bindings=b))
    with pytest.raises(PortError, match="no port entry .*OTHER") as e:
        launcher.select("vector_add_kernel", {"TILE": 1024, "OTHER": 1024}, "float32")
    assert e.value.fail_class == "host"  # the template could not decide


def test_launches_select_the_entry_their_constants_and_dtype_declare():
    rn = PortLauncher(SimpleNamespace(bindings=bindings("rms_norm")))
    assert rn.select("rms_norm_kernel", {"TILE_N": 4096, "CHUNKS": 1}, "float16")["entry"] == "rms_norm_single"
    with pytest.raises(PortError, match=r"rms_norm_chunked: output out: &mut Tensor with dynamic tile dims") as e:
        rn.select("rms_norm_kernel", {"TILE_N": 2048, "CHUNKS": 4}, "bfloat16")  # unlaunchable on cutile 0.5
    assert e.value.fail_class == "kernel"
    sm = PortLauncher(SimpleNamespace(bindings=bindings("softmax")))
    assert sm.select("softmax_row_kernel", {"TILE_N": 4096, "FUSE_SCALE": True}, "float32")["entry"] == "softmax_row_scaled"
    with pytest.raises(PortError, match="no port entry for reference launch softmax_chunked_kernel"):
        sm.select("softmax_chunked_kernel", {"TILE_N": 2048, "FUSE_SCALE": False}, "float16")
    va = PortLauncher(SimpleNamespace(bindings=bindings("vector_add")))
    with pytest.raises(PortError, match=r"add: no float16 instance \(has float32\)") as e:
        va.select("vector_add_kernel", {"TILE": 1024}, "float16")
    assert e.value.fail_class == "kernel"  # the kernel writer must make it generic


def test_driver_and_tileiras_faults_are_env_the_rest_keeps_its_class():
    assert classify_message("primary context of device 0: CUDA driver library unavailable: libcuda.so.1", "host") == "env"
    assert classify_message("tileiras exited 5: failed to compile Tile IR program", "kernel") == "env"
    assert classify_message("partition shape [1, 4096] does not match", "host") == "host"


# ------------------------------------------------------------------------------------------- reports


def test_geomean_band_and_worst_leave_out_tiny_and_never_soft_pass_a_missing_row():
    rows = [PerfRow("a", 1.0, 1.02, 1.02), PerfRow("b", 1.0, 1.08, 1.08), PerfRow("t", 0.002, 0.004, 2.0, tiny=True)]
    rep = PerfReport(rows=rows, hw={"flush": {"verified": True}})
    assert rep.geomean == pytest.approx((1.02 * 1.08) ** 0.5)
    assert rep.band == "ok" and rep.worst.config == "b" and rep.complete
    rep.rows.append(PerfRow("m", None, None, None, failed=True))
    assert not rep.complete  # a missing measurement fails the gate
    assert [band(x) for x in (1.0, 1.07, 1.3, 1.6)] == ["ok", "mild", "moderate", "large"]
    assert not PerfReport(rows=rows, hw={"flush": {"verified": False}}).complete


# ------------------------------------------------------------------------------------------- real builds


@pytest.fixture(scope="module")
def va_gate(tmp_path_factory):
    """The vector_add port packed for a conversion at a known commit (cargo: cached after the first build)."""
    root = tmp_path_factory.mktemp("gate")
    out = root / "gate-va"
    r = run_cli("gate", "pack", "ports/vector_add", "--op", "examples/vector_add.py", "--out", str(out),
                "--commit", "c0ffee", timeout=1500)
    assert r.returncode == 0, r.stderr + r.stdout
    return root, out


@pytest.mark.slow
def test_pack_writes_a_self_contained_gate_whose_library_loads_without_a_gpu(va_gate, tmp_path):
    _, gate = va_gate
    manifest = json.loads((gate / "gate.json").read_text())
    assert manifest["op"] == "vector_add" and manifest["commit"] == "c0ffee"
    assert {"runner.py", "tp_correctness.py", "gate.json"} <= {p.name for p in gate.iterdir()}
    assert (gate / "op" / "vector_add.py").read_text() == (REPO / "examples" / "vector_add.py").read_text()
    runner_src = (gate / "runner.py").read_text()
    assert "pydantic" not in runner_src.replace("No pydantic", "") and "import tileport" not in runner_src
    so = tmp_path / "libport.so"
    with lzma.open(gate / "lib" / "libport.so.xz") as f:
        so.write_bytes(f.read())
    from tileport.validators.gpu.runner import PortLibrary
    lib = PortLibrary(so)  # ctypes load: nothing launches
    assert lib.abi == manifest["abi"] and lib.bindings == manifest["bindings"]
    t = {"ptr": 4096, "shape": [1 << 31], "strides": [1], "part": [1024]}
    rc, msg = lib.call("tp_add__f32", stream=0, device=0, grid=(1, 1, 1), generics=["1024"], tensors=[t, t, t],
                       scalars=[])
    assert rc == 2 and "2147483648 does not fit in i32" in msg and "not truncated" in msg
    t["shape"] = [4096]
    rc, msg = lib.call("tp_add__f32", stream=0, device=0, grid=(4, 1, 1), generics=["1024"], tensors=[t, t, t],
                       scalars=[])
    if rc != 0:  # no driver here: the launch stops at the context, as an environment fault
        assert rc == 1 and classify_message(msg, "host") == "env", msg


def _have_gpu() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(_have_gpu(), reason="checks the BLOCKED(env) path of a machine without a GPU")
def test_gate_run_without_a_gpu_is_blocked_env_naming_the_part(va_gate, tmp_path):
    _, gate = va_gate
    work = tmp_path / "g"
    shutil.copytree(gate, work)
    r = run_cli("gate", "run", str(work), "--timeout", "120")
    assert r.returncode == 3, r.stdout + r.stderr
    assert r.stdout.startswith("BLOCKED(env): ") and ("torch" in r.stdout or "GPU" in r.stdout)
    results = json.loads((work / "results.json").read_text())
    assert results["env_missing"] and results["cases"] == []


@pytest.mark.slow
def test_ingest_records_d_only_for_the_conversions_current_commit(tmp_path):
    from tileport.store import Store
    db = tmp_path / "tp.db"
    store = Store(db)
    cid = store.add_conversion("examples/vector_add.py")
    store.update_conversion(cid, head_commit="c0ffee", worktree=str(REPO))
    store.close()
    (tmp_path / "tileport.toml").write_text(f'store = "{db}"\n')
    work = tmp_path / "g"
    r = run_cli("gate", "pack", str(cid), "--out", str(work), cwd=tmp_path, timeout=1500)  # by conversion ID
    assert r.returncode == 0, r.stderr
    manifest = json.loads((work / "gate.json").read_text())
    assert (manifest["conversion_id"], manifest["commit"], manifest["op"]) == (cid, "c0ffee", "vector_add")
    run_cli("gate", "run", str(work), "--timeout", "120", cwd=tmp_path)
    r = run_cli("gate", "ingest", str(work / "results.json"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = sqlite3.connect(db).execute('select stage, verdict, fail_class, "commit" from stage_runs').fetchall()
    # on a GPU: the f32-only port fails its float16 cases (kernel), so no E; here: BLOCKED(env)
    expected = ("D", "FAIL", "kernel", "c0ffee") if _have_gpu() else ("D", "BLOCKED", "env", "c0ffee")
    assert rows == [expected]
    store = Store(db)
    store.update_conversion(cid, head_commit="beef01")  # the branch moved on
    store.close()
    r = run_cli("gate", "ingest", str(work / "results.json"), cwd=tmp_path)
    assert r.returncode == 2 and "results are for commit c0ffee" in r.stderr and "beef01" in r.stderr
    assert r.stderr.count("\n") == 1  # one line, no traceback
    assert len(sqlite3.connect(db).execute("select * from stage_runs").fetchall()) == 1


@pytest.mark.slow
def test_prefix_mode_copies_runs_and_fetches_back_through_a_loopback_prefix(va_gate, tmp_path):
    from tileport.validators.gpu import gate as gate_mod
    _, gate = va_gate
    work = tmp_path / "local" / "gate-va"
    shutil.copytree(gate, work)
    remote = tmp_path / "remote"
    results, cmds = gate_mod.run_remote(work, "bash -c", remote_dir=str(remote), timeout=120, python=sys.executable)
    assert [c.returncode for c in cmds][0] == 0
    assert (remote / "gate-va" / "runner.py").is_file()  # it was copied "there"
    assert (remote / "gate-va" / "results.json").is_file() and (work / "results.json").is_file()  # and fetched back
    if not _have_gpu():
        assert results["env_missing"]


def test_bad_gate_dir_and_missing_results_are_one_line_errors(tmp_path):
    r = run_cli("gate", "run", str(tmp_path))
    assert r.returncode == 2 and "not a gate directory" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("gate", "ingest", str(tmp_path / "results.json"))
    assert r.returncode == 2 and "no results file" in r.stderr


def test_store_keeps_every_case_and_every_sample(tmp_path):
    from tileport.records import Stage, StageResult
    from tileport.store import Store
    from tileport.validators.gpu.reports import Case
    store = Store(tmp_path / "s.db")
    cid = store.add_conversion("examples/softmax.py")
    rid = store.record_stage(cid, StageResult(stage=Stage.PERFORMANCE, verdict="DONE"))
    store.add_cases(rid, [Case("softmax float16 [m=64,n=8]", "float16", {"m": 64, "n": 8}, "FAIL", 0.5, "kernel",
                               "3 of 512 values outside")])
    store.add_perf_rows(rid, [PerfRow("float16 [m=64]", 0.01, 0.011, 1.1, [0.01] * 20, [0.011] * 20, ["x"])])
    assert store.cases(rid)[0]["shape"] == {"m": 64, "n": 8} and store.cases(rid)[0]["fail_class"] == "kernel"
    assert store.perf_rows(rid)[0]["port_samples"] == [0.011] * 20


@pytest.mark.slow
def test_a_runner_that_dies_or_hangs_fails_that_conversion_only(va_gate, tmp_path):
    """Named fakes: runner.py replaced by one that segfaults, and by one that hangs (no GPU here to fault)."""
    from tileport.validators.gpu import gate as gate_mod
    _, gate = va_gate
    for name, body, timeout in (("crash", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)\n", 60),
                                ("hang", "import time; time.sleep(600)\n", 3)):
        work = tmp_path / name
        shutil.copytree(gate, work)
        (work / "runner.py").write_text(f"# FAKE runner ({name}) for the isolation test\n" + body)
        results, cmd = gate_mod.run_local(work, timeout=timeout)
        assert results["crashed"] and results["cases"][-1]["status"] == "FAIL", results
        assert results["cases"][-1]["fail_class"] == "kernel"
        assert ("killed after" in results["crashed"]) == (name == "hang")
        assert json.loads((work / "results.json").read_text())["crashed"] == results["crashed"]
