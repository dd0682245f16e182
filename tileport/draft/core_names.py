"""The free functions `use cutile::core::*` brings into a generated kernel's value namespace (cutile 0.5.0,
`src/_core.rs`, `pub mod core`: every `pub fn` / `pub unsafe fn` at its top level). A kernel local named like one of
them would shadow it for the rest of its scope (`let num_tiles = ...;` then `num_tiles(&view, 1)` does not compile), so
`syntax.rust_name` renames such a local. `core_functions` reads them from the crate source;
tests/draft/test_core_names.py keeps this list equal to it."""

from __future__ import annotations

import re

CORE_FUNCTIONS = frozenset({
    "__pack_f4e2m1fnx2_tile", "__unpack_f4e2m1fnx2_tile", "absf", "absi", "addf", "addi", "addptr", "addptr_tile",
    "alloca", "andi", "assume_bounds", "assume_bounds_lower", "assume_bounds_raw", "assume_bounds_upper",
    "assume_div_by", "assume_div_by_every_along", "assume_div_by_raw", "assume_same_elements_1d",
    "assume_same_elements_2d", "assume_same_elements_3d", "assume_same_elements_4d", "assume_same_elements_raw",
    "atan2", "atomic_cas_tko", "atomic_red_view_raw", "atomic_rmw_tko", "bitcast", "broadcast", "broadcast_ptr",
    "broadcast_scalar", "cast_const", "cast_mut", "cast_tile_const", "cast_tile_mut", "cat", "ceil", "ceil_div",
    "check_bounded_partition_access", "check_bounded_partition_access3", "check_bounded_partition_access_mut",
    "check_bounded_partition_access_mut3", "check_partition_access", "check_partition_access_mut", "cmpf", "cmpi",
    "constant", "convert_scalar", "convert_tile", "coord", "coord2_as_array", "coord3_as_array", "cos", "cosh",
    "dim_from_i32", "dim_new", "dim_value", "divf", "divi", "eq_tile", "exp", "exp2", "exp_with_rounding", "exti",
    "extract", "floor", "fma", "fpowf", "fpowi", "ftof", "ftoi", "ftoi_saturating", "gdc_launch_dependents_tko",
    "gdc_wait_tko", "ge_tile", "get_global", "get_index_space_shape", "get_num_tile_blocks", "get_partition_token",
    "get_partition_token_mut", "get_shape_dim", "get_tensor_base", "get_tensor_shape", "get_tensor_shape_meta",
    "get_tensor_token", "get_tile_block_id", "gt_tile", "insert", "int_to_ptr", "iota", "itof", "join_tokens",
    "le_tile", "load_ptr_tko", "load_tensor", "load_tile", "load_tile_like", "load_tile_mut", "load_view_raw",
    "load_view_tko", "load_view_tko_bounded", "load_view_tko_mut", "log", "log2", "lt_tile",
    "make_mapped_partition_view", "make_nested_partition_view_mut", "make_partition_view",
    "make_partition_view_mut", "make_tensor_view", "max", "max_tile", "maxf", "maxi", "memory_fence_alias_tko",
    "min", "min_tile", "minf", "mini", "mma", "mmaf", "mmaf_scaled", "mmaf_with_fast_acc", "mmai", "mulf", "mulhii",
    "muli", "ne_tile", "negf", "negi", "new_token_unordered", "noti", "num_programs", "num_tiles", "ori", "pack",
    "partition_index_coords", "partition_with_bounds", "partition_with_bounds3", "partition_with_bounds_mut",
    "partition_with_bounds_mut3", "permute", "permute_array", "pointer_to_tile", "pow", "print_tko", "program_id",
    "ptr_to_int", "ptr_to_ptr", "ptr_with_attr_none", "reduce", "reduce_max", "reduce_min", "reduce_prod",
    "reduce_sum", "remf", "remi", "reshape", "reshape_ptr", "rsqrt", "scalar_to_tile", "scan", "scan_sum", "select",
    "set_tensor_token", "shli", "shri", "sin", "sinh", "sqrt", "store_ptr_tko", "store_tile", "store_view_raw",
    "store_view_tko_bounded", "store_view_tko_mapped_mut", "store_view_tko_mut", "subf", "subi",
    "swizzle_partition_index_2d", "tan", "tanh", "tanh_with_rounding", "tile_to_pointer", "tile_to_scalar",
    "true_div", "trunci", "unpack", "validate_partition_store", "xori"
})


def core_functions(core_rs: str) -> set[str]:
    """The names of the free functions of `pub mod core` in cutile's `_core.rs` text."""
    at = core_rs.index("\npub mod core {")
    return set(re.findall(r"^    pub (?:unsafe )?fn ([A-Za-z_][A-Za-z0-9_]*)", core_rs[at:], re.M))
