"""Tile IR structural diff on real compiler output.

Every IR text here is produced by cuda-tile (`export_kernel` -> bytecode) and `tileirdisasm`
at test time: a rewrite of a kernel (renamed variables, reordered independent statements) must
PASS, and each class of translation fault must FAIL_FIXABLE under the category that names it.
"""

from __future__ import annotations

import re

import pytest

from ir_kernels.build import array, compile_text, signature, tileirdisasm
from ir_kernels.kernels import (
    MUTATIONS, REWRITES, SOFTMAX_SIG, SOFTMAX_SIG_UNALIGNED, STORE_LOAD_SIG, VEC_SIG, matmul, matmul_sig, softmax,
    store_then_load, vector_add, vector_add_out_first, revisiting_store, REVISIT_SIG,
)
from tileport.validators.tileir.diff import (
    IRDiffReport, RowStatus, Severity, Verdict, diff_texts,
)

pytestmark = pytest.mark.skipif(tileirdisasm() is None, reason="tileirdisasm not installed")

_cache: dict[tuple, str] = {}


def ir(kernel, sig, debug_info: bool = False) -> str:
    key = (kernel.__name__ if hasattr(kernel, "__name__") else id(kernel), repr(sig), debug_info)
    if key not in _cache:
        _cache[key] = compile_text(kernel, sig, debug_info=debug_info)
    return _cache[key]


def line(text: str, n: int | None) -> str:
    assert n is not None
    return text.splitlines()[n - 1]


# --- faithful rewrites --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REWRITES))
def test_rewrite_with_renamed_and_reordered_statements_passes(name):
    ref_k, ref_sig, port_k, port_sig = REWRITES[name]
    ref, port = ir(ref_k, ref_sig), ir(port_k, port_sig)
    # the rewrite really is printed differently: names and op order differ
    strip = lambda t: [re.sub(r"%[\w#.-]+", "%", l) for l in t.splitlines()[1:]]
    assert strip(ref) != strip(port)
    rep = diff_texts(ref, port)
    assert rep.verdict == Verdict.PASS, rep.findings
    assert rep.findings == []
    assert all(e.identical for e in rep.entries)
    assert {r.status for r in rep.rows} == {RowStatus.SAME}


def test_same_kernel_with_debug_info_passes_with_a_note():
    plain = ir(softmax, SOFTMAX_SIG)
    with_locs = ir(softmax, SOFTMAX_SIG, debug_info=True)
    assert "loc(" in with_locs
    rep = diff_texts(plain, with_locs)
    assert rep.verdict == Verdict.PASS_WITH_NOTES
    assert [f.check for f in rep.findings] == ["benign.debug_info"]


# --- one mutation per fault class -----------------------------------------------------------------

