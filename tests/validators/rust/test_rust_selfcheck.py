"""Stage B's IR self-check on real builds: every hand-written port, compiled by real cargo + cutile 0.5.0, against
the real reference Tile IR that `tileport analyze` exports (made fresh here for sm_90, so a clean clone runs it).

Slow (cargo). Crates are the ones tests/validators/rust/test_rust_build.py uses (TILEPORT_CACHE_DIR/crates/test-<port>), built
without cubins, so on a warm cache each port costs a few seconds.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tileport.pipeline.stages.write_kernel import result_from_build
from tileport.cli import main as cli_main
from tileport.errors import EnvironmentBlocked
from tileport.analysis import analyze_op
from tileport.validators.rust.build import BuildOptions, RustBuildResult, build_crate, prepare_crate
from tileport.validators.rust.crate import crate_cache_root, write_crate
from tileport.validators.rust.reference import derive_spec, find_instance, load_analysis, sync_spec
from tileport.validators.rust.selfcheck import UNMATCHED, self_check
from tileport.validators.rust.spec import DumpSpec, load_spec
from tileport.validators.tileir.diff import Severity

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
PORTS = REPO / "ports"
OUT = REPO / "out"  # replaced by the fresh analyses of the `references` fixture
PORT_NAMES = ["matmul", "rms_norm", "silu_and_mul", "softmax", "vector_add"]

if shutil.which("cargo") is None:
    pytest.skip("cargo is not installed", allow_module_level=True)


@pytest.fixture(scope="module", autouse=True)
def references(tmp_path_factory):
    """Reference analyses of the ported examples, exported by the real stage A (sm_90; no cubins needed)."""
    global OUT
    OUT = tmp_path_factory.mktemp("references")
    for port in PORT_NAMES:
        analyze_op(REPO / "examples" / f"{port}.py", targets=["sm_90"], out_dir=OUT / port, run_tileiras=False,
                   warm=True)
    return OUT


def build(layout) -> RustBuildResult:
    try:
        return build_crate(layout, BuildOptions(cubins=False))
    except EnvironmentBlocked as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def ports_checked():
    out = {}
    for port in PORT_NAMES:
        layout = prepare_crate(PORTS / port, out=crate_cache_root() / f"test-{port}")
        result = build(layout)
        assert result.ok, [d.short() for d in result.diagnostics]
        out[port] = (layout, result, self_check(result, load_analysis(OUT / port), layout.spec,
                                                analysis_file=OUT / port))
    return out


@pytest.mark.parametrize("port", PORT_NAMES)
def test_each_port_passes_its_self_check_against_the_real_reference(ports_checked, port):
    layout, build, rep = ports_checked[port]
    assert rep.verdict.value in ("PASS", "PASS_WITH_NOTES"), [
        (p.variant, p.verdict, p.reason, sorted(p.checks(Severity.ERROR))) for p in rep.pairs]
    assert len(rep.pairs) == len(layout.spec.jobs()) and not rep.unmatched
    assert all(p.ref_text and Path(p.ref_text).is_file() and p.counts["error"] == 0 for p in rep.pairs)
    stage = result_from_build(build, rep)
    assert stage.stage.value == "B" and stage.verdict == "COMPILED" and stage.fail_class is None
    assert any(a.kind == "analysis" for a in stage.artifacts)
    # specs derived from the analysis: no stride-divisibility disagreement is left as a warning
    assert not [f for p in rep.pairs for f in p.findings if f.check == "assumptions.div_by"], port


def test_silu_and_mul_reads_sliced_views_like_the_reference(ports_checked):
    _, result, rep = ports_checked["silu_and_mul"]
    for pair in rep.pairs:
        # only benign notes: no memory-index mismatch (the old port indexed column tile bid(y) + n/256), no lost
        # alignment, no dataflow difference; the one warning allowed is the f16/bf16 entry's occupancy hint
        assert pair.verdict == "PASS_WITH_NOTES", pair.findings
        assert {f.check for f in pair.findings if f.severity == Severity.WARNING} <= {"hints.occupancy"}, pair.findings
        assert not pair.categories(Severity.ERROR) and "memory" not in pair.categories()
    text = Path(result.jobs[0].tileir_text).read_text()
    # two sliced views, each from an offset base: the gate at column 0, the up half at column n
    assert text.count("offset ") == 2 and text.count("make_tensor_view") == 4


@pytest.fixture(scope="module")
def broken_softmax():
    """softmax with the padding of one entry changed to zero and the other's max reduction turned into a min:
    both compile; both are wrong (zero-padded tails enter the row max / the max is the wrong one)."""
    src = (PORTS / "softmax" / "kernel.rs").read_text()
    first = src.index("padding::NegInf")
    src = src[:first] + "padding::Zero" + src[first + len("padding::NegInf"):]
    second = src.index("reduce_max", src.index("fn softmax_row_scaled"))
    src = src[:second] + "reduce_min" + src[second + len("reduce_max"):]
    layout = write_crate(crate_cache_root() / "test-selfcheck-broken", load_spec(PORTS / "softmax" / "spec.json"), src)
    result = build(layout)
    assert result.ok, [d.short() for d in result.diagnostics]
    return layout, result, self_check(result, load_analysis(OUT / "softmax"), layout.spec)


def test_a_port_that_compiles_but_is_wrong_fails_naming_the_category(broken_softmax):
    _, build, rep = broken_softmax
    assert rep.verdict.value == "FAIL_FIXABLE" and rep.exit_code == 1
    row = rep.pair("softmax_row", "f16_n1024")
    assert row.verdict == "FAIL_FIXABLE" and "memory.padding" in row.checks(Severity.ERROR)
    scaled = rep.pair("softmax_row_scaled", "f16_n1024")
    assert scaled.verdict == "FAIL_FIXABLE" and "reduction" in scaled.categories(Severity.ERROR)
    stage = result_from_build(build, rep)
    assert (stage.verdict, stage.fail_class.value) == ("FAIL_FIXABLE", "kernel")
    assert "softmax_row/f16_n1024/sm_90" in stage.summary


def test_unmatched_variants_are_reported_with_the_reason_and_fail_the_check(ports_checked):
    layout, result, _ = ports_checked["silu_and_mul"]
    spec = layout.spec.model_copy(deep=True)
    f16, bf16 = spec.entries[0].variants
    f16.reference = None
    bf16.reference.dtype = "float64"
    spec.targets = ["sm_90", "sm_80"]
    rep = self_check(result, load_analysis(OUT / "silu_and_mul"), DumpSpec.model_validate(spec.model_dump()))
    # f16 and bf16 broken on both targets, and the f32 entry on sm_80, which the reference was not built for
    assert rep.verdict.value == "FAIL_FIXABLE" and len(rep.unmatched) == 2 * 2 + 1
    assert "names no reference" in rep.pair("silu_and_mul", "f16_16x256", "sm_90").reason
    assert "not instantiated for float64" in rep.pair("silu_and_mul", "bf16_16x256", "sm_90").reason
    assert all(p.verdict == UNMATCHED for p in rep.pairs if p.entry == "silu_and_mul")
    # nothing of f16/bf16 was compared, so those reference instances are uncovered
    assert "silu_and_mul_kernel[TILE_M=16,TILE_N=256]/float16/sm_90" in rep.uncovered
    assert result_from_build(result, rep).verdict == "FAIL_FIXABLE"


def test_reference_lookup_distinguishes_bool_constants_from_ints():
    analysis = load_analysis(OUT / "softmax")
    spec = load_spec(PORTS / "softmax" / "spec.json")
    key = spec.entries[1].variants[0].reference.model_copy(update={"constants": {"TILE_N": 1024, "FUSE_SCALE": 1}})
    assert "no variant with constants" in find_instance(analysis, key)
    assert not isinstance(find_instance(analysis, spec.entries[1].variants[0].reference), str)


def test_init_spec_derives_variants_and_sync_restores_reference_assumptions(tmp_path, capsys):
    analysis = load_analysis(OUT / "silu_and_mul")
    spec = derive_spec(analysis)
    [entry] = spec.entries
    assert entry.name == "silu_and_mul" and {v.name for v in entry.variants} == {
        "f16__TILE_M-16__TILE_N-256", "bf16__TILE_M-16__TILE_N-256", "f32__TILE_M-16__TILE_N-256"}
    f32 = next(v for v in entry.variants if v.generics[0] == "f32")
    assert f32.generics == ["f32", "16", "256"] and f32.tensors["x"].stride_div == [4, 1]  # 16 bytes of f32
    assert f32.strides["x"] == [-1, 1] and f32.reference.dtype == "float32"

    # CLI: a directory with only kernel.rs gets a spec.json; an existing spec is synced in place
    (tmp_path / "kernel.rs").write_text((PORTS / "silu_and_mul" / "kernel.rs").read_text())
    assert cli_main(["build-rust", str(tmp_path), "--init-spec", str(OUT / "silu_and_mul")]) == 0
    written = load_spec(tmp_path / "spec.json")
    assert sum(len(e.variants) for e in written.entries) == 3
    old = json.loads((PORTS / "silu_and_mul" / "spec.json").read_text())
    for v in old["entries"][0]["variants"]:  # the old hand-written form: 16-divisible strides, a hint on n
        v["tensors"] = {"x": {"shape": [128, 8192], "strides": [8192, 1]}}
        v["scalar_hints"] = {"n": 4096}
    (tmp_path / "spec.json").write_text(json.dumps(old))
    capsys.readouterr()
    assert cli_main(["build-rust", str(tmp_path), "--init-spec", str(OUT / "silu_and_mul")]) == 0
    assert "scalar hint on n dropped" in capsys.readouterr().out
    synced = load_spec(tmp_path / "spec.json")
    assert synced == sync_spec(load_spec(PORTS / "silu_and_mul" / "spec.json"), analysis)[0] == \
        load_spec(PORTS / "silu_and_mul" / "spec.json")  # the committed spec is already in sync


def test_cli_reference_exit_codes_and_json(tmp_path, capsys):
    out = crate_cache_root() / "test-silu_and_mul"
    code = cli_main(["build-rust", str(PORTS / "silu_and_mul"), "--out", str(out), "--no-cubin",
                     "--reference", str(OUT / "silu_and_mul")])
    text = capsys.readouterr().out
    assert code == 0
    assert "PASS_WITH_NOTES silu_and_mul/f16_16x256/sm_90  <->  silu_and_mul_kernel[TILE_M=16,TILE_N=256]/float16" \
        in text
    assert "PASS_WITH_NOTES silu_and_mul_f32/f32_16x256/sm_90  <->  silu_and_mul_kernel[TILE_M=16,TILE_N=256]/float32" \
        in text  # every dtype the reference declares has its pair
    assert "0 unmatched, 0 reference instance(s) uncovered" in text
    assert text.rstrip().splitlines()[-1].endswith("-> stage B COMPILED")

    # a wrong port: exit 1, --json carries the findings and the stage record
    src = (PORTS / "softmax" / "kernel.rs").read_text().replace("padding::NegInf", "padding::Zero")
    (tmp_path / "kernel.rs").write_text(src)
    shutil.copy(PORTS / "softmax" / "spec.json", tmp_path / "spec.json")
    code = cli_main(["build-rust", str(tmp_path), "--out", str(crate_cache_root() / "test-selfcheck-broken"),
                     "--no-cubin", "--json", "--reference", str(OUT / "softmax" / "analysis.json")])
    payload = json.loads(capsys.readouterr().out)
    assert code == 1 and payload["ok"] is True  # it compiled; the self-check failed
    sc = payload["self_check"]
    assert sc["verdict"] == "FAIL_FIXABLE" and sc["stage_result"]["verdict"] == "FAIL_FIXABLE"
    checks = {f["check"] for p in sc["pairs"] for g in p["groups"] for f in g["findings"]}
    assert "memory.padding" in checks

    # bad input: no analysis there -> exit 2 before any build
    assert cli_main(["build-rust", str(PORTS / "softmax"), "--reference", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "nowhere" in err and "no such file" in err and "tileport analyze" in err
