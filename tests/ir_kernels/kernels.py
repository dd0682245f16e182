"""Reference kernels, their faithful rewrites, and one mutant per class of translation fault.

A *rewrite* is the same kernel with renamed variables and independent statements reordered:
its Tile IR must compare equal. A *mutant* carries exactly one fault a port can make (wrong
reduction axis, lost padding, pointer gather instead of a view load, ...): its Tile IR must be
judged FAIL_FIXABLE under the right category.
"""

import cuda.tile as ct

from .build import array, scalar, signature

f16, f32, i32 = ct.float16, ct.float32, ct.int32
LOG2E = 1.4426950408889634

# ---------------------------------------------------------------------------------------------
# rms_norm: two loads, a reduction, rsqrt
# ---------------------------------------------------------------------------------------------


@ct.kernel
def rms_norm(x, w, y, TILE: ct.Constant[int]):
    row = ct.bid(0)
    xt = ct.load(x, index=(row, 0), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO)
    wt = ct.load(w, index=(0,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    xf = ct.astype(xt, f32)
    ms = ct.sum(xf * xf, axis=1, keepdims=True) / TILE
    inv = ct.rsqrt(ms + 1e-6)
    out = xf * inv * ct.astype(wt, f32)
    ct.store(y, index=(row, 0), tile=ct.astype(out, y.dtype))


@ct.kernel
def rms_norm_rewritten(inp, weight, outp, T: ct.Constant[int]):
    # weight first, different names, the row id fetched late
    weight_f = ct.astype(ct.load(weight, index=(0,), shape=(T,), padding_mode=ct.PaddingMode.ZERO), f32)
    r = ct.bid(0)
    v = ct.astype(ct.load(inp, index=(r, 0), shape=(1, T), padding_mode=ct.PaddingMode.ZERO), f32)
    sq = v * v
    mean_sq = ct.sum(sq, axis=1, keepdims=True) / T
    scale = ct.rsqrt(mean_sq + 1e-6)
    ct.store(outp, index=(r, 0), tile=ct.astype(v * scale * weight_f, outp.dtype))


RMS_SIG = signature(array(f16, 2), array(f16, 1), array(f16, 2), 1024)

# ---------------------------------------------------------------------------------------------
# softmax: padding, reductions, exp
# ---------------------------------------------------------------------------------------------


@ct.kernel
def softmax(x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid, 0), shape=(1, TILE), padding_mode=ct.PaddingMode.NEG_INF)
    t = ct.astype(t, f32)
    m = ct.max(t, axis=1, keepdims=True)
    e = ct.exp(t - m)
    s = ct.sum(e, axis=1, keepdims=True)
    ct.store(y, index=(pid, 0), tile=ct.astype(e / s, y.dtype))


@ct.kernel
def softmax_rewritten(src, dst, N: ct.Constant[int]):
    block = ct.bid(0)
    logits = ct.astype(ct.load(src, index=(block, 0), shape=(1, N), padding_mode=ct.PaddingMode.NEG_INF), f32)
    row_max = ct.max(logits, axis=1, keepdims=True)
    numer = ct.exp(logits - row_max)
    denom = ct.sum(numer, axis=1, keepdims=True)
    result = numer / denom
    ct.store(dst, index=(block, 0), tile=ct.astype(result, dst.dtype))


@ct.kernel
def softmax_no_padding(x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid, 0), shape=(1, TILE))
    t = ct.astype(t, f32)
    m = ct.max(t, axis=1, keepdims=True)
    e = ct.exp(t - m)
    s = ct.sum(e, axis=1, keepdims=True)
    ct.store(y, index=(pid, 0), tile=ct.astype(e / s, y.dtype))


@ct.kernel
def softmax_exp2(x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid, 0), shape=(1, TILE), padding_mode=ct.PaddingMode.NEG_INF)
    t = ct.astype(t, f32)
    m = ct.max(t, axis=1, keepdims=True)
    e = ct.exp2((t - m) * LOG2E)
    s = ct.sum(e, axis=1, keepdims=True)
    ct.store(y, index=(pid, 0), tile=ct.astype(e / s, y.dtype))


@ct.kernel
def softmax_f16_math(x, y, TILE: ct.Constant[int]):
    # forgot to upcast: everything in f16
    pid = ct.bid(0)
    t = ct.load(x, index=(pid, 0), shape=(1, TILE), padding_mode=ct.PaddingMode.NEG_INF)
    m = ct.max(t, axis=1, keepdims=True)
    e = ct.exp(t - m)
    s = ct.sum(e, axis=1, keepdims=True)
    ct.store(y, index=(pid, 0), tile=e / s)


