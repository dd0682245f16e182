"""Parsers of compiler output, on text captured from real runs (fast; the slow tests drive the real tools)."""

from __future__ import annotations

import json

from tileport.validators.rust.diagnostics import (DiagnosticSource, cargo_failure, parse_cargo_json, parse_cutile_text,
                                       parse_ir_dump_output, parse_tileiras, render_text)

# tileiras 13.4 on a bytecode whose tile is tile<1000xf32> (exit status 3), verbatim.
TILEIRAS_CASCADE = """\
error: error at offset 13: tile shape dimensions must have power of two length but got [1000]
error: error at offset 93: failed to get result type 0 for MakePartitionViewOp
error: error at offset 1387: failed to parse function body for function 'add_entry'
error: error at offset 1387: failed to create function from bytecode
error: input does not correspond to Tile IR bytecode
"""


def test_tileiras_cascade_becomes_one_diagnostic_led_by_the_root_cause():
    [d] = parse_tileiras(TILEIRAS_CASCADE, 3, entry="add", variant="b1000", target="sm_90")
    assert d.source == DiagnosticSource.TILEIRAS and d.code == "TILEIRAS-3"
    assert d.message == "error at offset 13: tile shape dimensions must have power of two length but got [1000]"
    assert d.notes[-1].startswith("help: Tile IR tile dimensions must be powers of two")
    assert "failed to read" not in d.message and len(d.notes) == 5
    assert (d.entry, d.variant, d.target) == ("add", "b1000", "sm_90")


def test_tileiras_located_errors_keep_their_place_and_a_silent_failure_is_still_an_error(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "kernel.rs").write_text("a\nb\n        let c = mma(a, b, acc);\n")
    [d] = parse_tileiras('src/kernel.rs:3:17: error: unsupported mma shape\n', 1, tmp_path)
    assert (d.file, d.line, d.col, d.snippet.strip()) == ("src/kernel.rs", 3, 17, "let c = mma(a, b, acc);")
    [silent] = parse_tileiras("", 139)
    assert silent.is_error and silent.code == "TILEIRAS-139"


def test_cutile_text_errors_get_one_based_columns(tmp_path):
    (tmp_path / "src").mkdir()
    src = "x\n" * 10 + "        let p: i32 = program_id(0).pow(2u32);\n"
    (tmp_path / "src" / "kernel.rs").write_text(src)
    text = "error: method `pow` not found for receiver type `i32`\n  --> src/kernel.rs:11:35\n"
    [d] = parse_cutile_text(text, tmp_path)
    assert (d.code, d.line, d.col) == ("JIT", 11, 36)
    assert d.message == "method `pow` not found for receiver type `i32`"
    assert d.snippet[d.col - 1:].startswith("pow(")


def test_rustc_error_in_a_macro_expansion_points_at_the_users_line():
    span_in_kernel = {"file_name": "src/kernel.rs", "line_start": 13, "column_start": 40, "is_primary": True,
                      "label": "expected `Tile_2<f32, B, 2>`, found `Tile_1<f32, B>`", "expansion": None,
                      "text": [{"text": "        let w: Tile<f32, { [B, 2] }> = tx + ty;"}]}
    expansion_span = {"file_name": "/root/.cargo/registry/src/x/cutile-0.5.0/src/_core.rs", "line_start": 325,
                      "column_start": 1, "is_primary": False, "label": "expected due to this",
                      "expansion": {"span": {"file_name": "src/kernel.rs", "line_start": 1, "column_start": 1,
                                             "expansion": None}}}
    msg = {"reason": "compiler-message", "package_id": "path+file:///c#tileport-port-1@0.1.0",
           "message": {"level": "error", "code": {"code": "E0308"}, "message": "mismatched types",
                       "spans": [expansion_span, span_in_kernel], "children": [], "rendered": "error[E0308]: ..."}}
    summary = {"reason": "compiler-message", "message": {"level": "error", "code": None,
                                                          "message": "aborting due to 1 previous error", "spans": []}}
    artifact = {"reason": "compiler-artifact", "target": {"name": "tp-irdump-1", "kind": ["bin"]},
                "executable": "/t/debug/tp-irdump-1", "fresh": False}
    stdout = "\n".join(json.dumps(m) for m in (msg, msg, summary, artifact)) + "\nnot json\n"
    diags, artifacts = parse_cargo_json(stdout)
    assert len(diags) == 1  # duplicates (lib + bin) and summaries dropped
    [d] = diags
    assert (d.code, d.file, d.line, d.col) == ("E0308", "src/kernel.rs", 13, 40)
    assert d.snippet.strip().startswith("let w")
    assert any("expected due to this" in n and "src/kernel.rs:1:1" in n for n in d.notes)
    assert artifacts[0]["executable"] == "/t/debug/tp-irdump-1"
    assert "error[E0308]" in render_text(diags)


def test_cargo_failure_without_rustc_output_explains_an_offline_cache_miss():
    stderr = ("error: no matching package named `cutile` found\nlocation searched: registry `crates-io`\n"
              "note: offline mode (via `--offline`) can sometimes cause surprising resolution failures\n")
    d = cargo_failure(stderr, 101)
    assert d.code == "TP-DEPS-MISSING" and d.message == "no matching package named `cutile` found"
    assert any("--fetch" in n for n in d.notes)


def test_ir_dump_lines_are_found_among_other_output():
    out = ('GENERATED ENTRY POINT: m::f\nfn f() {}\n'
           'TILEPORT-JOB {"entry":"f","variant":"v","target":"sm_90","seconds":0.1,"ok":true,'
           '"bytecode":"/a/f__v__sm_90.tileirbc","cutile_ir":"/a/f__v__sm_90.cutile.mlir"}\n')
    [job] = parse_ir_dump_output(out)
    assert job["ok"] is True and job["bytecode"].endswith(".tileirbc")


def test_build_result_maps_to_stage_b_verdicts():
    from tileport.pipeline.stages.write_kernel import result_from_build
    from tileport.validators.rust.build import RustBuildResult
    from tileport.validators.rust.diagnostics import Diagnostic

    def result(**kw):
        return RustBuildResult(crate="/c", **kw)

    assert result_from_build(result(ok=True, stage="done")).verdict == "COMPILED"
    rustc = Diagnostic(source=DiagnosticSource.RUSTC, level="error", code="E0308", message="mismatched types",
                       file="src/kernel.rs", line=3, col=5)
    failed = result_from_build(result(ok=False, stage="cargo", diagnostics=[rustc]), attempt=2)
    assert (failed.verdict, failed.fail_class.value, failed.attempt) == ("FAIL_COMPILE", "kernel", 2)
    assert "src/kernel.rs:3:5" in failed.summary
    missing = Diagnostic(source=DiagnosticSource.TILEPORT, level="error", code="TP-DEPS-MISSING", message="x")
    blocked = result_from_build(result(ok=False, stage="cargo", diagnostics=[missing]))
    assert (blocked.verdict, blocked.fail_class.value) == ("BLOCKED", "env")
