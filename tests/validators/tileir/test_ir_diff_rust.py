"""The diff on real cuTile Rust output.

`tests/ir_kernels/rust/*.rust.tileir` are cutile-rs 0.5 kernels (the ports under `ports/`,
built by `tileport build-rust`) disassembled with tileirdisasm 13.4; `*.ref.tileir` are the
references `tileport analyze` exported from `examples/`. Frozen, so these tests pin what the
diff says about genuine Rust compiler output: its extra `assume bounded`, duplicated block-id
ops, dead constants, bounds-check asserts and output-first parameter order are not failures,
while a port that addresses memory differently is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tileport.validators.tileir.diff import RowStatus, Severity, Verdict, diff_files

RUST = Path(__file__).resolve().parents[2] / "ir_kernels" / "rust"


def diff(name: str):
    return diff_files(RUST / f"{name}.ref.tileir", RUST / f"{name}.rust.tileir")


def test_matmul_port_passes_with_notes_on_what_rust_adds():
    rep = diff("matmul_f16")
    assert rep.verdict == Verdict.PASS_WITH_NOTES
    assert all(e.identical for e in rep.entries)
    assert not rep.checks(Severity.ERROR)
    notes = rep.checks(Severity.NOTE)
    assert {"assumptions.bounded", "benign.dead_code", "benign.cse"} <= notes
    # the port assumes 16-divisible strides where the reference assumes 8: flagged for a human
    warn = [f for f in rep.findings if f.severity == Severity.WARNING]
    assert warn and all(f.check == "assumptions.div_by" and "stride0" in f.message for f in warn)
    # every reference op has a partner; what only the port has is benign
    assert not [r for r in rep.rows if r.status in (RowStatus.REF_ONLY, RowStatus.PORT_ONLY, RowStatus.CHANGED)
                and "assume" not in (r.ref_text or r.port_text)]


def test_vector_add_port_with_output_first_is_mapped():
    rep = diff("vector_add_f32")
    assert rep.verdict == Verdict.PASS_WITH_NOTES
    order = [f for f in rep.findings if f.check == "entries.array_order"]
    assert order and "reference #2 = port #0" in order[0].message
    assert not rep.checks(Severity.ERROR) and not rep.checks(Severity.WARNING)


def test_softmax_port_store_index_depends_on_the_grid():
    rep = diff("softmax_f16")
    assert rep.verdict == Verdict.PASS_WITH_NOTES
    f = next(f for f in rep.findings if f.check == "memory.index_grid")
    assert f.severity == Severity.WARNING and "bid(y)" in f.message


def test_rms_norm_port_without_fma_and_with_bounds_checks():
    rep = diff("rms_norm_chunked_f16")
    assert rep.verdict == Verdict.PASS_WITH_NOTES, [(f.check, f.message) for f in rep.findings]
    assert "math.fma" in rep.checks(Severity.WARNING)
    assert "structure.runtime_check" in rep.checks(Severity.NOTE)


def test_silu_and_mul_port_that_reads_the_wrong_columns_fails():
    # the port reads the `up` half at column tile bid(y) + n/256 instead of a view sliced at n:
    # different whenever n is not a multiple of the tile (the example's shapes include n=1000)
    rep = diff("silu_and_mul_f16")
    assert rep.verdict == Verdict.FAIL_FIXABLE
    f = next(f for f in rep.findings if f.check == "memory.index")
    assert "divi" in f.port and f.ref == "bid(x), bid(y)"
    assert "assumptions.div_by" in rep.checks(Severity.ERROR)


@pytest.mark.parametrize("name", ["matmul_f16", "vector_add_f32", "softmax_f16", "rms_norm_chunked_f16",
                                  "silu_and_mul_f16", "rms_norm_slab_f16", "softmax_chunked_scaled_f16"])
def test_each_side_equals_itself(name):
    for side in ("ref", "rust"):
        p = RUST / f"{name}.{side}.tileir"
        assert diff_files(p, p).verdict == Verdict.PASS


@pytest.mark.parametrize("name,per_slab", [("rms_norm_slab_f16", "4"), ("softmax_chunked_scaled_f16", "16")])
def test_a_store_into_a_static_row_slab_pairs_with_the_reference_store_for_a_one_block_wide_grid(name, per_slab):
    # ports/rms_norm and ports/softmax store their chunks into the block's [1, N] output slab at [0, j]; cutile
    # offsets the slab by bid(y) * (N / TILE_N) tiles, the reference stores at [bid(x), j]: the same index exactly
    # when the grid is one block wide in y, which the host stage confirms (a warning, not an error)
    rep = diff(name)
    assert rep.verdict == Verdict.PASS_WITH_NOTES, [(f.check, f.message) for f in rep.findings]
    f = next(f for f in rep.findings if f.check == "memory.index_grid")
    assert f.severity == Severity.WARNING
    assert f.ref == "bid(x), for.index" and f.port == f"bid(x), addi(muli(bid(y), {per_slab}), for.index)"
    assert "memory.index" not in rep.checks(Severity.ERROR)


def test_a_slab_offset_on_a_block_id_the_reference_indexes_by_stays_an_error(tmp_path):
    # the same port with its slab offset taken from bid(x) (the row the reference stores to) instead of bid(y):
    # other columns for every row but the first, whatever the grid: an error, not a host warning
    src = (RUST / "rms_norm_slab_f16.rust.tileir").read_text()
    bad = src.replace("%7 = muli %blockId_y_65,", "%7 = muli %blockId_x_64,")
    assert bad != src
    (tmp_path / "bad.rust.tileir").write_text(bad)
    rep = diff_files(RUST / "rms_norm_slab_f16.ref.tileir", tmp_path / "bad.rust.tileir")
    assert rep.verdict == Verdict.FAIL_FIXABLE
    f = next(f for f in rep.findings if f.check == "memory.index")
    assert f.severity == Severity.ERROR and "muli(bid(x), 4)" in f.port


def test_slab_output_store_is_block_relative_and_depends_on_the_grid():
    # a draft's output stored in a loop at (row, j) is one [1, N] slab per block (cutile's nested partition), so the
    # port's store index is [bid(x), bid(y) + j]: the reference's [bid(x), j] when the grid is 1 along y
    rep = diff("softmax_chunked_slab_f16")
    assert rep.verdict == Verdict.PASS_WITH_NOTES, [(f.check, f.message) for f in rep.findings]
    f = next(f for f in rep.findings if f.check == "memory.index_grid" and "addi" in f.message)
    assert f.severity == Severity.WARNING and "bid(y)" in f.message and "for.index" in f.message


def test_slab_store_offset_by_something_other_than_a_block_id_fails(tmp_path):
    port = (RUST / "softmax_chunked_slab_f16.rust.tileir").read_text()
    assert "%12 = addi %blockId_y, %assume_45" in port
    bad = tmp_path / "bad.tileir"  # the same store at column tile 2j instead of bid(y) + j: other columns
    bad.write_text(port.replace("%12 = addi %blockId_y, %assume_45", "%12 = addi %assume_45, %assume_45"))
    rep = diff_files(RUST / "softmax_chunked_slab_f16.ref.tileir", bad)
    assert rep.verdict == Verdict.FAIL_FIXABLE
    assert "memory.index" in rep.checks(Severity.ERROR)
