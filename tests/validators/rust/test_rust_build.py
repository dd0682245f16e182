"""Real cargo against the real cutile crates: the hand-written ports build, dump Tile IR and assemble sm_90
cubins; broken kernels come back as parsed diagnostics with the right code, place and message.

Slow: needs cargo, the pip CUDA headers / libclang / tileiras, and the shared dependency build
(TILEPORT_CARGO_TARGET, default ~/.cache/tileport/cargo-target; cold ~3-5 min, warm a few seconds per crate).
Crates live at fixed places under TILEPORT_CACHE_DIR/crates/test-* so reruns are incremental.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tileport.cli import main as cli_main
from tileport.errors import EnvironmentBlocked
from tileport.validators.rust.build import BuildOptions, RustBuildResult, build_crate, prepare_crate
from tileport.validators.rust.crate import crate_cache_root, crate_id, write_crate
from tileport.validators.rust.spec import DumpSpec

pytestmark = pytest.mark.slow

PORTS = Path(__file__).resolve().parents[3] / "ports"
TILEIR_MAGIC = b"\x7fTileIR\x00"
ELF_MAGIC = b"\x7fELF"

if shutil.which("cargo") is None:
    pytest.skip("cargo is not installed", allow_module_level=True)


def build(layout, **kw) -> RustBuildResult:
    try:
        return build_crate(layout, BuildOptions(**kw))
    except EnvironmentBlocked as e:  # a missing toolchain part is an environment problem, not a test failure
        pytest.skip(str(e))


# ------------------------------------------------------------------------------------------------------- ports

# What a reader of each reference kernel expects to find in the port's Tile IR (tileirdisasm text).
EXPECTED_IR = {
    # generic over the element type: one variant per dtype the op declares
    "vector_add": ["load_view_tko", "store_view_tko", "addf", "assume div_by<16>", "tile<1024xf16>",
                   "tile<1024xbf16>", "tile<1024xf32>"],
    # the chunked entries walk the row in a loop and keep a running max (maxf) and sum
    "softmax": ["padding_value = neg_inf", "reduce", "exp", "ftof", "for ", "maxf"],
    "matmul": ["mmaf", "tile<128x128xf32>", "tile<128x64xf16>", "for "],
    "silu_and_mul": ["exp", "divf", "ftof"],
    "rms_norm": ["rsqrt", "reduce", "for "],
}


@pytest.fixture(scope="module")
def ports_built() -> dict[str, RustBuildResult]:
    out = {}
    for port in sorted(EXPECTED_IR):
        layout = prepare_crate(PORTS / port, out=crate_cache_root() / f"test-{port}")
        out[port] = build(layout)
    return out


def test_at_least_five_ports_including_the_required_ones():
    ports = {p.name for p in PORTS.iterdir() if (p / "kernel.rs").is_file() and (p / "spec.json").is_file()}
    assert {"vector_add", "softmax", "matmul"} <= ports and len(ports) >= 5


@pytest.mark.parametrize("port", sorted(EXPECTED_IR))
def test_port_builds_dumps_ir_and_assembles_sm90_cubins(ports_built, port):
    result = ports_built[port]
    assert result.ok, "\n".join(d.short() for d in result.diagnostics)
    spec = json.loads((PORTS / port / "spec.json").read_text())
    expected_jobs = sum(len(e["variants"]) for e in spec["entries"])
    assert len(result.jobs) == expected_jobs
    for job in result.jobs:
        assert job.ok and job.target == "sm_90"
        assert Path(job.bytecode).read_bytes()[:8] == TILEIR_MAGIC
        assert Path(job.cubin).read_bytes()[:4] == ELF_MAGIC
        text = Path(job.tileir_text).read_text()
        assert f"entry @{job.entry}_entry(" in text  # tileirdisasm's printer, same as for the reference
    combined = "\n".join(Path(j.tileir_text).read_text() for j in result.jobs)
    for needle in EXPECTED_IR[port]:
        assert needle in combined, f"{port}: `{needle}` missing from the Tile IR"
    kinds = {a.kind for a in result.artifacts}
    assert {"tileir_bytecode", "tileir_text", "cubin"} <= kinds
    # cargo and the IR dump (model-written code) ran in the sandbox, and the record says so
    cargo = [c for c in result.commands if "build" in c.argv and "--message-format=json" in c.argv]
    assert cargo and cargo[-1].exit_code == 0 and cargo[-1].sandbox["profile"] == "cargo-build"
    assert "--unshare-net" in cargo[-1].argv and cargo[-1].sandbox["network"] is False
    assert any(c.sandbox and c.sandbox["profile"] == "run-model-binary" and c.exit_code == 0 for c in result.commands)


def test_matmul_variants_are_distinct_specialisations(ports_built):
    jobs = {j.variant: Path(j.tileir_text).read_text() for j in ports_built["matmul"].jobs}
    assert "tile<64x64xf32>" in jobs["f16_64x64x32"] and "tile<64x64xf32>" not in jobs["f16_128x128x64"]
    assert "xbf16>" in jobs["bf16_128x128x64"] and "xbf16>" not in jobs["f16_128x128x64"]


# ---------------------------------------------------------------------------------------------- broken kernels

# the vector_add port written for f32 only (the port itself is generic over its element type): the broken kernels
# below are edits of this one
GOOD = (PORTS / "vector_add" / "kernel.rs").read_text().replace(
    "fn add<E: ElementType, const B: i32>", "fn add<const B: i32>").replace("Tensor<E, ", "Tensor<f32, ")
assert "fn add<const B: i32>" in GOOD and "Tensor<E" not in GOOD
VA_SPEC = {"module": "vector_add", "entries": [{"name": "add", "variants": [
    {"name": "b1024", "generics": ["1024"], "strides": {"z": [1], "x": [1], "y": [1]}}]}]}


def body(*lines: str) -> str:
    """GOOD with `lines` replacing the kernel's body."""
    start = GOOD.index("        let tx = x.load_like(z);")
    end = GOOD.index("        z.store(tx + ty);\n") + len("        z.store(tx + ty);\n")
    return GOOD[:start] + "".join(f"        {l}\n" for l in lines) + GOOD[end:]