SOFTMAX_SIG = signature(array(f16, 2), array(f16, 2), 1024)
SOFTMAX_SIG_UNALIGNED = signature(array(f16, 2, aligned=False), array(f16, 2, aligned=False), 1024)

# ---------------------------------------------------------------------------------------------
# a square-tile normalisation: the reduction axis matters, shapes do not reveal it
# ---------------------------------------------------------------------------------------------


@ct.kernel
def center_rows(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.astype(ct.load(x, index=(b, 0), shape=(T, T)), f32)
    m = ct.max(t, axis=1, keepdims=True)
    ct.store(y, index=(b, 0), tile=ct.astype(t - m, y.dtype))


@ct.kernel
def center_rows_wrong_axis(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.astype(ct.load(x, index=(b, 0), shape=(T, T)), f32)
    m = ct.max(t, axis=0, keepdims=True)
    ct.store(y, index=(b, 0), tile=ct.astype(t - m, y.dtype))


@ct.kernel
def center_rows_transposed_load(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.astype(ct.load(x, index=(b, 0), shape=(T, T), order=(1, 0)), f32)
    m = ct.max(t, axis=1, keepdims=True)
    ct.store(y, index=(b, 0), tile=ct.astype(t - m, y.dtype))


SQUARE_SIG = signature(array(f16, 2), array(f16, 2), 64)

# ---------------------------------------------------------------------------------------------
# scale: view loads vs pointer gathers, masks, approx math
# ---------------------------------------------------------------------------------------------


@ct.kernel
def scale_view(x, y, n, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(pid,), tile=t * 2.0)


@ct.kernel
def scale_gather(x, y, n, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    offs = pid * TILE + ct.arange(TILE, dtype=i32)
    t = ct.gather(x, offs, mask=offs < n)
    ct.store(y, index=(pid,), tile=t * 2.0)


@ct.kernel
def scale_gather_unmasked(x, y, n, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    offs = pid * TILE + ct.arange(TILE, dtype=i32)
    t = ct.gather(x, offs)
    ct.store(y, index=(pid,), tile=t * 2.0)


@ct.kernel
def scale_gather_pad(x, y, n, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    offs = pid * TILE + ct.arange(TILE, dtype=i32)
    t = ct.gather(x, offs, mask=offs < n, padding_value=1.0)
    ct.store(y, index=(pid,), tile=t * 2.0)


SCALE_SIG = signature(array(f32, 1), array(f32, 1), scalar(i32), 256)


@ct.kernel
def sigmoid_approx(x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid,), shape=(TILE,))
    e = ct.exp(-t, rounding_mode=ct.RoundingMode.APPROX)
    s = ct.truediv(1.0, 1.0 + e, rounding_mode=ct.RoundingMode.APPROX, flush_to_zero=True)
    ct.store(y, index=(pid,), tile=s)


@ct.kernel
def sigmoid_exact_exp(x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid,), shape=(TILE,))
    e = ct.exp(-t)
    s = ct.truediv(1.0, 1.0 + e, rounding_mode=ct.RoundingMode.APPROX, flush_to_zero=True)
    ct.store(y, index=(pid,), tile=s)


@ct.kernel
def sigmoid_no_ftz(x, y, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    t = ct.load(x, index=(pid,), shape=(TILE,))
    e = ct.exp(-t, rounding_mode=ct.RoundingMode.APPROX)
    s = ct.truediv(1.0, 1.0 + e, rounding_mode=ct.RoundingMode.APPROX)
    ct.store(y, index=(pid,), tile=s)


SIGMOID_SIG = signature(array(f32, 1), array(f32, 1), 512)

# ---------------------------------------------------------------------------------------------
# matmul: MMA accumulator, K loop bound, hints
# ---------------------------------------------------------------------------------------------


@ct.kernel
def matmul(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=f32)
    nk = ct.num_tiles(a, axis=1, shape=(TM, TK))
    for k in range(nk):
        ta = ct.load(a, index=(bm, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        tb = ct.load(b, index=(k, bn), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bm, bn), tile=ct.astype(acc, c.dtype))


@ct.kernel
def matmul_rewritten(lhs, rhs, out, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
    col = ct.bid(1)
    k_tiles = ct.num_tiles(lhs, axis=1, shape=(BM, BK))
    row = ct.bid(0)
    accumulator = ct.full((BM, BN), 0, dtype=f32)
    for kk in range(k_tiles):
        b_tile = ct.load(rhs, index=(kk, col), shape=(BK, BN), padding_mode=ct.PaddingMode.ZERO)
        a_tile = ct.load(lhs, index=(row, kk), shape=(BM, BK), padding_mode=ct.PaddingMode.ZERO)
        accumulator = ct.mma(a_tile, b_tile, accumulator)
    result = ct.astype(accumulator, out.dtype)
    ct.store(out, index=(row, col), tile=result)


@ct.kernel
def matmul_f16_acc(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=f16)
    nk = ct.num_tiles(a, axis=1, shape=(TM, TK))
    for k in range(nk):
        ta = ct.load(a, index=(bm, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        tb = ct.load(b, index=(k, bn), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bm, bn), tile=ct.astype(acc, c.dtype))


@ct.kernel
def matmul_short_loop(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=f32)
    nk = ct.num_tiles(a, axis=1, shape=(TM, TK))
    for k in range(nk - 1):
        ta = ct.load(a, index=(bm, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        tb = ct.load(b, index=(k, bn), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bm, bn), tile=ct.astype(acc, c.dtype))


@ct.kernel(occupancy=2, num_ctas=2)
def matmul_hinted(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm = ct.bid(0)
    bn = ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=f32)
    nk = ct.num_tiles(a, axis=1, shape=(TM, TK))
    for k in range(nk):
        ta = ct.load(a, index=(bm, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        tb = ct.load(b, index=(k, bn), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bm, bn), tile=ct.astype(acc, c.dtype))


def matmul_sig(tm: int = 128, tn: int = 128, tk: int = 64):
    return signature(array(f16, 2), array(f16, 2), array(f16, 2), tm, tn, tk)


# ---------------------------------------------------------------------------------------------
# tokens, parameter order, a long kernel
# ---------------------------------------------------------------------------------------------


@ct.kernel
def store_then_load(x, y, TILE: ct.Constant[int]):
    # y is written and read back: the read must be ordered after the write (a token chain)
    pid = ct.bid(0)
    t = ct.load(x, index=(pid,), shape=(TILE,))
    ct.store(y, index=(pid,), tile=t * 2.0)
    u = ct.load(y, index=(pid,), shape=(TILE,))
    ct.store(x, index=(pid,), tile=u + 1.0)


STORE_LOAD_SIG = signature(array(f32, 1), array(f32, 1), 256)


@ct.kernel
def revisiting_store(x, y, N: ct.Constant[int], TILE: ct.Constant[int]):
    # a loop storing at an index that is not its counter (two trips may hit one tile): cuTile Python orders the
    # stores through a token the loop carries
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    for i in range(N):
        ct.store(y, index=(ct.bid(0) + i // 2,), tile=t)


REVISIT_SIG = signature(array(f32, 1), array(f32, 1), 4, 256)


@ct.kernel
def vector_add(x, y, out, TILE: ct.Constant[int]):
    b = ct.bid(0)
    a = ct.load(x, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    c = ct.load(y, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(b,), tile=a + c)


@ct.kernel
def vector_add_out_first(out, x, y, TILE: ct.Constant[int]):
    # the way cutile-rs ports tend to declare it: the `&mut` output first
    b = ct.bid(0)
    a = ct.load(x, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    c = ct.load(y, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(b,), tile=a + c)


@ct.kernel
def vector_sub(x, y, out, TILE: ct.Constant[int]):
    b = ct.bid(0)
    a = ct.load(x, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    c = ct.load(y, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(b,), tile=a - c)


@ct.kernel
def vector_sub_swapped(x, y, out, TILE: ct.Constant[int]):
    b = ct.bid(0)
    a = ct.load(x, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    c = ct.load(y, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(b,), tile=c - a)


VEC_SIG = signature(array(f32, 1), array(f32, 1), array(f32, 1), 1024)


@ct.kernel
def unrolled_series(x, y, TILE: ct.Constant[int], N: ct.Constant[int]):
    # a long straight-line kernel (about 9 ops per term) for the benchmark
    pid = ct.bid(0)
    t = ct.load(x, index=(pid,), shape=(TILE,))
    acc = t
    for i in ct.static_iter(range(N)):
        acc = acc * 1.0001 + ct.exp(t * (i + 1.0))
    ct.store(y, index=(pid,), tile=acc)


def unrolled_sig(n: int):
    return signature(array(f32, 1), array(f32, 1), 256, n)


# name -> (reference kernel, its signature, mutant kernel, its signature, category, check) the diff must name
MUTATIONS = {
    "reduction_axis": (center_rows, SQUARE_SIG, center_rows_wrong_axis, SQUARE_SIG, "reduction", "reduction.axis"),
    "lost_padding": (softmax, SOFTMAX_SIG, softmax_no_padding, SOFTMAX_SIG, "memory", "memory.padding"),
    "lost_mask": (scale_gather, SCALE_SIG, scale_gather_unmasked, SCALE_SIG, "memory", "memory.mask"),
    "gather_padding_value": (scale_gather, SCALE_SIG, scale_gather_pad, SCALE_SIG, "memory", "memory.padding"),
    "view_to_gather": (scale_view, SCALE_SIG, scale_gather, SCALE_SIG, "memory", "memory.kind"),
    "dim_map": (center_rows, SQUARE_SIG, center_rows_transposed_load, SQUARE_SIG, "memory", "memory.dim_map"),
    "tile_shape": (matmul, matmul_sig(), matmul, matmul_sig(128, 128, 32), "memory", "memory.tile_shape"),
    "dropped_div_by": (softmax, SOFTMAX_SIG, softmax, SOFTMAX_SIG_UNALIGNED, "assumptions", "assumptions.div_by"),
    "f16_accumulator": (matmul, matmul_sig(), matmul_f16_acc, matmul_sig(), "mma", "mma.accumulator"),
    "lost_approx": (sigmoid_approx, SIGMOID_SIG, sigmoid_exact_exp, SIGMOID_SIG, "math", "math.rounding"),
    "lost_flush_to_zero": (sigmoid_approx, SIGMOID_SIG, sigmoid_no_ftz, SIGMOID_SIG, "math", "math.flush_to_zero"),
    "exp_vs_exp2": (softmax, SOFTMAX_SIG, softmax_exp2, SOFTMAX_SIG, "math", "math.function"),
    "loop_bound": (matmul, matmul_sig(), matmul_short_loop, matmul_sig(), "loops", "loops.bounds"),
    "dtype_conversion": (softmax, SOFTMAX_SIG, softmax_f16_math, SOFTMAX_SIG, "conversions", "conversions.count"),
    "hints": (matmul_hinted, matmul_sig(), matmul, matmul_sig(), "hints", "hints.occupancy"),
    "swapped_operands": (vector_sub, VEC_SIG, vector_sub_swapped, VEC_SIG, "structure", "structure.dataflow"),
}

REWRITES = {
    "rms_norm": (rms_norm, RMS_SIG, rms_norm_rewritten, RMS_SIG),
    "softmax": (softmax, SOFTMAX_SIG, softmax_rewritten, SOFTMAX_SIG),
    "matmul": (matmul, matmul_sig(), matmul_rewritten, matmul_sig()),
}


@ct.kernel
def unrolled_gathers(x, y, n, TILE: ct.Constant[int], N: ct.Constant[int]):
    # integer index arithmetic, masked gathers and their addresses (about 25 ops per term), for the benchmark
    pid = ct.bid(0)
    base = pid * TILE + ct.arange(TILE, dtype=i32)
    acc = ct.zeros((TILE,), dtype=f32)
    for i in ct.static_iter(range(N)):
        offs = (base + ct.cdiv(n, i + 2)) % n
        acc = acc + ct.gather(x, offs, mask=offs < n)
    ct.scatter(y, base, acc, mask=base < n)


@ct.kernel
def unrolled_gathers_manual(x, y, n, TILE: ct.Constant[int], N: ct.Constant[int]):
    # the same with the ceil-division written out (an equivalent port)
    pid = ct.bid(0)
    base = pid * TILE + ct.arange(TILE, dtype=i32)
    acc = ct.zeros((TILE,), dtype=f32)
    for i in ct.static_iter(range(N)):
        offs = (base + (n + i + 1) // (i + 2)) % n
        acc = acc + ct.gather(x, offs, mask=offs < n)
    ct.scatter(y, base, acc, mask=base < n)


def unrolled_gathers_sig(n: int):
    return signature(array(f32, 1), array(f32, 1), scalar(i32), 256, n)