# what the line a finding points at must contain, per check (reference side, port side)
_POINTS_AT = {
    "reduction.axis": ("reduce", "reduce"),
    "memory.padding": ("load_", "load_"),
    "memory.mask": ("load_ptr_tko", "load_ptr_tko"),
    "memory.kind": ("load_view_tko", "load_ptr_tko"),
    "memory.dim_map": ("load_view_tko", "load_view_tko"),
    "memory.tile_shape": ("load_view_tko", "load_view_tko"),
    "assumptions.div_by": ("assume div_by<16>", None),
    "mma.accumulator": ("mmaf", "mmaf"),
    "math.rounding": ("exp", "exp"),
    "math.flush_to_zero": ("divf", "divf"),
    "math.function": ("exp", "exp2"),
    "loops.bounds": ("for", "for"),
    "conversions.count": ("ftof", None),
    "hints.occupancy": ("optimization_hints", "entry"),
    "structure.dataflow": ("subf", "subf"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutation_fails_under_its_category(name):
    ref_k, ref_sig, mut_k, mut_sig, category, check = MUTATIONS[name]
    ref, mut = ir(ref_k, ref_sig), ir(mut_k, mut_sig)
    rep = diff_texts(ref, mut)
    assert rep.verdict == Verdict.FAIL_FIXABLE
    assert rep.exit_code == 1
    assert category in rep.categories(Severity.ERROR), [(f.check, f.message) for f in rep.findings]
    hits = [f for f in rep.findings if f.check == check and f.severity == Severity.ERROR]
    assert hits, [(f.check, f.message) for f in rep.findings]
    # the finding points at the right op on each side
    want_ref, want_port = _POINTS_AT[check]
    f = hits[0]
    if want_ref:
        assert want_ref in line(ref, f.ref_line)
    if want_port:
        assert want_port in line(mut, f.port_line)
    # and the group it sits in is that category's, marked as an error
    group = next(g for g in rep.groups if g.category == category)
    assert group.severity == Severity.ERROR


@pytest.mark.parametrize("name", ["reduction_axis", "view_to_gather", "f16_accumulator"])
def test_mutation_is_found_in_both_directions(name):
    ref_k, ref_sig, mut_k, mut_sig, category, _ = MUTATIONS[name]
    rep = diff_texts(ir(mut_k, mut_sig), ir(ref_k, ref_sig))
    assert rep.verdict == Verdict.FAIL_FIXABLE
    assert category in rep.categories(Severity.ERROR)


def test_padding_added_where_the_reference_leaves_it_undefined_is_a_note():
    # the reverse of lost_padding: the port defines lanes the reference leaves undefined (at least as defined)
    ref_k, ref_sig, mut_k, mut_sig, _, _ = MUTATIONS["lost_padding"]
    rep = diff_texts(ir(mut_k, mut_sig), ir(ref_k, ref_sig))
    assert rep.verdict == Verdict.PASS_WITH_NOTES, [(f.check, f.message) for f in rep.findings]
    assert "memory.padding" in rep.checks(Severity.NOTE)


def test_finding_messages_name_both_values():
    ref_k, ref_sig, mut_k, mut_sig, _, _ = MUTATIONS["lost_padding"]
    rep = diff_texts(ir(ref_k, ref_sig), ir(mut_k, mut_sig))
    f = next(f for f in rep.findings if f.check == "memory.padding")
    assert (f.ref, f.port) == ("neg_inf", "none")
    assert "neg_inf" in f.message and "array #0" in f.message

    ref_k, ref_sig, mut_k, mut_sig, _, _ = MUTATIONS["reduction_axis"]
    rep = diff_texts(ir(ref_k, ref_sig), ir(mut_k, mut_sig))
    f = next(f for f in rep.findings if f.check == "reduction.axis")
    assert (f.ref, f.port) == ("1", "0")
    # the wrong axis is the only thing wrong: no other error is reported
    assert [g.check for g in rep.findings if g.severity == Severity.ERROR] == ["reduction.axis"]


def test_stronger_alignment_in_the_port_is_a_warning_not_a_failure():
    rep = diff_texts(ir(softmax, SOFTMAX_SIG_UNALIGNED), ir(softmax, SOFTMAX_SIG))
    assert rep.verdict == Verdict.PASS_WITH_NOTES
    assert rep.checks(Severity.WARNING) == {"assumptions.div_by"}
    assert not rep.checks(Severity.ERROR)


def test_a_loop_store_left_unordered_across_iterations_is_a_speed_warning_naming_the_fix():
    ref = ir(revisiting_store, REVISIT_SIG)
    m = re.search(r"store_view_tko weak [^\n]* token = (%iterArg\w*)", ref)
    assert m, ref  # the reference's store reads the token its loop carries
    entry_token = re.search(r"(%\w+) = make_token", ref).group(1)
    port = ref.replace(m.group(0), m.group(0).replace(m.group(1), entry_token))  # cutile 0.5's range-loop store
    rep = diff_texts(ref, port)
    f = next(f for f in rep.findings if f.check == "memory.loop_tokens")
    assert f.severity == Severity.WARNING and "make_partition_view_mut(.., tok)" in f.message
    assert not rep.checks(Severity.ERROR)
    assert "memory.loop_tokens" not in diff_texts(ref, ref).checks()


def test_missing_token_ordering_on_the_same_array_fails():
    ref = ir(store_then_load, STORE_LOAD_SIG)
    # the port reads y back without waiting for its store of y
    m = re.search(r"(load_view_tko weak %\w+\[%blockId_x\] token = )(%\d+)", ref.split("store_view_tko", 1)[1])
    assert m and m.group(2) != "%0"
    port = ref.replace(m.group(0), m.group(1) + "%0")
    rep = diff_texts(ref, port)
    assert rep.verdict == Verdict.FAIL_FIXABLE
    f = next(f for f in rep.findings if f.check == "memory.tokens")
    assert f.severity == Severity.ERROR and "array #1" in f.message


def test_port_declaring_arrays_in_another_order_is_mapped_and_noted():
    rep = diff_texts(ir(vector_add, VEC_SIG), ir(vector_add_out_first, VEC_SIG))
    assert rep.verdict == Verdict.PASS_WITH_NOTES, [(f.check, f.message) for f in rep.findings]
    f = next(f for f in rep.findings if f.check == "entries.array_order")
    assert "reference #0 = port #1" in f.message and "reference #2 = port #0" in f.message


def test_extra_assumes_and_dead_constants_from_a_port_are_benign():
    ref = ir(softmax, SOFTMAX_SIG)
    # what cutile-rs adds: `assume bounded` on block ids, unused constants, duplicated block-id ops
    port = ref.replace(
        "  %blockId_x, %blockId_y, %blockId_z = get_tile_block_id : tile<i32>\n",
        "  %bx, %by, %bz = get_tile_block_id : tile<i32>\n"
        "  %blockId_x = assume bounded<0, ?>, %bx : tile<i32>\n"
        "  %unused = constant <i32: 128> : tile<i32>\n"
        "  %bx2, %by2, %bz2 = get_tile_block_id : tile<i32>\n")
    assert port != ref
    rep = diff_texts(ref, port)
    assert rep.verdict == Verdict.PASS_WITH_NOTES
    assert {f.severity for f in rep.findings} == {Severity.NOTE}
    assert {"assumptions.bounded", "benign.dead_code"} <= rep.checks()
    assert all(e.identical for e in rep.entries)


# --- several entries ----------------------------------------------------------------------------


def test_variants_match_by_name_whatever_their_order():
    a = compile_text(matmul, [matmul_sig(), matmul_sig(64, 64, 32)])
    b = compile_text(matmul, [matmul_sig(64, 64, 32), matmul_sig()])
    rep = diff_texts(a, b)
    assert rep.verdict == Verdict.PASS
    assert [e.rule for e in rep.entries] == ["name", "name"]


def test_variants_with_other_names_match_by_position_with_a_note():
    def sig(tm, tn, tk, symbol):
        return signature(array(ct_f16(), 2), array(ct_f16(), 2), array(ct_f16(), 2), tm, tn, tk, symbol=symbol)

    a = compile_text(matmul, [matmul_sig(), matmul_sig(64, 64, 32)])
    b = compile_text(matmul, [sig(128, 128, 64, "port_big"), sig(64, 64, 32, "port_small")])
    rep = diff_texts(a, b)
    assert rep.verdict == Verdict.PASS_WITH_NOTES
    assert [(e.port, e.rule, e.identical) for e in rep.entries] == [("port_big", "position", True),
                                                                    ("port_small", "position", True)]
    assert rep.checks() == {"entries.position"}
    # variants in the wrong order are caught (tile shapes differ per position)
    swapped = compile_text(matmul, [sig(64, 64, 32, "port_small"), sig(128, 128, 64, "port_big")])
    assert diff_texts(a, swapped).verdict == Verdict.FAIL_FIXABLE


def test_missing_variant_fails():
    a = compile_text(matmul, [matmul_sig(), matmul_sig(64, 64, 32)])
    b = compile_text(matmul, [matmul_sig()])
    rep = diff_texts(a, b)
    assert rep.verdict == Verdict.FAIL_FIXABLE
    assert rep.checks(Severity.ERROR) == {"entries.missing"}


def ct_f16():
    import cuda.tile as ct

    return ct.float16


# --- the side-by-side view and JSON ------------------------------------------------------------


def test_side_by_side_rows_cover_every_op_once_and_mark_the_change():
    ref_k, ref_sig, mut_k, mut_sig, _, _ = MUTATIONS["lost_padding"]
    ref, mut = ir(ref_k, ref_sig), ir(mut_k, mut_sig)
    rep = diff_texts(ref, mut)
    ref_lines = [r.ref_line for r in rep.rows if r.ref_line is not None]
    port_lines = [r.port_line for r in rep.rows if r.port_line is not None]
    assert len(ref_lines) == len(set(ref_lines)) and len(port_lines) == len(set(port_lines))
    for r in rep.rows:
        if r.ref_line is not None:
            assert line(ref, r.ref_line).strip() == r.ref_text
        if r.port_line is not None:
            assert line(mut, r.port_line).strip() == r.port_text
    changed = [r for r in rep.rows if r.status == RowStatus.CHANGED and r.ref_text and "load_view_tko" in r.ref_text]
    assert changed and "padding_value = neg_inf" in changed[0].ref_text
    assert "neg_inf" not in changed[0].port_text
    # ops after the load compute the same thing on different data
    assert any(r.status == RowStatus.DOWNSTREAM and "exp" in (r.ref_text or "") for r in rep.rows)


def test_report_round_trips_through_json():
    ref_k, ref_sig, mut_k, mut_sig, _, _ = MUTATIONS["loop_bound"]
    rep = diff_texts(ir(ref_k, ref_sig), ir(mut_k, mut_sig))
    again = IRDiffReport.model_validate_json(rep.model_dump_json())
    assert again == rep
    assert again.verdict == Verdict.FAIL_FIXABLE and "loops.bounds" in again.checks()


def test_diff_is_deterministic():
    ref_k, ref_sig, mut_k, mut_sig, _, _ = MUTATIONS["dtype_conversion"]
    a = diff_texts(ir(ref_k, ref_sig), ir(mut_k, mut_sig)).model_dump_json()
    b = diff_texts(ir(ref_k, ref_sig), ir(mut_k, mut_sig)).model_dump_json()
    assert a == b
