"""Port pairs in the shapes seen on real ports: each reference kernel has a port written two ways,
one equivalent (the gate must not fail it) and one really different (the gate must fail it under
the category that names the difference). Both ports are checked against the same reference.

Written in cuTile Python where the language can express the port's form; the forms only cutile-rs
writes (truncating `/` for a ceil-division, bare `%`) come from a real cutile-rs build of
`rust/src/intforms` (captured as `rust/intforms_*.rust.tileir`).
"""

import cuda.tile as ct

from .build import array, scalar, signature

f16, f32, i32, u32 = ct.float16, ct.float32, ct.int32, ct.uint32
ZERO = ct.PaddingMode.ZERO

# ---------------------------------------------------------------------------------------------
# integer forms: ceil-division, floor-mod, min, clamps (the matmul swizzle)
# ---------------------------------------------------------------------------------------------


@ct.kernel
def swizzle_copy(x, y, TILE: ct.Constant[int], GROUP: ct.Constant[int]):
    """Reference: ct.cdiv, Python floor-div and floor-mod, min()."""
    bid = ct.bid(0)
    num_m = ct.cdiv(x.shape[0], TILE)
    first = (bid // GROUP) * GROUP
    gsm = min(num_m - first, GROUP)
    row = first + bid % gsm
    t = ct.load(x, index=(row,), shape=(TILE,))
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def swizzle_copy_manual_cdiv(x, y, TILE: ct.Constant[int], GROUP: ct.Constant[int]):
    """Equivalent: (m + TILE - 1) // TILE and an if/else clamp instead of cdiv and min."""
    bid = ct.bid(0)
    num_m = (x.shape[0] + TILE - 1) // TILE
    first = (bid // GROUP) * GROUP
    rem = num_m - first
    if rem < GROUP:
        gsm = rem
    else:
        gsm = GROUP
    row = first + bid % gsm
    t = ct.load(x, index=(row,), shape=(TILE,))
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def swizzle_copy_floor_count(x, y, TILE: ct.Constant[int], GROUP: ct.Constant[int]):
    """Different: the tile count rounds down, so the last partial tile is never read."""
    bid = ct.bid(0)
    num_m = x.shape[0] // TILE
    first = (bid // GROUP) * GROUP
    gsm = min(num_m - first, GROUP)
    row = first + bid % gsm
    t = ct.load(x, index=(row,), shape=(TILE,))
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def swizzle_copy_max_clamp(x, y, TILE: ct.Constant[int], GROUP: ct.Constant[int]):
    """Different: the if/else clamp picks the larger value (max, not min)."""
    bid = ct.bid(0)
    num_m = ct.cdiv(x.shape[0], TILE)
    first = (bid // GROUP) * GROUP
    rem = num_m - first
    if rem < GROUP:
        gsm = GROUP
    else:
        gsm = rem
    row = first + bid % gsm
    t = ct.load(x, index=(row,), shape=(TILE,))
    ct.store(y, index=(bid,), tile=t)


# x's shape divisible by 16 as cutile-rs' spec `shape_div: [16]` states (both sides assume the same)
@ct.kernel
def group_walk(x, y, TILE: ct.Constant[int], GROUP: ct.Constant[int]):
    """Reference: Python's floor-mod by a constant divisor (its fix-up test compares with a constant false)."""
    bid = ct.bid(0)
    row = (bid // GROUP) * GROUP + bid % GROUP
    t = ct.load(x, index=(row,), shape=(TILE,))
    ct.store(y, index=(bid,), tile=t)


SWIZZLE_SIG = signature(array(f32, 1, shape_divisible_by=(16,)), array(f32, 1, shape_divisible_by=(16,)), 256, 8)

# ---------------------------------------------------------------------------------------------
# compares: unsigned vs signed on values known to be non-negative; 0 + x
# ---------------------------------------------------------------------------------------------


@ct.kernel
def masked_copy(x, y, TILE: ct.Constant[int]):
    """Reference: keep the tile only in blocks below the row count (signed compare)."""
    bid = ct.bid(0)
    keep = bid < x.shape[0]
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ZERO)
    ct.store(y, index=(bid,), tile=ct.where(keep, t, 0.0))


@ct.kernel
def masked_copy_unsigned(x, y, TILE: ct.Constant[int]):
    """Equivalent: the same compare done unsigned (a block id and a shape are never negative), and the
    block id written as 0 + bid."""
    bid = 0 + ct.bid(0)
    keep = ct.astype(bid, u32) < ct.astype(x.shape[0], u32)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ZERO)
    ct.store(y, index=(bid,), tile=ct.where(keep, t, 0.0))


@ct.kernel
def masked_copy_less_equal(x, y, TILE: ct.Constant[int]):
    """Different: `<=` keeps one block too many."""
    bid = ct.bid(0)
    keep = bid <= x.shape[0]
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ZERO)
    ct.store(y, index=(bid,), tile=ct.where(keep, t, 0.0))


@ct.kernel
def masked_copy_shifted(x, y, TILE: ct.Constant[int]):
    """Different: an unsigned compare of bid - 1, which wraps to a huge value in block 0."""
    bid = ct.bid(0)
    keep = ct.astype(bid - 1, u32) < ct.astype(x.shape[0], u32)
    t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ZERO)
    ct.store(y, index=(bid,), tile=ct.where(keep, t, 0.0))


MASKED_SIG = signature(array(f32, 1), array(f32, 1), 256)

# ---------------------------------------------------------------------------------------------
# padding: undefined in the reference, zero in the port (the port is at least as defined)
# ---------------------------------------------------------------------------------------------


@ct.kernel
def row_copy_unpadded(x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid, 0), shape=(1, TILE))
    ct.store(y, index=(pid, 0), tile=t)


