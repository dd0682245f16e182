"""A few representative draft builds in the default suite (the many-build ones are in test_draft_build.py, heavy):
real cargo + cutile 0.5.0, the IR dump, and the stage-B IR self-check against the real cuda-tile export."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from tileport.draft import draft_port
from tileport.errors import EnvironmentBlocked
from tileport.analysis import analyze_op
from tileport.validators.rust.build import BuildOptions, build_crate
from tileport.validators.rust.crate import crate_cache_root, write_crate
from tileport.validators.rust.selfcheck import self_check
from tileport.validators.tileir.diff import Severity

pytestmark = pytest.mark.slow
if shutil.which("cargo") is None:
    pytest.skip("cargo is not installed", allow_module_level=True)


def _draft(tmp_path, name: str, source: str):
    op = tmp_path / f"{name}.py"
    op.write_text(textwrap.dedent(source), encoding="utf-8")
    analysis = analyze_op(op, targets=["sm_90"], out_dir=tmp_path / "ref", run_tileiras=False, warm=True)
    return analysis, draft_port(analysis)


def _build(name: str, draft):
    layout = write_crate(crate_cache_root() / f"test-draft-core-{name}", draft.spec, draft.kernel_rs)
    try:
        return layout, build_crate(layout, BuildOptions(cubins=False))
    except EnvironmentBlocked as e:
        pytest.skip(str(e))


def test_inlined_helpers_imported_constants_and_new_ops_build_and_pass_the_ir_self_check(tmp_path):
    from tests.draft.test_draft import HELPER_OP
    analysis, draft = _draft(tmp_path, "helper_op", HELPER_OP)
    assert draft.holes == []
    layout, result = _build("helper", draft)
    assert result.ok, [d.short() for d in result.diagnostics if d.level == "error"]
    report = self_check(result, analysis, layout.spec)
    assert report.pairs and not report.unmatched
    for pair in report.pairs:
        assert pair.verdict in ("PASS", "PASS_WITH_NOTES"), sorted(
            f.check + ": " + f.message for f in pair.findings if f.severity == Severity.ERROR)


HOLE_OP = '''
    import cuda.tile as ct

    @ct.kernel
    def hole_kernel(x, y, TILE: ct.Constant[int]):
        b = ct.bid(0)
        t = ct.load(x, index=(b, 0), shape=(1, TILE))
        ct.store(y, index=(b, 0), tile=ct.argmax(t, axis=1, keepdims=True))

    def run(x, y):
        import torch
        ct.launch(torch.cuda.current_stream(), (8, 1, 1), hole_kernel, (x, y, 128))
    '''


def test_a_hole_placeholder_fails_the_build_with_an_error_naming_the_hole(tmp_path):
    _, draft = _draft(tmp_path, "hole_op", HOLE_OP)
    (hole,) = draft.holes
    _, result = _build("hole", draft)
    assert not result.ok
    errors = [d.short() for d in result.diagnostics if d.level == "error"]
    assert any(f"tileport_hole_{hole.id}" in e for e in errors), errors


MATH_OP = '''
    import cuda.tile as ct

    @ct.kernel
    def math_kernel(x, y, out, flags, TILE: ct.Constant[int]):
        b = ct.bid(0)
        a = ct.load(x, index=(b, 0), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
        c = ct.load(y, index=(0,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
        cb = ct.broadcast_to(ct.reshape(c, (1, TILE)), (1, TILE))
        r = ct.sqrt(ct.abs(a) + 1.0) + ct.atan2(a, cb) + ct.pow(ct.abs(cb) + 1.0, a)
        r = ct.where(ct.greater_equal(a, cb), r, ct.negative(r))
        r = ct.cumsum(r, axis=0) * 0.5
        ct.store(out, index=(b, 0), tile=r.astype(out.dtype))
        lanes = ct.arange(TILE, dtype=ct.int32)
        bits = ct.bitwise_xor(ct.bitwise_and(lanes, 7), ct.bitwise_or(lanes // 16, lanes % 3))
        ct.store(flags, index=(b, 0), tile=ct.reshape(ct.bitwise_not(bits), (1, TILE)).astype(flags.dtype))

    def run(x, y, out, flags):
        import torch
        ct.launch(torch.cuda.current_stream(), (8, 1, 1), math_kernel, (x, y, out, flags, 128))
    '''


def test_more_of_the_language_builds_and_pairs_with_the_reference(tmp_path):
    # sqrt/atan2/pow, broadcast_to, comparisons and bitwise ops as functions, negative, cumsum over axis 0,
    # // and % on integer tiles: each one is a row `translated` in docs/draft_coverage.md
    analysis, draft = _draft(tmp_path, "math_op", MATH_OP)
    assert draft.holes == [], [str(h) for h in draft.holes]
    layout, result = _build("math", draft)
    assert result.ok, [d.short() for d in result.diagnostics if d.level == "error"]
    report = self_check(result, analysis, layout.spec)
    assert report.pairs and not report.unmatched
    for pair in report.pairs:
        assert pair.verdict in ("PASS", "PASS_WITH_NOTES"), sorted(
            f.check + ": " + f.message for f in pair.findings if f.severity == Severity.ERROR)


LANG_OP = '''
    import cuda.tile as ct

    @ct.kernel
    def lang_kernel(x, out, cnt, TILE: ct.Constant[int]):
        b = ct.bid(0)
        t = ct.astype(ct.load(x, index=(b, 0), shape=(2, TILE), padding_mode=ct.PaddingMode.ZERO), ct.float32)
        u = ct.add(ct.sin(t), ct.cos(t), rounding_mode=ct.RoundingMode.RZ)
        u = ct.sub(u, ct.tan(t) * 0.01, flush_to_zero=True) + ct.sinh(t * 0.1) - ct.cosh(t * 0.1)
        u = ct.mul(u, ct.floor(t) + ct.ceil(t) + ct.ones((2, TILE), dtype=ct.float32))
        p = ct.prod(ct.permute(ct.reshape(u, (2, TILE, 1)), (2, 0, 1)), axis=1)
        m = ct.min(u, axis=0, keepdims=True)
        ct.store(out, index=(b, 0), tile=ct.astype(ct.reshape(p, (1, TILE)) + m, out.dtype))
        lanes = ct.arange(TILE, dtype=ct.int32)
        q = ct.floordiv(lanes, 3) + ct.mod(lanes, 5)
        flags = (ct.equal(q, 2) | ct.not_equal(q, 7)) & (ct.less(q, 9) | ct.less_equal(q, 1) | ct.greater(q, 4))
        ct.store(cnt, index=(b,), tile=ct.where(flags, q, 0).astype(cnt.dtype))

    def run(x, out, cnt):
        import torch
        ct.launch(torch.cuda.current_stream(), (8, 1, 1), lang_kernel, (x, out, cnt, 64))
    '''


def test_the_rest_of_the_translated_functions_build_and_pair_with_the_reference(tmp_path):
    # rounding/ftz arithmetic, the trig and rounding math, ones, prod/min with axes, permute, ct.astype,
    # floordiv/mod and the comparison functions: rows `translated` in docs/draft_coverage.md
    analysis, draft = _draft(tmp_path, "lang_op", LANG_OP)
    assert draft.holes == [], [str(h) for h in draft.holes]
    layout, result = _build("lang", draft)
    assert result.ok, [d.short() for d in result.diagnostics if d.level == "error"]
    report = self_check(result, analysis, layout.spec)
    assert report.pairs and not report.unmatched
    for pair in report.pairs:
        assert pair.verdict in ("PASS", "PASS_WITH_NOTES"), sorted(
            f.check + ": " + f.message for f in pair.findings if f.severity == Severity.ERROR)


ISSUE35_OP = '''
    import cuda.tile as ct

    @ct.kernel
    def mix_kernel(x, w, v, out, bits, dst, TILE: ct.Constant[int]):
        b = ct.bid(0)
        t = ct.load(x, index=(b, 0), shape=(TILE, TILE), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
        wt = ct.load(w, index=(0, 0), shape=(TILE, TILE), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
        y = ct.tanh(ct.matmul(t, wt), rounding_mode=ct.RoundingMode.APPROX)
        if x.ndim == 2 and y.ndim == 2:
            ct.store(out, index=(b, 0), tile=y.astype(out.dtype))
        lanes = ct.arange(TILE, dtype=ct.int32)
        ct.store(bits, index=(b,), tile=ct.bitwise_rshift(lanes, 2).astype(bits.dtype))
        g = ct.gather(v, b * TILE + lanes, latency=3)
        ct.scatter(dst, b * TILE + lanes, g, latency=2)

    def run(x, w, v, out, bits, dst):
        import torch
        ct.launch(torch.cuda.current_stream(), (4, 1, 1), mix_kernel, (x, w, v, out, bits, dst, 32))
    '''


def test_matmul_shifts_rounded_tanh_and_hinted_pointer_accesses_build_and_pair_with_the_reference(tmp_path):
    # issue #35's rows moved to `translated`: ct.matmul (mma into a zero accumulator), bitwise_rshift (shri),
    # tanh(rounding_mode=) (tanh_with_rounding), gather/scatter(latency=) (Latency::<N>), Array/Tile.ndim (folded)
    analysis, draft = _draft(tmp_path, "mix_op", ISSUE35_OP)
    assert draft.holes == [], [str(h) for h in draft.holes]
    layout, result = _build("mix", draft)
    assert result.ok, [d.short() for d in result.diagnostics if d.level == "error"]
    report = self_check(result, analysis, layout.spec)
    assert report.pairs and not report.unmatched
    for pair in report.pairs:
        assert pair.verdict in ("PASS", "PASS_WITH_NOTES"), sorted(
            f.check + ": " + f.message for f in pair.findings if f.severity == Severity.ERROR)


WIDEN_OP = '''
    import cuda.tile as ct

    TILEPORT = {"dtypes": ["float16", "float32"], "params": {"widen_kernel.out": "float32"}}

    @ct.kernel
    def widen_kernel(x, out, n, TILE: ct.Constant[int]):
        idx = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
        vals = ct.gather(x, idx)
        best = ct.where(idx < n, vals, ct.full((TILE,), -1.0, dtype=ct.float32))
        ct.scatter(out, idx, vals)
        ct.scatter(out, idx + n, best)

    def run(x, out):
        import torch
        ct.launch(torch.cuda.current_stream(), (ct.cdiv(x.numel(), 128), 1, 1), widen_kernel,
                  (x, out, x.numel(), 128))
    '''


def test_where_promotes_and_a_scatter_widens_as_cutile_python_does(tmp_path):
    # ct.where of an f16 tile and an f32 one is f32 (promote_types); a scatter of f16 values into an f32 array casts
    # them (implicit_cast); both per dtype of the op, as the reference compiles them (KernelBench-style max-pool)
    analysis, draft = _draft(tmp_path, "widen_op", WIDEN_OP)
    assert draft.holes == [], [str(h) for h in draft.holes]
    assert "convert_tile(" in draft.kernel_rs
    layout, result = _build("widen", draft)
    assert result.ok, [d.short() for d in result.diagnostics if d.level == "error"]
    report = self_check(result, analysis, layout.spec)
    assert not report.unmatched and len(report.pairs) == 2  # one per dtype of x
    for pair in report.pairs:
        assert pair.verdict in ("PASS", "PASS_WITH_NOTES"), sorted(
            f.check + ": " + f.message for f in pair.findings if f.severity == Severity.ERROR)
