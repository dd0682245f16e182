"""Kernel signatures as cuda-tile's JIT builds them, for exporting without a GPU.

Imported only in the child process (it needs `cuda.tile`). `jit_array_constraint` follows the
launcher's specialisation rules (cuda-tile 1.7, `compute_array_specialization_bits` and
`parse_array_constraint` in its C++ extension) for an array with a given shape, strides and
base address:

* base address divisible by 16 bytes  -> base_addr_divisible_by=16 (else 1);
* a stride of exactly 1               -> stride_constant 1 for that axis;
* a stride that is a multiple of 16 bytes -> stride_divisible_by = 16 bytes in elements;
* an extent that is a multiple of 16  -> shape_divisible_by=16;
* only the first 5 axes (TMA's limit) are specialised; strides >= 0 (stride_lower_bound_incl=0);
* non-overlapping elements -> may_alias_internally=False; no alias groups (no argument aliases).

`ordinary_array_constraint` applies those rules to the array every reference run uses: a
contiguous tensor at a 16-byte aligned address whose extents are all multiples of 16. The
analysis records this assumption, because it decides TMA (view) loads and `assume div_by<16>`.
"""

from __future__ import annotations

from typing import Any, Sequence

import cuda.tile as ct
from cuda.tile.compilation import (ArrayConstraint, CallingConvention, ConstantConstraint, KernelSignature,
                                   ScalarConstraint)

DIVISOR_16 = 16
TMA_MAX_NDIM = 5
ORDINARY_EXTENT = 16  # any multiple of 16 gives the same constraint

ASSUMPTION = ("arrays: contiguous (last stride 1), 16-byte aligned base, every extent a multiple of 16, "
              "no aliasing between arguments; scalars: Python int -> int32, float -> float32, bool -> bool_ "
              "(what the cuda-tile 1.7 JIT builds for such torch tensors)")


def dtype(name: str) -> ct.DType:
    return getattr(ct, name)


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def jit_array_constraint(dt: ct.DType, shape: Sequence[int], strides: Sequence[int] | None = None, *,
                         base_addr: int = 0, index_dtype: ct.DType = ct.int32) -> ArrayConstraint:
    """The ArrayConstraint the JIT derives from one concrete array (strides in elements)."""
    ndim = len(shape)
    strides = tuple(strides) if strides is not None else contiguous_strides(shape)
    bits = dt.bitwidth
    stride_unit = (DIVISOR_16 * 8) // bits if (DIVISOR_16 * 8) % bits == 0 else 1
    stride_constant: list[int | None] = [None] * ndim
    stride_div = [1] * ndim
    shape_div = [1] * ndim
    if ndim <= TMA_MAX_NDIM:
        for i, (extent, stride) in enumerate(zip(shape, strides)):
            stride_bits, extent_bits = stride * bits, extent * bits
            if stride_bits % 8 == 0 and (stride_bits // 8) % DIVISOR_16 == 0:
                stride_div[i] = stride_unit
            if stride == 1:
                stride_constant[i] = 1
            if extent_bits % 8 == 0 and extent % DIVISOR_16 == 0:
                shape_div[i] = DIVISOR_16
    # Elements are disjoint when, sorted by stride, each stride covers the previous axis fully.
    pairs = sorted(zip(strides, shape))
    disjoint = ndim == 0 or pairs[0][0] > 0
    for (s0, e0), (s1, _) in zip(pairs, pairs[1:]):
        disjoint = disjoint and s1 > 0 and s1 >= s0 * e0
    return ArrayConstraint(
        dt, ndim, index_dtype=index_dtype, stride_lower_bound_incl=0, alias_groups=(),
        may_alias_internally=not disjoint, stride_constant=tuple(stride_constant), shape_constant=None,
        stride_divisible_by=tuple(stride_div), shape_divisible_by=tuple(shape_div),
        base_addr_divisible_by=DIVISOR_16 if base_addr % DIVISOR_16 == 0 else 1)


def ordinary_array_constraint(dt: ct.DType, ndim: int, index_dtype: ct.DType = ct.int32) -> ArrayConstraint:
    return jit_array_constraint(dt, (ORDINARY_EXTENT,) * ndim, base_addr=256, index_dtype=index_dtype)


def build_signature(params: list[dict[str, Any]], param_dtypes: dict[str, str],
                    constants: dict[str, Any], function_name: str) -> KernelSignature:
    """params: ParamInfo dicts in order; constants: the variant's values."""
    cons: list[Any] = []
    for p in params:
        if p["kind"] == "constant":
            cons.append(ConstantConstraint(constants[p["name"]]))
        elif p["kind"] == "array":
            cons.append(ordinary_array_constraint(dtype(param_dtypes[p["name"]]), p["ndim"],
                                                  dtype(p.get("index_dtype") or "int32")))
        else:
            cons.append(ScalarConstraint(dtype(param_dtypes[p["name"]])))
    sig = KernelSignature(cons, CallingConvention.cutile_python_v2())
    return sig.with_mangled_symbol(function_name)


def describe(c: Any) -> dict[str, Any]:
    """A JSON-able description of one parameter constraint."""
    if isinstance(c, ArrayConstraint):
        return {"kind": "array", "dtype": c.dtype.name, "ndim": c.ndim, "index_dtype": c.index_dtype.name,
                "stride_constant": list(c.stride_constant), "stride_divisible_by": list(c.stride_divisible_by),
                "shape_constant": list(c.shape_constant), "shape_divisible_by": list(c.shape_divisible_by),
                "base_addr_divisible_by": c.base_addr_divisible_by, "stride_lower_bound_incl":
                list(c.stride_lower_bound_incl), "may_alias_internally": c.may_alias_internally,
                "alias_groups": list(c.alias_groups)}
    if isinstance(c, ScalarConstraint):
        return {"kind": "scalar", "dtype": c.dtype.name}
    if isinstance(c, ConstantConstraint):
        return {"kind": "constant", "value": c.value}
    return {"kind": type(c).__name__}