@ct.kernel
def row_copy_zero_padded(x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid, 0), shape=(1, TILE), padding_mode=ZERO)
    ct.store(y, index=(pid, 0), tile=t)


ROW_COPY_SIG = signature(array(f16, 2), array(f16, 2), 1024)

# ---------------------------------------------------------------------------------------------
# hints per target: `default` vs a named target, sm_100-only hints
# ---------------------------------------------------------------------------------------------


@ct.kernel(occupancy=2)
def copy_occ_default(x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    ct.store(y, index=(pid,), tile=ct.load(x, index=(pid,), shape=(TILE,), padding_mode=ZERO))


@ct.kernel(occupancy=ct.ByTarget(sm_90=2))
def copy_occ_sm90(x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    ct.store(y, index=(pid,), tile=ct.load(x, index=(pid,), shape=(TILE,), padding_mode=ZERO))


@ct.kernel(occupancy=ct.ByTarget(sm_100=2))
def copy_occ_sm100(x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    ct.store(y, index=(pid,), tile=ct.load(x, index=(pid,), shape=(TILE,), padding_mode=ZERO))


@ct.kernel
def copy_plain(x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    ct.store(y, index=(pid,), tile=ct.load(x, index=(pid,), shape=(TILE,), padding_mode=ZERO))


@ct.kernel
def copy_latency(x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    ct.store(y, index=(pid,), tile=ct.load(x, index=(pid,), shape=(TILE,), padding_mode=ZERO, latency=3))


COPY_SIG = signature(array(f32, 1), array(f32, 1), 256)

# ---------------------------------------------------------------------------------------------
# scalar parameters by role: a port that passes its scalar first
# ---------------------------------------------------------------------------------------------


@ct.kernel
def gather_scaled(x, y, n, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    offs = pid * TILE + ct.arange(TILE, dtype=i32)
    t = ct.gather(x, offs, mask=offs < n)
    ct.store(y, index=(pid,), tile=t * 2.0)


@ct.kernel
def gather_scaled_n_first(n, x, y, TILE: ct.Constant[int]):
    """Equivalent: the same kernel with the scalar first (another calling order)."""
    pid = ct.bid(0)
    offs = pid * TILE + ct.arange(TILE, dtype=i32)
    t = ct.gather(x, offs, mask=offs < n)
    ct.store(y, index=(pid,), tile=t * 2.0)


@ct.kernel
def gather_scaled_n_first_unmasked(n, x, y, TILE: ct.Constant[int]):
    """Different: the `offs < n` bound is gone (only the array's own bounds check is left)."""
    pid = ct.bid(0)
    offs = pid * TILE + ct.arange(TILE, dtype=i32)
    t = ct.gather(x, offs)
    ct.store(y, index=(pid,), tile=t * 2.0 + 0.0 * n)


@ct.kernel
def gather_scaled_shifted(x, y, n, TILE: ct.Constant[int]):
    """Different: reads one element further (offs + 1), under the same `offs < n` bound."""
    pid = ct.bid(0)
    offs = pid * TILE + ct.arange(TILE, dtype=i32)
    t = ct.gather(x, offs + 1, mask=offs < n)
    ct.store(y, index=(pid,), tile=t * 2.0)


_X16 = dict(shape_divisible_by=(16,))
GATHER_SIG = signature(array(f32, 1, **_X16), array(f32, 1, **_X16), scalar(i32), 256)
GATHER_SIG_N_FIRST = signature(scalar(i32), array(f32, 1, **_X16), array(f32, 1, **_X16), 256)

# ---------------------------------------------------------------------------------------------
# a shape folded to a constant on one side, computed from run-time values on the other
# ---------------------------------------------------------------------------------------------


@ct.kernel
def row_sum_const_k(x, y, K: ct.Constant[int], TK: ct.Constant[int]):
    """Reference specialised on K: the loop trip count is the constant K // TK."""
    pid = ct.bid(0)
    acc = ct.zeros((1, TK), dtype=f32)
    for k in range(K // TK):
        acc = acc + ct.astype(ct.load(x, index=(pid, k), shape=(1, TK), padding_mode=ZERO), f32)
    ct.store(y, index=(pid,), tile=ct.astype(ct.sum(acc, axis=1), y.dtype))


@ct.kernel
def row_sum_runtime_k(x, y, K: ct.Constant[int], TK: ct.Constant[int]):
    """The port computes the trip count from x's shape at run time (general, equal when x has K columns)."""
    pid = ct.bid(0)
    acc = ct.zeros((1, TK), dtype=f32)
    for k in range(ct.num_tiles(x, axis=1, shape=(1, TK))):
        acc = acc + ct.astype(ct.load(x, index=(pid, k), shape=(1, TK), padding_mode=ZERO), f32)
    ct.store(y, index=(pid,), tile=ct.astype(ct.sum(acc, axis=1), y.dtype))


ROW_SUM_SIG = signature(array(f16, 2), array(f16, 1), 4096, 256)

# ---------------------------------------------------------------------------------------------
# a matmul that issues 4 tile loads per K step where the reference issues 2 (a real difference)
# ---------------------------------------------------------------------------------------------


@ct.kernel
def matmul_split_a(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=f32)
    nk = ct.num_tiles(a, axis=1, shape=(TM, TK))
    for k in range(nk):
        top = ct.load(a, index=(2 * bm, k), shape=(TM // 2, TK), padding_mode=ZERO)
        bottom = ct.load(a, index=(2 * bm + 1, k), shape=(TM // 2, TK), padding_mode=ZERO)
        left = ct.load(b, index=(2 * k, bn), shape=(TK // 2, TN), padding_mode=ZERO)
        right = ct.load(b, index=(2 * k + 1, bn), shape=(TK // 2, TN), padding_mode=ZERO)
        acc = ct.mma(ct.cat((top, bottom), axis=0), ct.cat((left, right), axis=0), acc)
    ct.store(c, index=(bm, bn), tile=ct.astype(acc, c.dtype))

# ---------------------------------------------------------------------------------------------
# two loops whose bounds differ: constants must pair by the role they play (step with step)
# ---------------------------------------------------------------------------------------------


@ct.kernel
def two_loops(x, y, K: ct.Constant[int], TK: ct.Constant[int]):
    pid = ct.bid(0)
    acc = ct.zeros((1, TK), dtype=f32)
    for k in range(ct.num_tiles(x, axis=1, shape=(1, TK))):
        acc = acc + ct.astype(ct.load(x, index=(pid, k), shape=(1, TK), padding_mode=ZERO), f32)
    for k in range(0, ct.num_tiles(x, axis=1, shape=(1, TK)), 2):
        acc = acc * 0.5
    ct.store(y, index=(pid,), tile=ct.astype(ct.sum(acc, axis=1), y.dtype))


@ct.kernel
def two_loops_other_bounds(x, y, K: ct.Constant[int], TK: ct.Constant[int]):
    """Different: the first loop starts at 1, the second steps by 3."""
    pid = ct.bid(0)
    acc = ct.zeros((1, TK), dtype=f32)
    for k in range(1, ct.num_tiles(x, axis=1, shape=(1, TK))):
        acc = acc + ct.astype(ct.load(x, index=(pid, k), shape=(1, TK), padding_mode=ZERO), f32)
    for k in range(0, ct.num_tiles(x, axis=1, shape=(1, TK)), 3):
        acc = acc * 0.5
    ct.store(y, index=(pid,), tile=ct.astype(ct.sum(acc, axis=1), y.dtype))

# ---------------------------------------------------------------------------------------------
# a raw-pointer port (base pointers plus row count, column count and row strides as plain scalars):
# the cutile-rs side is rust/src/rowptr, built with build-rust
# ---------------------------------------------------------------------------------------------


@ct.kernel
def row_double(x, y, BLOCK: ct.Constant[int]):
    row = ct.bid(0)
    cols = ct.arange(BLOCK, dtype=i32)
    t = ct.gather(x, (row, cols))
    ct.scatter(y, (row, cols), t * 2.0)


ROW_DOUBLE_SIG = signature(array(f32, 2, shape_divisible_by=(1, 16), stride_divisible_by=(16, 1)),
                           array(f32, 2, shape_divisible_by=(1, 16), stride_divisible_by=(16, 1)), 256)


# ---------------------------------------------------------------------------------------------
# a bound folded to a constant in the reference, passed at run time by the port
# ---------------------------------------------------------------------------------------------


@ct.kernel
def gather_const_n(x, y, N: ct.Constant[int], TILE: ct.Constant[int]):
    pid = ct.bid(0)
    offs = pid * TILE + ct.arange(TILE, dtype=i32)
    t = ct.gather(x, offs, mask=offs < N)
    ct.store(y, index=(pid,), tile=t * 2.0)


@ct.kernel
def gather_runtime_n(x, y, n, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    offs = pid * TILE + ct.arange(TILE, dtype=i32)
    t = ct.gather(x, offs, mask=offs < n)
    ct.store(y, index=(pid,), tile=t * 2.0)


@ct.kernel
def gather_runtime_n_le(x, y, n, TILE: ct.Constant[int]):
    """Different: `<=` reads one element past the bound."""
    pid = ct.bid(0)
    offs = pid * TILE + ct.arange(TILE, dtype=i32)
    t = ct.gather(x, offs, mask=offs <= n)
    ct.store(y, index=(pid,), tile=t * 2.0)


GATHER_CONST_SIG = signature(array(f32, 1, **_X16), array(f32, 1, **_X16), 1000, 256)

# ---------------------------------------------------------------------------------------------
# a reference specialised on a size the port takes as a parameter (cuTile Python folds ct.Constant)
# ---------------------------------------------------------------------------------------------


@ct.kernel
def grouped_rows_const(x, y, M: ct.Constant[int], TILE: ct.Constant[int]):
    bid = ct.bid(0)
    num_m = ct.cdiv(M, TILE)
    row = bid % num_m
    t = ct.load(x, index=(row,), shape=(TILE,), padding_mode=ZERO)
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def grouped_rows_param(x, y, m, TILE: ct.Constant[int]):
    """Equivalent for the size the reference was compiled for: the tile count is computed from a parameter."""
    bid = ct.bid(0)
    num_m = ct.cdiv(m, TILE)
    row = bid % num_m
    t = ct.load(x, index=(row,), shape=(TILE,), padding_mode=ZERO)
    ct.store(y, index=(bid,), tile=t)


@ct.kernel
def grouped_rows_param_div(x, y, m, TILE: ct.Constant[int]):
    """Different: divides by the tile count where the reference takes the remainder."""
    bid = ct.bid(0)
    num_m = ct.cdiv(m, TILE)
    row = bid // num_m
    t = ct.load(x, index=(row,), shape=(TILE,), padding_mode=ZERO)
    ct.store(y, index=(bid,), tile=t)


GROUPED_CONST_SIG = signature(array(f32, 1), array(f32, 1), 2048, 256)
GROUPED_PARAM_SIG = signature(array(f32, 1), array(f32, 1), scalar(i32), 256)

# ---------------------------------------------------------------------------------------------
# a value loaded without padding in the reference and with zero padding in the port, then used as a loop bound
# ---------------------------------------------------------------------------------------------


@ct.kernel
def count_from_memory(n, x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    steps = ct.load(n, index=(0,), shape=(1,)).reshape(())
    acc = ct.zeros((TILE,), dtype=f32)
    for k in range(steps):
        acc = acc + ct.load(x, index=(k,), shape=(TILE,), padding_mode=ZERO)
    ct.store(y, index=(pid,), tile=acc)


@ct.kernel
def count_from_memory_zero_padded(n, x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    steps = ct.load(n, index=(0,), shape=(1,), padding_mode=ZERO).reshape(())
    acc = ct.zeros((TILE,), dtype=f32)
    for k in range(steps):
        acc = acc + ct.load(x, index=(k,), shape=(TILE,), padding_mode=ZERO)
    ct.store(y, index=(pid,), tile=acc)


@ct.kernel
def count_from_memory_plus_one(n, x, y, TILE: ct.Constant[int]):
    """Different: one more step."""
    pid = ct.bid(0)
    steps = ct.load(n, index=(0,), shape=(1,), padding_mode=ZERO).reshape(())
    acc = ct.zeros((TILE,), dtype=f32)
    for k in range(steps + 1):
        acc = acc + ct.load(x, index=(k,), shape=(TILE,), padding_mode=ZERO)
    ct.store(y, index=(pid,), tile=acc)


COUNT_SIG = signature(array(i32, 1), array(f32, 1), array(f32, 1), 256)
