"""Triton as a source and as a reference: analysis (static and by launch capture), pairing, the reference
choice, the Triton -> cuTile Python lift and its holes.

The capture tests import the Triton ops in the torch analysis interpreter (`scripts/setup-torch-venv.sh`: torch
and triton on a CPU, fake tensors); they skip without it, and fail with TILEPORT_REQUIRE_TORCH=1 (CI)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tileport.draft.triton_lift import lift
from tileport.analysis.pipeline import analyze_op
from tileport.analysis.triton.backend import NO_BACKEND_GAP
from tileport.analysis.triton.detect import is_triton_source
from tileport.analysis.triton.pairing import choose, cutile_twin, find_twin, pending
from tileport.analysis.triton.pipeline import analyze_triton_op
from tileport.analysis.triton.static import inspect_triton

REPO = Path(__file__).resolve().parents[3]
EX = REPO / "examples"
TORCH_VENV_PYTHON = Path(os.environ.get("TILEPORT_TORCH_VENV", Path.home() / ".cache/tileport/torch-venv")) \
    / "bin" / "python"


@pytest.fixture(scope="session")
def triton_python() -> str:
    py = os.environ.get("TILEPORT_TORCH_PYTHON") or str(TORCH_VENV_PYTHON)
    ok = Path(py).is_file() and subprocess.run([py, "-c", "import torch, triton, cuda.tile, pydantic"],
                                               capture_output=True, timeout=120).returncode == 0
    if not ok:
        why = f"no interpreter with torch + triton + cuda-tile at {py} (run scripts/setup-torch-venv.sh)"
        if os.environ.get("TILEPORT_REQUIRE_TORCH") == "1":
            pytest.fail(f"TILEPORT_REQUIRE_TORCH=1 but {why}")
        pytest.skip(why)
    return py


@pytest.fixture(scope="session")
def analyses(triton_python, tmp_path_factory):
    out = tmp_path_factory.mktemp("triton")
    return {op: analyze_triton_op(EX / "triton" / f"{op}.py", out_dir=out / op, python=triton_python)
            for op in ("softmax", "rms_norm", "matmul")}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


# ---- static, no interpreter needed ----------------------------------------------------------------------------

def test_source_kind_is_detected():
    assert all(is_triton_source(_tree(EX / "triton" / f"{op}.py")) for op in ("softmax", "rms_norm", "matmul"))
    assert not is_triton_source(_tree(EX / "softmax.py"))


def test_static_reads_autotune_configs_lambda_grid_and_heuristics():
    mm = inspect_triton(_tree(EX / "triton" / "matmul.py"))
    (k,) = mm.triton
    assert [c.kwargs for c in k.configs] == [{"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64},
                                             {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}]
    assert k.configs[0].options == {"num_warps": 8, "num_stages": 3} and k.autotune_key == ["M", "N", "K"]
    (launch,) = mm.launches
    assert launch.grid.startswith("lambda META") and launch.kernel == "matmul_kernel"
    params = {p.name: p.kind for p in mm.kernels[0].params}
    assert params["a_ptr"] == "array" and params["BLOCK_K"] == "constant" and params["stride_am"] == "scalar"
    assert "dot" in mm.kernels[0].math_ops and mm.kernels[0].loops == 1
    sm = inspect_triton(_tree(EX / "triton" / "softmax.py"))
    assert sm.triton[0].heuristics == ["BLOCK_N"]
    load = next(m for m in sm.kernels[0].memory_ops if m.op == "tl.load")
    assert load.array == "x_ptr" and load.masked and "inf" in load.padding
    assert [b.constants for b in sm.kernels[0].constant_branches] == [["FUSE_SCALE"]]


def test_pairing_by_name(tmp_path):
    assert find_twin(EX / "softmax.py") == (EX / "triton" / "softmax.py", "name")
    assert find_twin(EX / "vector_add.py") is None  # no twin: nothing paired
    for d in ("cutile", "triton"):
        (tmp_path / "ops" / d).mkdir(parents=True)
    (tmp_path / "ops" / "cutile" / "rms_norm.py").write_text((EX / "rms_norm.py").read_text())
    (tmp_path / "ops" / "triton" / "rms_norm.py").write_text((EX / "triton" / "rms_norm.py").read_text())
    (tmp_path / "ops" / "triton" / "other.py").write_text("x = 1\n")
    assert find_twin(tmp_path / "ops" / "cutile" / "rms_norm.py")[0] == tmp_path / "ops" / "triton" / "rms_norm.py"
    assert cutile_twin(tmp_path / "ops" / "triton" / "rms_norm.py") == tmp_path / "ops" / "cutile" / "rms_norm.py"
    assert find_twin(tmp_path / "ops" / "cutile" / "other.py") is None


def test_cli_refuses_a_non_triton_twin_in_one_line():
    r = subprocess.run([sys.executable, "-m", "tileport", "analyze", str(EX / "rms_norm.py"), "--triton",
                        str(EX / "vector_add.py")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "no @triton.jit kernel" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


# ---- analysis by launch capture (torch + triton interpreter) ----------------------------------------------------

def test_triton_analysis_records_variants_grids_and_the_ir_gap(analyses):
    mm = analyses["matmul"]
    assert mm.source.kind == "triton" and mm.triton.version
    assert {v.constants["BLOCK_M"] for v in mm.variants} == {128, 64}  # one variant per autotune config
    assert all("num_warps=" in v.name for v in mm.variants)
    grids = {tuple(ln.grid for ln in mm.launches if ln.captured)}
    assert "(1, 1, 1)" in str(grids) and "(2, 2, 1)" in str(grids)  # the lambda grid, evaluated per config
    assert {i.dtype for v in mm.variants for i in v.instances} == {"float16", "bfloat16"}
    assert mm.triton.tile_ir_gap == NO_BACKEND_GAP and any(NO_BACKEND_GAP in n for n in mm.notes)
    sm = analyses["softmax"]
    assert {v.constants["BLOCK_N"] for v in sm.variants} == {128}  # computed by triton.heuristics from the row
    assert {v.constants["FUSE_SCALE"] for v in sm.variants} == {True, False}  # a run-time bool: both ways
    a = {p.name: (p.kind, p.ndim) for p in analyses["rms_norm"].kernels[0].params}
    assert a["x_ptr"] == ("array", 2) and a["w_ptr"] == ("array", 1) and a["eps"][0] == "scalar"


def test_stage_a_pairs_by_name_and_records_the_pending_choice(tmp_path):
    """Stage A of a conversion (the runner's own stage function) on an op with a Triton twin beside it, in an
    interpreter without triton (tileport's own): the cuTile Python conversion goes on, cuTile Python is the
    reference, and the record says why the twin was not analysed."""
    from types import SimpleNamespace

    from tileport.pipeline.stages.analyze import run as stage_a
    from tileport.config import Config
    from tileport.exec.toolchain import from_config
    from tileport.analysis.triton.record import reference_line
    from tileport.validators.rust.reference import load_analysis

    config = Config.model_validate({"targets": ["sm_90"], "analysis": {"python": sys.executable}})
    ctx = SimpleNamespace(op_path=str(EX / "rms_norm.py"), source=EX / "rms_norm.py", reference_dir=tmp_path / "ref",
                          kernel=None, config=config, toolchain=from_config(config), attempt=1, triton=None)
    result = stage_a(ctx)
    assert result.verdict == "PASS", result.summary
    ref = result.details["reference"]
    assert ref["status"] == "pending_gpu" and ref["paired_by"] == "name"
    assert ref["triton"].endswith("examples/triton/rms_norm.py") and "cannot import triton" in ref["note"]
    assert {v["reference"] for v in ref["variants"]} == {"cutile"} and len(ref["variants"]) == 2
    assert "pending a GPU" in result.summary
    assert load_analysis(tmp_path / "ref").reference is not None  # the record is in analysis.json too
    line = reference_line(result.typed)  # what status and the dashboard show
    assert "pending a GPU" in line and "Triton side: " + NO_BACKEND_GAP in line


def test_the_choice_is_written_into_the_cutile_analysis(analyses, tmp_path):
    from tileport.analysis.triton.pairing import attach

    cu = analyze_op(EX / "rms_norm.py", targets=["sm_90"], out_dir=tmp_path / "cu", run_tileiras=False)
    a = attach(cu, pending(cu, analyses["rms_norm"], "option"))
    from tileport.validators.rust.reference import load_analysis

    back = load_analysis(tmp_path / "cu")  # what later stages read
    assert back.reference == a.reference and back.reference.paired_by == "option"
    assert back.reference.triton_analysis.endswith("rms_norm/analysis.json")


def test_reference_choice_measured_per_variant(analyses, tmp_path):
    cu = analyze_op(EX / "rms_norm.py", targets=["sm_90"], out_dir=tmp_path / "cu", run_tileiras=False)
    tri = analyses["rms_norm"]
    # bench.json rows as the GPU script writes them (numbers made up here: a named fake of a GPU run)
    rows = [{"cutile_ms": 0.020, "triton_ms": 0.010,
             "cutile_variant": [{"kernel": "rms_norm_kernel", "constants": {"TILE_N": 4096, "CHUNKS": 1}}]},
            {"cutile_ms": 0.030, "triton_ms": 0.040,
             "cutile_variant": [{"kernel": "rms_norm_kernel", "constants": {"TILE_N": 2048, "CHUNKS": 4}}]},
            # constants no analysed variant has, and no bool to tell them apart: counted for none
            {"cutile_ms": 1.0, "triton_ms": 0.001,
             "cutile_variant": [{"kernel": "rms_norm_kernel", "constants": {"TILE_N": 1024, "CHUNKS": 9}}]}]
    m = choose(cu, tri, "name", {"rows": rows, "device": "fake"})
    by = {v.variant: v for v in m.variants}
    assert by["rms_norm_kernel[TILE_N=4096,CHUNKS=1]"].reference == "triton"
    assert by["rms_norm_kernel[TILE_N=4096,CHUNKS=1]"].ratio == pytest.approx(0.5)
    assert by["rms_norm_kernel[TILE_N=2048,CHUNKS=4]"].reference == "cutile"
    assert [v.configs for v in m.variants] == [1, 1]
    assert m.status == "measured" and m.tile_ir_gap == NO_BACKEND_GAP  # a Triton reference without Tile IR
    from tileport.analysis.triton.pairing import attach, ir_gaps

    gaps = ir_gaps(attach(cu, m))  # what stage B records: the Triton-referenced variant only, explicitly
    assert gaps == [f"rms_norm_kernel[TILE_N=4096,CHUNKS=1]: {NO_BACKEND_GAP}"]


# ---- the lift and its holes ------------------------------------------------------------------------------------

def test_lift_maps_the_common_patterns(analyses):
    src = {op: lift(a) for op, a in analyses.items()}
    assert all(not s.holes for s in src.values())
    mm = src["matmul"].source
    assert "ct.mma(a, b, acc)" in mm and "index=(pid_m, k)" in mm and "index=(k, pid_n)" in mm
    assert "stride_am" not in mm  # strides are the array's business in cuTile
    sm = src["softmax"].source
    assert "padding_mode=ct.PaddingMode.NEG_INF" in sm and "ct.max(x, axis=0, keepdims=True)" in sm
    assert any("n_cols" in n and "bounds" in n for n in src["softmax"].notes)


HOLEY = '''
import triton
import triton.language as tl


@triton.jit
def gather_kernel(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    idx = tl.load(idx_ptr + offs, mask=offs < n, other=0)
    v = tl.load(x_ptr + idx)
    tl.atomic_add(out_ptr + offs, v, mask=offs < n)


def gather(x, idx):
    import torch
    out = torch.zeros_like(x)
    gather_kernel[(triton.cdiv(x.numel(), 128),)](x, idx, out, x.numel(), BLOCK=128)
    return out
'''


def test_unmappable_patterns_are_holes_at_the_triton_line(triton_python, tmp_path):
    op = tmp_path / "gather.py"
    op.write_text(textwrap.dedent(HOLEY))
    a = analyze_triton_op(op, out_dir=tmp_path / "out", python=triton_python)
    holes = lift(a).holes
    by_line = {h.line: h for h in holes}
    assert set(by_line) == {11, 12}, holes  # the contiguous masked load of line 10 maps; these two do not
    assert by_line[11].what == "a gather through loaded indices" and by_line[11].col == 9
    assert "atomic_add" in by_line[12].what
    assert all(str(h).startswith("unsupported: ") and "gather.py:" in str(h) for h in holes)


def test_a_triton_only_op_drafts_to_cutile_rs_through_the_cutile_translator(analyses, tmp_path):
    from tileport.draft.triton_lift import draft_triton
    from tileport.config import Config

    draft, lifted, _ = draft_triton(analyses["matmul"], tmp_path, config=Config(targets=["sm_90"]))
    assert draft.complete, [str(h) for h in draft.holes]
    assert lifted.is_file() and "@ct.kernel" in lifted.read_text()
    rs = draft.kernel_rs
    assert "mma(a, b, acc)" in rs and "partition(shape![BLOCK_M, BLOCK_K])" in rs and "stride" not in rs
    (entry,) = draft.spec.entries
    assert len(entry.variants) == 4  # two autotune configs x two dtypes
    assert any("bounds" in n for n in draft.host_contract.notes)
