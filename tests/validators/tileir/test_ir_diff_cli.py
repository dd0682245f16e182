"""`tileport ir-diff REF GEN [--json]` as a user runs it: exit status, report, JSON, bytecode input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ir_kernels.build import compile_bytecode, disassemble, tileirdisasm
from ir_kernels.kernels import MUTATIONS

RUST = Path(__file__).resolve().parents[2] / "ir_kernels" / "rust"
needs_disasm = pytest.mark.skipif(tileirdisasm() is None, reason="tileirdisasm not installed")


def test_identical_files_pass_with_exit_0(cli):
    f = RUST / "matmul_f16.ref.tileir"
    r = cli("ir-diff", str(f), str(f))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Tile IR diff: PASS\n")
    assert "no differences" in r.stdout


def test_pass_with_notes_exits_0_and_groups_findings_by_category(cli):
    r = cli("ir-diff", str(RUST / "matmul_f16.ref.tileir"), str(RUST / "matmul_f16.rust.tileir"))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("Tile IR diff: PASS_WITH_NOTES")
    # groups in category order, each finding under its group with its lines
    assert out.index("assumptions (warning)") < out.index("benign (note)")
    block = out[out.index("assumptions (warning)"):out.index("benign (note)")]
    assert "WARN  assumptions.div_by [ref:" in block and "port:" in block
    assert "0 error(s), 3 warning(s)" in out


def test_failure_exits_1_and_names_the_category(cli):
    r = cli("ir-diff", str(RUST / "silu_and_mul_f16.ref.tileir"), str(RUST / "silu_and_mul_f16.rust.tileir"))
    assert r.returncode == 1
    assert r.stdout.startswith("Tile IR diff: FAIL_FIXABLE")
    assert "memory (error)" in r.stdout and "ERROR memory.index" in r.stdout


def test_json_report(cli):
    r = cli("ir-diff", str(RUST / "silu_and_mul_f16.ref.tileir"), str(RUST / "silu_and_mul_f16.rust.tileir"),
            "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["verdict"] == "FAIL_FIXABLE"
    cats = [g["category"] for g in data["groups"]]
    assert "memory" in cats and cats.index("memory") < cats.index("assumptions")
    mem = next(g for g in data["groups"] if g["category"] == "memory")
    assert mem["severity"] == "error"
    assert any(f["check"] == "memory.index" and f["ref_line"] and f["port_line"] for f in mem["findings"])
    assert data["rows"] and {"ref_line", "ref_text", "port_line", "port_text", "status"} <= set(data["rows"][0])
    assert data["entries"][0]["rule"] == "only_entry"


def test_json_is_identical_across_processes(cli):
    args = ("ir-diff", str(RUST / "rms_norm_chunked_f16.ref.tileir"), str(RUST / "rms_norm_chunked_f16.rust.tileir"),
            "--json")
    a = cli(*args, env={"PYTHONHASHSEED": "1"})
    b = cli(*args, env={"PYTHONHASHSEED": "2"})
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout


def test_side_by_side_view(cli):
    r = cli("ir-diff", str(RUST / "softmax_f16.ref.tileir"), str(RUST / "softmax_f16.rust.tileir"),
            "--side-by-side", "--width", "200")
    assert r.returncode == 0
    view = r.stdout[r.stdout.index("reference "):]
    rows = [l for l in view.splitlines() if " | " in l][1:]
    assert rows
    store = [l for l in rows if "store_view_tko" in l]
    assert store and " | . | " in store[0]  # same op, different (grid-dependent) index


@needs_disasm
def test_bytecode_is_disassembled_first(cli, tmp_path):
    ref_k, ref_sig, mut_k, mut_sig, _, _ = MUTATIONS["lost_padding"]
    ref_bc = compile_bytecode(ref_k, ref_sig, tmp_path / "ref.tileirbc")
    mut_bc = compile_bytecode(mut_k, mut_sig, tmp_path / "port.tileirbc")
    text = tmp_path / "ref.tileir"
    text.write_text(disassemble(ref_bc))
    r = cli("ir-diff", str(ref_bc), str(text))
    assert r.returncode == 0 and r.stdout.startswith("Tile IR diff: PASS\n"), r.stdout + r.stderr
    r = cli("ir-diff", str(text), str(mut_bc), "--json")
    assert r.returncode == 1
    assert any(f["check"] == "memory.padding" for g in json.loads(r.stdout)["groups"] for f in g["findings"])


@pytest.mark.parametrize("make, expect", [
    (lambda d: (d / "missing.tileir", RUST / "matmul_f16.ref.tileir"), "missing.tileir: no such file"),
    (lambda d: (d, RUST / "matmul_f16.ref.tileir"), "is a directory"),
    (lambda d: (RUST / "matmul_f16.ref.tileir", _write(d / "bad.tileir", "entry @k() {\n  %x = ; \n}\n")),
     "bad.tileir:2:8: malformed Tile IR"),
    (lambda d: (RUST / "matmul_f16.ref.tileir", _write(d / "bin.tileir", b"\xff\xfe\x00garbage")),
     "not UTF-8"),
])
def test_bad_input_is_one_line_and_exit_2(cli, tmp_path, make, expect):
    a, b = make(tmp_path)
    r = cli("ir-diff", str(a), str(b))
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("tileport: error: ")
    assert expect in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_disassembler_is_exit_2(cli, tmp_path):
    cfg = tmp_path / "tileport.toml"
    cfg.write_text('[toolchain]\ntileirdisasm = "/nonexistent/tileirdisasm"\n')
    bc = _write(tmp_path / "k.tileirbc", b"\x7fTileIR\x00\x0d\x04")
    r = cli("--config", str(cfg), "ir-diff", str(bc), str(RUST / "matmul_f16.ref.tileir"))
    assert r.returncode == 2
    assert "tileirdisasm" in r.stderr and r.stderr.count("\n") == 1


def _write(path: Path, data: str | bytes) -> Path:
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return path


@needs_disasm
def test_target_judges_hints_and_comes_from_the_reference_path(cli, tmp_path):
    from ir_kernels import pairs as P
    from ir_kernels.build import compile_text

    # the reference applies occupancy 2 on every target, the port only on sm_90
    for target in ("sm_90", "sm_100"):
        (tmp_path / target).mkdir()
        (tmp_path / target / "ref.tileir").write_text(compile_text(P.copy_occ_default, P.COPY_SIG))
    port = tmp_path / "port.tileir"
    port.write_text(compile_text(P.copy_occ_sm90, P.COPY_SIG))
    r = cli("ir-diff", str(tmp_path / "sm_90" / "ref.tileir"), str(port), "--json")
    assert r.returncode == 0, r.stdout
    assert json.loads(r.stdout)["target"] == "sm_90"
    r = cli("ir-diff", str(tmp_path / "sm_100" / "ref.tileir"), str(port))
    assert r.returncode == 1 and "ERROR hints.occupancy" in r.stdout and "on sm_100" in r.stdout
    # an explicit --target wins over the path
    r = cli("ir-diff", str(tmp_path / "sm_100" / "ref.tileir"), str(port), "--target", "sm_90")
    assert r.returncode == 0, r.stdout


def test_bad_target_is_one_line_and_exit_2(cli):
    f = RUST / "matmul_f16.ref.tileir"
    r = cli("ir-diff", str(f), str(f), "--target", "hopper")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "sm_90" in r.stderr and "Traceback" not in r.stderr
