"""The IR gate on port pairs in the shapes seen on real ports (tests/ir_kernels/pairs.py).

Every reference has a port written two ways and both are checked against the same reference: the
equivalent port must not fail (what differs is a note, or a warning naming the condition it
relies on), the really different port must fail under the category that names the difference.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ir_kernels import pairs as P
from ir_kernels.build import compile_text, tileirdisasm
from ir_kernels.kernels import matmul, matmul_sig
from tileport.validators.tileir.diff import Consequence, Severity, Verdict, diff_texts

pytestmark = pytest.mark.skipif(tileirdisasm() is None, reason="tileirdisasm not installed")

RUST = Path(__file__).resolve().parents[2] / "ir_kernels" / "rust"
_cache: dict[tuple, str] = {}


def ir(kernel, sig) -> str:
    key = (id(kernel), repr(sig))
    if key not in _cache:
        _cache[key] = compile_text(kernel, sig)
    return _cache[key]


def errors(rep) -> list[tuple[str, str]]:
    return [(f.check, f.message) for f in rep.findings if f.severity == Severity.ERROR]


def passes(rep) -> bool:
    return rep.verdict in (Verdict.PASS, Verdict.PASS_WITH_NOTES)


def mentions(rep, *words: str, severity: Severity | None = None) -> bool:
    return any(all(w in f.message for w in words) for f in rep.findings
               if severity is None or f.severity == severity)


# --- integer forms --------------------------------------------------------------------------------


def test_manual_ceil_division_and_if_clamp_are_equivalent_to_cdiv_and_min():
    rep = diff_texts(ir(P.swizzle_copy, P.SWIZZLE_SIG), ir(P.swizzle_copy_manual_cdiv, P.SWIZZLE_SIG))
    assert passes(rep), errors(rep)
    # what differs is named, both forms, as a note: the operands are known to be non-negative
    assert mentions(rep, "rounding<positive_inf>", severity=Severity.NOTE), rep.findings
    assert mentions(rep, "mini", "if", severity=Severity.NOTE), rep.findings


def test_cutile_rs_truncating_division_remi_and_if_clamp_pass():
    # the cutile-rs port (a real build of rust/src/intforms) writes (m + 255) / 256, bid % gsm, an if/else clamp;
    # it takes its arrays output first
    port = (RUST / "intforms_swizzle_copy.rust.tileir").read_text()
    rep = diff_texts(ir(P.swizzle_copy, P.SWIZZLE_SIG), port)
    assert passes(rep), errors(rep)
    assert mentions(rep, "rounding<positive_inf>")
    # bare remi equals Python's floor-mod only for a positive divisor, which the IR cannot prove for
    # min(num_m - first, 8): said, as a warning, never silently
    rem = [f for f in rep.findings if "remi" in f.message]
    assert rem and rem[0].severity == Severity.WARNING and "negative" in rem[0].message


def test_tile_count_rounded_down_fails_both_in_python_and_in_cutile_rs():
    ref = ir(P.swizzle_copy, P.SWIZZLE_SIG)
    for port in (ir(P.swizzle_copy_floor_count, P.SWIZZLE_SIG),
                 (RUST / "intforms_swizzle_copy_floor.rust.tileir").read_text()):
        rep = diff_texts(ref, port)
        assert rep.verdict == Verdict.FAIL_FIXABLE
        assert any("divi" in m for _, m in errors(rep)), rep.findings


def test_a_floor_mod_whose_fix_up_test_is_inverted_is_not_floor_mod():
    # cutile-compiler 0.5.0 compiles `constant(false)` as true: a port's fix-up `(r < 0) ^ (b < 0)` with the
    # constant divisor's sign spelled that way is always taken for r != 0 (10-persistent-scheduling's GEMM on an
    # H100 stored only its first tile column); the same IR with that one constant flipped must fail
    ref = ir(P.group_walk, P.SWIZZLE_SIG)
    assert re.search(r"xori %\w+, %false", ref), ref
    assert passes(diff_texts(ref, ref))
    flipped = ref.replace("constant <i1: false>", "constant <i1: true>")
    rep = diff_texts(ref, flipped)
    assert rep.verdict == Verdict.FAIL_FIXABLE, rep.findings
    # the reference's floor-mod against the port's select, which is no longer taken for one
    assert any("floor-mod(bid(x), 8)" in m and "select(" in m for _, m in errors(rep)), errors(rep)


def test_clamp_picking_the_larger_value_fails():
    rep = diff_texts(ir(P.swizzle_copy, P.SWIZZLE_SIG), ir(P.swizzle_copy_max_clamp, P.SWIZZLE_SIG))
    assert rep.verdict == Verdict.FAIL_FIXABLE, rep.findings


# --- compares -------------------------------------------------------------------------------------


def test_unsigned_compare_of_non_negative_values_and_zero_plus_x_pass():
    rep = diff_texts(ir(P.masked_copy, P.MASKED_SIG), ir(P.masked_copy_unsigned, P.MASKED_SIG))
    assert passes(rep), errors(rep)
    assert not rep.checks(Severity.WARNING)
    assert mentions(rep, "unsigned", severity=Severity.NOTE)


@pytest.mark.parametrize("port", [P.masked_copy_less_equal, P.masked_copy_shifted])
def test_a_really_different_compare_fails(port):
    rep = diff_texts(ir(P.masked_copy, P.MASKED_SIG), ir(port, P.MASKED_SIG))
    assert rep.verdict == Verdict.FAIL_FIXABLE
    assert any("cmpi" in m for _, m in errors(rep)), rep.findings


# --- padding --------------------------------------------------------------------------------------


def test_zero_padding_where_the_reference_leaves_padding_undefined_is_a_note():
    rep = diff_texts(ir(P.row_copy_unpadded, P.ROW_COPY_SIG), ir(P.row_copy_zero_padded, P.ROW_COPY_SIG))
    assert passes(rep), errors(rep)
    f = next(f for f in rep.findings if f.check == "memory.padding")
    assert f.severity == Severity.NOTE and (f.ref, f.port) == ("none", "zero")


def test_undefined_padding_where_the_reference_pads_with_zero_fails():
    rep = diff_texts(ir(P.row_copy_zero_padded, P.ROW_COPY_SIG), ir(P.row_copy_unpadded, P.ROW_COPY_SIG))
    assert rep.verdict == Verdict.FAIL_FIXABLE
    assert "memory.padding" in rep.checks(Severity.ERROR)


# --- hints per target -----------------------------------------------------------------------------


def test_default_hint_equals_the_same_hint_named_for_the_target():
    ref, port = ir(P.copy_occ_default, P.COPY_SIG), ir(P.copy_occ_sm90, P.COPY_SIG)
    assert "default = {occupancy = 2}" in ref and "sm_90 = {occupancy = 2}" in port
    rep = diff_texts(ref, port, target="sm_90")
    assert rep.verdict == Verdict.PASS, rep.findings
    # on sm_100 the reference still applies occupancy 2 and the port does not
    rep = diff_texts(ref, port, target="sm_100")
    assert rep.verdict == Verdict.FAIL_FIXABLE
    f = next(f for f in rep.findings if f.check == "hints.occupancy")
    assert f.severity == Severity.ERROR and "sm_100" in f.message and (f.ref, f.port) == ("2", "unset")


def test_sm100_only_hint_is_judged_on_sm100_only():
    ref, port = ir(P.copy_occ_sm100, P.COPY_SIG), ir(P.copy_plain, P.COPY_SIG)
    rep = diff_texts(ref, port, target="sm_90")
    assert not rep.checks(Severity.ERROR) and not rep.checks(Severity.WARNING), rep.findings
    rep = diff_texts(ref, port, target="sm_100")
    assert "hints.occupancy" in rep.checks(Severity.ERROR)
    # no target given: every target either side names is judged
    rep = diff_texts(ref, port)
    f = next(f for f in rep.findings if f.check == "hints.occupancy")
    assert f.severity == Severity.ERROR and "sm_100" in f.message


def test_op_hint_judged_by_its_effective_value():
    ref = ir(P.copy_latency, P.COPY_SIG)
    assert "<default = {latency = 3}>" in ref
    # cutile-rs names the target where cuTile Python says `default`
    port = ref.replace("<default = {latency = 3}>", "<sm_90 = {latency = 3}>")
    rep = diff_texts(ref, port, target="sm_90")
    assert rep.verdict == Verdict.PASS, rep.findings
    rep = diff_texts(ref, port, target="sm_100")
    f = next(f for f in rep.findings if f.check == "hints.latency")
    assert f.severity == Severity.WARNING and "sm_100" in f.message and f.consequence == Consequence.SPEED


def test_occupancy_hint_the_port_drops_still_fails():
    rep = diff_texts(ir(P.copy_occ_default, P.COPY_SIG), ir(P.copy_plain, P.COPY_SIG), target="sm_90")
    assert rep.verdict == Verdict.FAIL_FIXABLE and "hints.occupancy" in rep.checks(Severity.ERROR)


# --- scalar parameters by role --------------------------------------------------------------------


def test_scalar_parameter_in_another_position_is_paired_by_role():
    rep = diff_texts(ir(P.gather_scaled, P.GATHER_SIG), ir(P.gather_scaled_n_first, P.GATHER_SIG_N_FIRST))
    assert passes(rep), errors(rep)
    assert not rep.checks(Severity.WARNING), rep.findings


def test_dropped_scalar_bound_fails_under_memory_mask_and_says_which_condition():
    rep = diff_texts(ir(P.gather_scaled, P.GATHER_SIG),
                     ir(P.gather_scaled_n_first_unmasked, P.GATHER_SIG_N_FIRST))
    assert rep.verdict == Verdict.FAIL_FIXABLE
    f = next(f for f in rep.findings if f.check == "memory.mask")
    assert f.severity == Severity.ERROR
    # names the condition the port lost, not only a count
    assert "cmpi less_than" in f.message and "scalar" in f.message


def test_gather_reading_other_elements_fails_naming_both_addresses():
    rep = diff_texts(ir(P.gather_scaled, P.GATHER_SIG), ir(P.gather_scaled_shifted, P.GATHER_SIG))
    assert rep.verdict == Verdict.FAIL_FIXABLE
    f = next(f for f in rep.findings if f.check == "memory.address")
    assert f.severity == Severity.ERROR
    assert f.ref == "256*bid(x) + iota()" and f.port == "256*bid(x) + iota() + 1"


# --- specialised vs general -----------------------------------------------------------------------


def test_trip_count_computed_at_run_time_where_the_reference_folded_it_is_a_note():
    rep = diff_texts(ir(P.row_sum_const_k, P.ROW_SUM_SIG), ir(P.row_sum_runtime_k, P.ROW_SUM_SIG))
    assert passes(rep), errors(rep)
    assert mentions(rep, "16", severity=Severity.NOTE)


def test_mask_bound_the_reference_folded_and_the_port_passes_is_a_host_warning():
    rep = diff_texts(ir(P.gather_const_n, P.GATHER_CONST_SIG), ir(P.gather_runtime_n, P.GATHER_SIG))
    assert passes(rep), errors(rep)
    f = next(f for f in rep.findings if f.check == "memory.mask_bound")
    assert f.severity == Severity.WARNING and "scalar i32 #0 = 1000" in f.message
    rep = diff_texts(ir(P.gather_const_n, P.GATHER_CONST_SIG), ir(P.gather_runtime_n_le, P.GATHER_SIG))
    assert rep.verdict == Verdict.FAIL_FIXABLE and "memory.mask" in rep.checks(Severity.ERROR)


def test_trip_count_folded_to_a_constant_where_the_reference_computes_it_fails():
    rep = diff_texts(ir(P.row_sum_runtime_k, P.ROW_SUM_SIG), ir(P.row_sum_const_k, P.ROW_SUM_SIG))
    assert rep.verdict == Verdict.FAIL_FIXABLE
    assert "loops.bounds" in rep.checks(Severity.ERROR)


# --- a real difference in memory traffic ------------------------------------------------------------


def test_four_loads_per_k_step_where_the_reference_issues_two_fails():
    rep = diff_texts(ir(matmul, matmul_sig()), ir(P.matmul_split_a, matmul_sig()))
    assert rep.verdict == Verdict.FAIL_FIXABLE
    assert "memory" in rep.categories(Severity.ERROR)


# --- pairing by role ------------------------------------------------------------------------------


def test_loop_bound_constants_pair_by_role():
    rep = diff_texts(ir(P.two_loops, P.ROW_SUM_SIG), ir(P.two_loops_other_bounds, P.ROW_SUM_SIG))
    assert rep.verdict == Verdict.FAIL_FIXABLE
    assert sorted((f.check, f.ref, f.port) for f in rep.findings if f.severity == Severity.ERROR) == [
        ("loops.bounds", "0", "1"), ("loops.bounds", "2", "3")]
    # the side-by-side view pairs the second loop's step 2 with the port's step 3, not with another loop's bound
    const = re.compile(r"= constant <([^>]*)>")
    pairs = {(const.search(r.ref_text).group(1), const.search(r.port_text).group(1)) for r in rep.rows
             if r.ref_text and r.port_text and const.search(r.ref_text) and const.search(r.port_text)}
    assert ("i32: 2", "i32: 3") in pairs
    assert all(a.split(":")[0] == b.split(":")[0] for a, b in pairs)  # never a constant of another type


# --- a raw-pointer cutile-rs port (rust/src/rowptr, built with build-rust) -----------------------------


def test_raw_pointer_port_with_plain_scalar_bounds_passes_with_host_warnings():
    rep = diff_texts(ir(P.row_double, P.ROW_DOUBLE_SIG), (RUST / "rowptr_row_double.rust.tileir").read_text())
    assert passes(rep), errors(rep)
    # the reference's shape/stride facts are not paired with the port's n_rows / n_cols / row strides
    assert "assumptions.div_by" not in rep.checks()
    bound = [f for f in rep.findings if f.check == "memory.mask_bound"]
    assert bound and all(f.severity == Severity.WARNING for f in bound)
    assert "shape0(array #0)" in bound[0].message and "scalar i32 #0" in bound[0].message
    # rows are addressed by the port's row-stride scalar where the reference uses the array's stride
    strides = [f for f in rep.findings if f.check == "memory.address_stride"]
    assert strides and all(f.severity == Severity.WARNING and "stride0(array #" in f.message for f in strides)
    assert {f.consequence for f in strides + bound} == {Consequence.HOST}
    # the port leaves masked-off lanes undefined where the reference pads with 0, and never stores them
    f = next(f for f in rep.findings if f.check == "memory.padding")
    assert f.severity == Severity.NOTE


def test_raw_pointer_port_without_the_row_bound_fails_naming_it():
    rep = diff_texts(ir(P.row_double, P.ROW_DOUBLE_SIG),
                     (RUST / "rowptr_row_double_cols_only.rust.tileir").read_text())
    assert rep.verdict == Verdict.FAIL_FIXABLE
    masks = [f for f in rep.findings if f.check == "memory.mask"]
    assert masks and all(f.severity == Severity.ERROR for f in masks)
    assert "lacks" in masks[0].message and "bid(x)" in masks[0].message and "shape0(array #0)" in masks[0].message
    assert masks[0].consequence == Consequence.VALUES


def test_raw_pointer_port_storing_under_the_outputs_own_bounds_warns_about_its_undefined_padding():
    # the port loads without padding and stores under out_rows/out_cols where it loaded under n_rows/n_cols: the
    # undefined lanes stay unstored only when the host passes equal shapes
    rep = diff_texts(ir(P.row_double, P.ROW_DOUBLE_SIG),
                     (RUST / "rowptr_row_double_out_bounds.rust.tileir").read_text())
    assert passes(rep), errors(rep)
    f = next(f for f in rep.findings if f.check == "memory.padding_host")
    assert f.severity == Severity.WARNING and f.consequence == Consequence.HOST
    assert "memory.padding" not in rep.checks()


# --- a reference specialised where the port is general --------------------------------------------------


def test_value_the_reference_folded_and_the_port_computes_from_a_parameter_is_a_host_warning():
    rep = diff_texts(ir(P.grouped_rows_const, P.GROUPED_CONST_SIG), ir(P.grouped_rows_param, P.GROUPED_PARAM_SIG))
    assert passes(rep), errors(rep)
    f = next(f for f in rep.findings if f.check == "structure.specialised")
    assert f.severity == Severity.WARNING and f.consequence == Consequence.HOST
    assert f.ref == "8" and "scalar i32 #0" in f.port


def test_specialised_reference_still_catches_a_different_computation():
    rep = diff_texts(ir(P.grouped_rows_const, P.GROUPED_CONST_SIG), ir(P.grouped_rows_param_div, P.GROUPED_PARAM_SIG))
    assert rep.verdict == Verdict.FAIL_FIXABLE, rep.findings


def test_a_scheduling_hint_only_the_port_sets_is_a_speed_warning():
    rep = diff_texts(ir(P.copy_plain, P.COPY_SIG), ir(P.copy_occ_default, P.COPY_SIG), target="sm_90")
    f = next(f for f in rep.findings if f.check == "hints.occupancy")
    assert f.severity == Severity.WARNING and f.consequence == Consequence.SPEED and (f.ref, f.port) == ("unset", "2")
    assert passes(rep)


def test_values_computed_from_a_load_the_port_pads_more_still_pair():
    rep = diff_texts(ir(P.count_from_memory, P.COUNT_SIG), ir(P.count_from_memory_zero_padded, P.COUNT_SIG))
    assert passes(rep), errors(rep)
    assert "memory.padding" in rep.checks(Severity.NOTE)
    rep = diff_texts(ir(P.count_from_memory, P.COUNT_SIG), ir(P.count_from_memory_plus_one, P.COUNT_SIG))
    assert rep.verdict == Verdict.FAIL_FIXABLE and "loops.bounds" in rep.checks(Severity.ERROR)