def position(src: str, marker: str, col_of: str | None = None) -> tuple[int, int]:
    """1-based line of the first line containing `marker`, and 1-based column of `col_of` on it."""
    for i, line in enumerate(src.splitlines(), 1):
        if marker in line:
            return i, line.index(col_of or marker) + 1
    raise AssertionError(marker)


@pytest.fixture(scope="module")
def scratch():
    """One crate reused for every broken kernel: each case only recompiles the conversion crate."""
    root = crate_cache_root() / "test-broken"

    def run(kernel: str, spec: dict = VA_SPEC, host: str | None = None) -> tuple[RustBuildResult, str]:
        layout = write_crate(root, DumpSpec.model_validate(spec), kernel, host)
        return build(layout), kernel

    return run


def errors(result: RustBuildResult, source: str):
    return [d for d in result.diagnostics if d.is_error and d.source.value == source]


@pytest.mark.heavy
def test_tile_shape_mismatch_is_rustc_E0308_at_the_store(scratch):
    result, src = scratch(body(
        "let tx: Tile<f32, { [B] }> = x.load_like(z);",
        "let wide: Tile<f32, { [B, 2] }> = tx.reshape(shape![B, 1]).broadcast(shape![B, 2]);",
        "z.store(wide);"))
    assert not result.ok and result.stage == "cargo"
    [d] = [d for d in errors(result, "rustc") if d.line == position(src, "z.store(wide)")[0]]
    assert d.code == "E0308" and d.message == "mismatched types"
    assert (d.file, d.col) == ("src/kernel.rs", position(src, "z.store(wide)", "wide")[1])
    assert d.snippet.strip() == "z.store(wide);"
    assert "Tile_2<f32, B, 2>" in d.rendered and "Tile_1<f32, B>" in d.rendered


@pytest.mark.heavy
def test_wrong_dtype_is_rustc_E0308_naming_both_element_types(scratch):
    src = GOOD.replace("y: &Tensor<f32, { [-1] }>", "y: &Tensor<f16, { [-1] }>")
    result, src = scratch(src)
    [d] = errors(result, "rustc")
    line, col = position(src, "z.store(tx + ty)", "ty)")
    assert (d.code, d.file, d.line, d.col) == ("E0308", "src/kernel.rs", line, col)
    assert "f16" in d.rendered and "f32" in d.rendered


@pytest.mark.heavy
def test_missing_type_annotation_is_rustc_E0283(scratch):
    result, src = scratch(body("let total = reduce_sum(x.load_like(z), 0i32);",
                               "let tx = x.load_like(z);", "let ty = y.load_like(z);", "z.store(tx + ty);"))
    [d] = errors(result, "rustc")
    assert d.code in ("E0282", "E0283") and d.message == "type annotations needed"
    assert (d.file, d.line) == ("src/kernel.rs", position(src, "let total")[0])
    assert any("explicit type" in n for n in d.notes)


