"""The IR each side's JIT compiled for a timed configuration, diffed (issue 34 item 1). The runner keeps both
sides' bytecode per row (tested on the GPU: docs/gpu-runs.md); here, bytecode recorded from the softmax row kernel
(the reference's cuTile Python export and the draft port's cutile build, f16, TILE_N=1024) goes through the same
path a results.json takes: reports.perf_from_results diffs it with tileirdisasm and the IR gate once, keeps the
result in the row, and stage F's advice names it."""

from __future__ import annotations

import base64
import copy

import pytest

from tests.conftest import REPO
from tileport.exec.toolchain import from_config
from tileport.validators.gpu.advice import row_advice
from tileport.validators.gpu.bytecode import annotate, summary
from tileport.validators.gpu.reports import perf_from_results

BC = REPO / "tests" / "data" / "gpu_results" / "bytecode"

pytestmark = pytest.mark.skipif(from_config().tileirdisasm is None, reason="tileirdisasm is not installed")


def _results(ref: str, port: str) -> dict:
    store = {h: base64.b64encode((BC / f).read_bytes()).decode() for h, f in
             (("r1", "softmax_row_ref_f16.tileirbc"), ("p1", "softmax_row_port_f16.tileirbc"))}
    return {"gate": {"op": "softmax"}, "env": {"capability": [9, 0]}, "bytecode": store,
            "perf": {"hw": {"flush": {"verified": True}}, "rows": [
                {"config": "float16 [m=1024,n=1000]", "ref_ms": 0.0065, "port_ms": 0.022, "ratio": 3.4,
                 "bytecode": {"ref": [ref], "port": [port], "port_tileiras_args": "--gpu-name sm_90 --opt-level 3"}},
                {"config": "float16 [m=4096,n=4096]", "ref_ms": 0.1, "port_ms": 0.1, "ratio": 1.0,
                 "bytecode": {"missing": "bytecode dumps were off in this run"}}]}}


def test_a_slow_row_gets_the_ir_gate_on_what_both_jits_compiled_and_f_names_it():
    rep = perf_from_results(_results("r1", "p1"))
    slow = rep.rows[0].ir_diff
    assert slow["verdict"] == "PASS_WITH_NOTES" and len(slow["pairs"]) == 1
    checks = [f["check"] for f in slow["pairs"][0]["findings"]]
    assert checks[0] == "memory.index_grid"  # the most severe first
    assert slow["port_tileiras_args"] == "--gpu-name sm_90 --opt-level 3"
    assert rep.rows[1].ir_diff == {"missing": "bytecode dumps were off in this run"}
    row = {"config": rep.rows[0].config, "ratio": 3.4, "ir_diff": slow}
    (said,) = row_advice(row, gate=1.05)
    assert said.startswith("float16 [m=1024,n=1000] (3.400x): the IR each side's JIT compiled for it on the GPU: "
                           "PASS_WITH_NOTES: memory.index_grid:")


def test_the_same_bytecode_on_both_sides_is_identical_and_a_missing_side_is_said():
    same = copy.deepcopy(_results("r1", "r1"))
    (line, _) = annotate(same)
    assert line == "softmax float16 [m=1024,n=1000] 3.400x: the compiled IR of both sides is identical (PASS)"
    gone = _results("r1", None)
    annotate(gone)
    assert summary(gone["perf"]["rows"][0]["ir_diff"]) == \
        "not compared (no bytecode from the port for this configuration)"


def test_bytecode_newer_than_the_local_tileirdisasm_is_an_error_that_says_which_tool_reads_it():
    # the port's bytecode as the H100 run of 2026-12-05 recorded it (rms_norm f16): cutile there wrote Tile IR 13.5,
    # the version of the bundle's tileiras; this machine's pinned tileirdisasm reads up to 13.4
    store = {"r1": base64.b64encode((BC / "softmax_row_ref_f16.tileirbc").read_bytes()).decode(),
             "p135": base64.b64encode((BC / "rms_norm_port_f16_v13_5.tileirbc").read_bytes()).decode()}
    results = {"gate": {"op": "rms_norm"}, "env": {"capability": [9, 0]}, "bytecode": store,
               "perf": {"rows": [{"config": "float16 [m=4096,n=4096]", "ratio": 1.02,
                                  "bytecode": {"ref": ["r1"], "port": ["p135"]}}]}}
    annotate(results)
    err = results["perf"]["rows"][0]["ir_diff"].get("error", "")
    if "13.5" not in err:
        pytest.skip(f"this tileirdisasm reads Tile IR 13.5 ({err[:80]})")
    assert "unsupported Tile version 13.5" in err and "nvidia-cuda-tileiras==13.5.*" in err
