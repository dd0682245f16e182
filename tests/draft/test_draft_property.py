"""Property: a draft of any kernel over the supported grammar never crashes, and a complete draft builds with real
cargo + cutile 0.5.0 (and its Tile IR dumps). Hypothesis writes the kernels: elementwise expression trees over
loaded tiles, scalars and constants, with math calls, comparisons/where, min/max, helpers and constant branches.

A few examples in the default suite (each is a real analysis and a real build); `pytest -m heavy` runs many."""

from __future__ import annotations

import itertools
import shutil
import textwrap

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from tileport.draft import draft_port
from tileport.errors import EnvironmentBlocked, UserError
from tileport.analysis import analyze_op
from tileport.validators.rust.build import BuildOptions, build_crate
from tileport.validators.rust.crate import crate_cache_root, write_crate

pytestmark = pytest.mark.slow

LEAVES = ["a", "b", "s", "1.5", "0.25", "K"]
UNARY = ["ct.exp({})", "ct.abs({})", "ct.negative({})", "-({})", "ct.tanh({})", "_helper({})", "ct.sqrt({})"]
BINARY = ["({} + {})", "({} - {})", "({} * {})", "ct.maximum({}, {})", "min({}, {})", "ct.where({} > {}, a, b)"]

exprs = st.recursive(
    st.sampled_from(LEAVES),
    lambda inner: st.one_of(
        st.tuples(st.sampled_from(UNARY), inner).map(lambda t: t[0].format(t[1])),
        st.tuples(st.sampled_from(BINARY), inner, inner).map(lambda t: t[0].format(t[1], t[2]))),
    max_leaves=6)


@st.composite
def kernels(draw):
    two_d = draw(st.booleans())
    body = draw(exprs)
    branch = draw(st.booleans())
    shape = "(1, TILE)" if two_d else "(TILE,)"
    index = "(pid, 0)" if two_d else "(pid,)"
    flip = "\n        if FLIP:\n            r = r * -1.0" if branch else ""
    return textwrap.dedent(f'''
        import math
        import cuda.tile as ct

        K = math.log2(math.e)

        @ct.function
        def _helper(v):
            return v * 0.5 + K

        @ct.kernel
        def prop_kernel(x, y, out, s, TILE: ct.Constant[int], FLIP: ct.Constant[bool]):
            pid = ct.bid(0)
            a = ct.load(x, index={index}, shape={shape}, padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
            b = ct.load(y, index={index}, shape={shape}, padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
            r = a * 0.0 + ({body}){flip}
            ct.store(out, index={index}, tile=r.astype(out.dtype))

        def run(x, y, out):
            import torch
            ct.launch(torch.cuda.current_stream(), (4, 1, 1), prop_kernel, (x, y, out, 2.0, 128, {branch}))
        ''').replace("ct.load(x, index=(pid, 0)", "ct.load(x, index=(pid, 0)")


_count = itertools.count()


def _check(tmp_path_factory, source: str, build: bool) -> None:
    root = tmp_path_factory.mktemp("prop")
    op = root / "prop_op.py"
    op.write_text(source, encoding="utf-8")
    try:
        analysis = analyze_op(op, targets=["sm_90"], out_dir=root / "ref", run_tileiras=False, warm=True)
    except UserError:
        event("stage A refused it")
        return  # stage A refused the kernel (cuda-tile rejects it): not the draft's input
    draft = draft_port(analysis)  # the property: no exception, whatever the kernel
    assert all(h.id for h in draft.holes)
    event("complete draft (built)" if not draft.holes else "draft with holes")
    if draft.holes or not build:
        return
    layout = write_crate(crate_cache_root() / f"test-draft-prop-{next(_count) % 4}", draft.spec, draft.kernel_rs)
    try:
        result = build_crate(layout, BuildOptions(cubins=False))
    except EnvironmentBlocked as e:
        pytest.skip(str(e))
    assert result.ok, (source, [d.short() for d in result.diagnostics if d.level == "error"])


_SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None)


@settings(max_examples=2, **_SETTINGS)
@given(source=kernels())
def test_complete_draft_builds(tmp_path_factory, source):
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed")
    _check(tmp_path_factory, source, build=True)


@pytest.mark.heavy
@settings(max_examples=40, **_SETTINGS)
@given(source=kernels())
def test_complete_draft_builds_many(tmp_path_factory, source):
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed")
    _check(tmp_path_factory, source, build=True)