@pytest.mark.heavy
def test_unsupported_call_is_a_located_cutile_jit_error(scratch):
    result, src = scratch(body("let block: i32 = program_id(0).pow(2u32);",
                               "let tx = x.load_like(z);", "let ty = y.load_like(z);", "z.store(tx + ty);"))
    assert result.stage in ("ir-dump", "tileiras") and not result.ok
    assert not errors(result, "rustc")  # rustc accepts it: only the JIT frontend knows
    [d] = errors(result, "cutile")
    assert d.code == "JIT" and "method `pow` not found for receiver type `i32`" in d.message
    assert (d.file, d.line, d.col) == ("src/kernel.rs", *position(src, ".pow(", "pow"))
    assert (d.entry, d.variant, d.target) == ("add", "b1024", "sm_90")
    assert d.snippet.strip().startswith("let block")
    assert [j.ok for j in result.jobs] == [False]


@pytest.mark.heavy
def test_non_power_of_two_tile_is_a_tileiras_error_for_that_variant(scratch):
    spec = json.loads(json.dumps(VA_SPEC))
    spec["entries"][0]["variants"].append({"name": "b1000", "generics": ["1000"], "strides": {"z": [1], "x": [1], "y": [1]}})
    result, _ = scratch(GOOD, spec)
    assert not result.ok and result.stage == "tileiras"
    [d] = errors(result, "tileiras")
    assert d.variant == "b1000" and d.code.startswith("TILEIRAS-")
    assert "power of two" in d.message and "[1000]" in d.message
    ok = {j.variant: j.ok for j in result.jobs}
    assert ok == {"b1024": True, "b1000": False}  # the good variant still produced its cubin
    assert Path(next(j.cubin for j in result.jobs if j.variant == "b1024")).is_file()


HOST_ALIAS = """\
use cutile::prelude::*;

use crate::kernel::vector_add;

pub fn run() -> Result<(), String> {
    let buf = api::zeros::<f32>(&[4096]).sync().map_err(|e| format!("{e:?}"))?;
    let y: Arc<Tensor<f32>> = api::ones::<f32>(&[4096]).sync().map_err(|e| format!("{e:?}"))?.into();
    let out = buf.partition([1024]);
    // Reads the tensor the kernel is writing: cutile's ownership rules make this a compile error.
    let (_out, _x, _y) = vector_add::add(out, Arc::new(buf), y).sync().map_err(|e| format!("{e:?}"))?;
    Ok(())
}
"""


@pytest.mark.heavy
def test_host_side_aliasing_is_a_borrow_error_in_host_rs(scratch):
    spec = dict(VA_SPEC, host=True)
    result, _ = scratch(GOOD, spec, HOST_ALIAS)
    [d] = errors(result, "rustc")
    line, col = position(HOST_ALIAS, "Arc::new(buf)", "buf)")
    assert (d.code, d.file, d.line, d.col) == ("E0382", "src/host.rs", line, col)
    assert "moved value: `buf`" in d.message


@pytest.mark.heavy
def test_fixing_the_kernel_rebuilds_only_the_conversion_crate(scratch):
    result, _ = scratch(GOOD.replace("z.store(tx + ty);", "z.store(ty + tx);"))
    assert result.ok, [d.short() for d in result.diagnostics]
    assert result.rebuilt == [f"tileport-port-{crate_id(result.crate)}"]  # cutile itself was not recompiled


# ---------------------------------------------------------------------------------------------------------- CLI


def test_cli_json_for_a_broken_kernel_exits_1_with_the_diagnostics(tmp_path, capsys):
    (tmp_path / "kernel.rs").write_text(GOOD.replace("y: &Tensor<f32, { [-1] }>", "y: &Tensor<f16, { [-1] }>"))
    (tmp_path / "spec.json").write_text(json.dumps(VA_SPEC))
    out = crate_cache_root() / "test-broken-cli"
    code = cli_main(["build-rust", str(tmp_path), "--out", str(out), "--json", "--no-cubin"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 1 and payload["ok"] is False and payload["stage"] == "cargo"
    assert [(d["source"], d["code"], d["file"]) for d in payload["diagnostics"] if d["level"] == "error"] == \
        [("rustc", "E0308", "src/kernel.rs")]


def test_cli_success_and_bad_input_exit_codes(tmp_path, capsys):
    out = crate_cache_root() / "test-cli-vector_add"
    assert cli_main(["build-rust", str(PORTS / "vector_add"), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ok   add/f32_b1024/sm_90" in text and ".cubin" in text and text.rstrip().splitlines()[-1].startswith("OK")
    (tmp_path / "kernel.rs").write_text(GOOD)
    assert cli_main(["build-rust", str(tmp_path)]) == 2  # no spec
    assert "no spec.json" in capsys.readouterr().err
    (tmp_path / "spec.json").write_text('{"module": "vector_add", "entries": []}')
    assert cli_main(["build-rust", str(tmp_path)]) == 2  # invalid spec
