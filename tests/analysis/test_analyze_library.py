"""A whole library analysed (issue #32): `tileport analyze DIR` on `corpora/tilekit/lib`, a library written in the
shape of real ones with one op per failure cause of the issue, run unmodified with the real torch interpreter (fake
CUDA tensors on this CPU machine), real cuda-tile exports and tileirdisasm. The torch tests skip without the torch
interpreter (fail under TILEPORT_REQUIRE_TORCH=1, as in test_analyze_capture.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tileport.errors import UserError
from tileport.analysis.library import find_library
from tileport.analysis.plan import STEM_LIMIT, bounded_stem
from tileport.analysis.testfind import discover
from tileport.analysis.testrun import signature_key

from test_analyze_capture import torch_python  # noqa: F401  (the shared fixture)

REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "corpora" / "tilekit" / "lib"


def test_library_ops_are_the_modules_defining_kernels():
    lib = find_library(LIB)
    ops = {str(o.path.relative_to(LIB)) for o in lib.ops}
    assert "tilelib/kernels/softmax.py" in ops  # kernel-only: analysed through the tests that launch it
    assert "tilelib/ops/softmax.py" not in ops  # the autograd/nn.Module wrapper defines no kernel
    assert "tilelib/utils.py" not in ops and not any("tests/" in o or "conftest" in o for o in ops)
    assert {"scripts/softmax_perf.py", "cupy_ops/cutecupy/ops/attention.py", "coreops/coreops/ops/gemv.py"} <= ops
    assert "tilelib/utils.py" in {str(s.path.relative_to(LIB)) for s in lib.skipped}  # a launch helper


def test_a_directory_without_ops_is_one_line(tmp_path):
    (tmp_path / "helpers.py").write_text("def f():\n    return 1\n")
    with pytest.raises(UserError, match="no op files"):
        find_library(tmp_path)
    with pytest.raises(UserError, match="not a directory"):
        find_library(tmp_path / "missing")
    res = subprocess.run([sys.executable, "-m", "tileport", "analyze", str(tmp_path)], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "no op files" in res.stderr


def test_tests_are_found_by_import_when_names_differ():
    # a wrapper module (autograd.Function + nn.Module) imports the kernel module; the test imports the package
    assert [p.name for p in discover(LIB / "tilelib" / "kernels" / "softmax.py")] == ["test_softmax.py"]
    # the test is named after the model component, not the module
    assert [p.name for p in discover(LIB / "tilelib" / "ops" / "rotary.py")] == ["test_rotary_embedding.py"]
    # no test reaches it: the benchmark script that imports it does
    elementwise = REPO / "corpora" / "tilekit" / "heldout" / "nanoops" / "kernels" / "elementwise.py"
    assert [p.name for p in discover(elementwise)] == ["bench_elementwise.py"]


def test_long_artifact_names_are_bounded_and_stay_distinct():
    a = "moe__" + "__".join(f"CONSTANT_NUMBER_{i}_WITH_A_LONG_NAME-{i}" for i in range(12)) + "__float16"
    b = a.replace("-11__", "-12__")
    assert len(bounded_stem(a).encode()) <= STEM_LIMIT and bounded_stem(a) != bounded_stem(b)
    assert bounded_stem(a) == bounded_stem(a) and bounded_stem("short__float16") == "short__float16"


def test_tests_of_one_signature_differ_only_in_sizes():
    def item(**params):
        return SimpleNamespace(originalname="test_op", name="test_op[x]", fspath="t.py",
                               callspec=SimpleNamespace(params=params))
    assert signature_key(item(M=64, shape=(2, 3), dtype="f16")) == signature_key(item(M=7, shape=(9, 9), dtype="f16"))
    assert signature_key(item(M=64, dtype="f16")) != signature_key(item(M=64, dtype="bf16"))
    assert signature_key(item(M=64, transpose=True)) != signature_key(item(M=64, transpose=False))


@pytest.fixture(scope="module")
def library_run(tmp_path_factory, torch_python):  # noqa: F811
    out = tmp_path_factory.mktemp("lib")
    res = subprocess.run([sys.executable, "-m", "tileport", "analyze", str(LIB), "--json", "--out", str(out / "out"),
                          "--python", torch_python, "--target", "sm_90", "--no-cubin"],
                         capture_output=True, text=True, timeout=1500, cwd=out)
    assert res.returncode in (0, 1), res.stderr[-2000:]
    doc = json.loads(res.stdout)
    return {r["op"]: r for r in doc["ops"]}, doc["totals"], out / "out", res


def _analysis(out: Path, op: str) -> dict:
    return json.loads((out / op.removesuffix(".py").replace("/", ".") / "analysis.json").read_text())


def test_the_library_analyses_with_no_traceback(library_run):
    rows, totals, _, res = library_run
    assert "Traceback" not in res.stderr
    assert totals["analysed"] >= 0.9 * (totals["ops"] - 1), rows  # all but the op whose import is missing
    missing = rows["tilelib/ops/gelu_tanh.py"]
    assert missing["analysed"] == "no" and "No module named 'transformers'" in missing["why"]


def test_each_cause_of_the_issue_is_analysed(library_run):
    rows, _, out, _ = library_run
    ok = {op for op, r in rows.items() if r["analysed"] == "yes"}
    # constants from shapes through helpers, aliases, functools.partial(ct.launch) and classes
    assert {"tilelib/ops/rotary.py", "tilelib/ops/cross_entropy.py", "tilelib/ops/gemm.py"} <= ok
    gemm = _analysis(out, "tilelib/ops/gemm.py")
    assert {v["constants"]["TRANSPOSE_A"] for v in gemm["variants"]} == {True, False}
    assert [k["name"] for k in gemm["kernels"]] == ["_gemm_kernel"]  # the alias is the same kernel
    # a test session that ends the process with os._exit after failing tests
    rms = _analysis(out, "tilelib/ops/rms_norm.py")
    assert {i["dtype"] for v in rms["variants"] for i in v["instances"]} == {"float16", "bfloat16", "float32"}
    assert any("os._exit" in e for e in rms["capture"]["errors"])
    # ten long constants: bounded names
    moe = _analysis(out, "tilelib/ops/moe_gate.py")
    assert all(len(b["bytecode"]["path"].split("/")[-1]) < 200 for v in moe["variants"] for i in v["instances"]
               for b in i["builds"])
    # an lru_cache factory with occupancy
    swiglu = _analysis(out, "tilelib/ops/swiglu.py")
    assert {"occupancy=1", "occupancy=2"} <= {part for v in swiglu["variants"] for part in v["name"].split(",")}
    # autograd.Function / nn.Module wrappers over a kernel-only module: forward and backward, and a complete draft
    softmax = _analysis(out, "tilelib/kernels/softmax.py")
    assert {v["kernel"] for v in softmax["variants"]} == {"softmax_fwd_kernel", "softmax_bwd_kernel"}
    assert rows["tilelib/kernels/softmax.py"]["draft"] == "complete"
    # timing harnesses: perf_report + do_bench with tile sizes from provider strings, a CUDA-event loop
    perf = _analysis(out, "scripts/softmax_perf.py")
    origins = {c["origin"].split("provider=")[-1].rstrip(")"): c["args"] for c in perf["capture"]["configurations"]}
    assert {"cutile-256", "cutile-1024"} <= set(origins) and origins["cutile-256"][2] == "256"
    assert rows["scripts/matmul_events.py"]["configurations"] >= 2
    # libraries on CuPy arrays and cuda.core buffers (CAI and DLPack objects)
    attn = _analysis(out, "cupy_ops/cutecupy/ops/attention.py")
    assert {v["constants"]["HEAD_DIM"] for v in attn["variants"]} == {64, 128}
    gemv = _analysis(out, "coreops/coreops/ops/gemv.py")
    assert {v["constants"]["K_BLOCKS"] for v in gemv["variants"]} == {8, 3}
    assert rows["coreops/coreops/ops/scale_dlpack.py"]["analysed"] == "yes"


def test_past_the_budget_only_tests_of_a_new_signature_run(torch_python, tmp_path):  # noqa: F811
    from tileport.config import Config
    from tileport.analysis import analyze_op

    config = Config()
    config = config.model_copy(update={"analysis": config.analysis.model_copy(update={"tests_budget_s": 0.0})})
    a = analyze_op(LIB / "tilelib" / "kernels" / "softmax.py", targets=["sm_90"], out_dir=tmp_path / "out",
                   run_tileiras=False, python=torch_python, config=config)
    # 9 forward tests (3 shapes x 3 dtypes) and a backward test: one per dtype and function runs, all kernels seen
    assert any("tests not run" in e and "new launch signature" in e for e in a.capture.errors)
    assert {v.kernel for v in a.variants} == {"softmax_fwd_kernel", "softmax_bwd_kernel"}
    assert {i.dtype for v in a.variants for i in v.instances} == {"float16", "bfloat16", "float32"}
    # one forward test per dtype, plus the backward test's forward (all 9 + 1 without the budget)
    assert len([c for c in a.capture.configurations if c.kernel == "softmax_fwd_kernel"]) == 4


def test_a_script_picking_its_kernel_by_a_flag_runs_once_per_other_choice():
    from tileport.analysis.testrun import choice_argvs

    text = ('import argparse\nap = argparse.ArgumentParser()\n'
            'ap.add_argument("--kernel", choices=["native", "swizzle", "persistent"], default="native")\n'
            'ap.add_argument("--sizes", type=int, nargs="+")\n'
            'ap.add_argument("--mode", choices=("a", "b"))\n')
    assert choice_argvs(text) == [["--kernel", "swizzle"], ["--kernel", "persistent"], ["--mode", "a"], ["--mode", "b"]]
    assert choice_argvs("def broken(:\n") == []
