"""Kernels that exercise as much Tile IR syntax as cuda-tile can emit: pointer gathers/scatters and
atomics, control flow (`for` with iter values, `if`/`else` with results, `loop` with `break`),
scans, multi-result reductions (argmax), permutes/cat, int MMA, fp8 conversions, prints and
asserts, per-op and per-entry optimisation hints, int64 indices, dim maps."""

import cuda.tile as ct

from .build import array, scalar, signature

f16, f32, i32 = ct.float16, ct.float32, ct.int32


@ct.kernel(occupancy=2, num_ctas=2)
def gather_math(x, idx, y, n, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    offs = pid * TILE + ct.arange(TILE, dtype=i32)
    i = ct.gather(idx, offs)
    v = ct.gather(x, i, mask=offs < n, padding_value=-1.0)
    v = ct.exp2(v, flush_to_zero=True) + ct.rsqrt(v) + ct.truediv(v, v + 1, rounding_mode=ct.RoundingMode.APPROX,
                                                                 flush_to_zero=True)
    v = ct.where(v > 0, v, ct.tanh(v))
    ct.scatter(y, offs, v, mask=offs < n)
    ct.atomic_add(y, offs, v)


@ct.kernel
def control(x, y, n, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    acc = ct.zeros((TILE,), dtype=f32)
    for i in range(pid, n, ct.num_blocks(0)):
        t = ct.load(x, index=(i,), shape=(TILE,))
        if i % 2 == 0:
            acc = acc + ct.astype(t, f32)
        else:
            acc = acc - ct.exp(ct.astype(t, f32), rounding_mode=ct.RoundingMode.APPROX)
    c = ct.cumsum(acc, axis=0)
    a = ct.argmax(acc, axis=0)
    p = ct.sum(acc, axis=0, rounding_mode=ct.RoundingMode.RZ)
    ct.store(y, index=(pid,), tile=ct.astype(c * p + ct.astype(a, f32), y.dtype))


@ct.kernel
def transpose_cat(x, y, TILE: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b, 0, 0), shape=(1, TILE, TILE), order=(0, 2, 1), allow_tma=False, latency=3)
    t = ct.permute(t, (0, 2, 1))
    t = ct.reshape(t, (TILE, TILE))
    t = ct.transpose(t)
    u = ct.cat((t, t), axis=0)
    ct.store(y, index=(b, 0), tile=ct.astype(ct.sum(u, axis=0, keepdims=True), ct.bfloat16))


@ct.kernel
def while_break(x, y, n, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    i = pid
    acc = ct.zeros((TILE,), dtype=f32)
    while i < n:
        t = ct.load(x, index=(i,), shape=(TILE,))
        acc = acc + ct.astype(t, f32)
        if ct.sum(acc) > 100.0:
            break
        i = i + 1
    ct.printf("block %d\n", pid)
    ct.assert_(pid >= 0, "negative block id")
    out = ct.log(acc) + ct.sqrt(acc) + ct.floor(acc) + ct.pow(acc, 2.0)
    ct.store(y, index=(pid,), tile=ct.astype(out, y.dtype), latency=2)


@ct.kernel
def int_mma(a, b, c, TM: ct.Constant[int]):
    ta = ct.load(a, index=(0, 0), shape=(TM, TM))
    tb = ct.load(b, index=(0, 0), shape=(TM, TM))
    acc = ct.mma(ta, tb, ct.zeros((TM, TM), dtype=i32))
    r = ct.arange(TM, dtype=i32)
    ct.atomic_cas(c, (r, r), ct.zeros((TM,), i32), ct.ones((TM,), i32))
    q = ct.astype(ct.astype(acc, f32), ct.float8_e4m3fn)
    ct.store(c, index=(0, 0), tile=ct.astype(ct.astype(q, f32), i32) + acc)


ZOO = {
    "gather_math": (gather_math, signature(array(f32, 1), array(i32, 1), array(f32, 1), scalar(i32), 256)),
    "control": (control, signature(array(f16, 1, index_dtype=ct.int64), array(f16, 1, aligned=False),
                                   scalar(i32), 256)),
    "transpose_cat": (transpose_cat, signature(array(f16, 3, shape_divisible_by=16), array(ct.bfloat16, 2), 32)),
    "while_break": (while_break, signature(array(f16, 1), array(f16, 1), scalar(i32), 256)),
    "int_mma": (int_mma, signature(array(ct.int8, 2), array(ct.int8, 2), array(i32, 2), 64)),
}
