"""CPU side of tileport.validators.correctness: the comparison and its guards against fake passes,
the declaration/tolerance reading, the poisoning of allocations and the op modules' check hooks.

No torch and no GPU needed: the comparison is duck-typed, so numpy arrays go through the very
function that compares torch tensors on the GPU (tests/validators/test_gpu_examples.py runs that).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tileport.validators import correctness as corr

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.py"))


def _ref(n=4096, seed=0):
    return np.random.default_rng(seed).standard_normal(n)


def test_close_output_passes_and_records_errors():
    ref = _ref()
    c = corr.compare(ref + 1e-5, ref, atol=1e-4, rtol=1e-4)
    assert c.ok and c.reason == "ok" and c.mismatches == 0 and c.numel == ref.size
    assert c.max_abs_err == pytest.approx(1e-5) and 0 < c.rel_l2_err < 1e-4 and c.max_rel_err > 0


def test_nan_poison_left_anywhere_fails():
    ref = _ref()
    out = ref.copy()
    out[1234] = np.nan  # one element the kernel never wrote
    c = corr.compare(out, ref, atol=1e-2, rtol=1e-2)
    assert not c.ok and c.nonfinite == 1 and "non-finite" in c.reason


def test_inf_output_fails():
    ref = _ref()
    out = ref.copy()
    out[0] = np.inf
    assert not corr.compare(out, ref, 1e-2, 1e-2).ok


def test_all_zero_output_fails_even_when_within_atol():
    ref = np.full(1000, 1e-4)  # every value under atol: an unwritten (zeroed) output would pass allclose
    c = corr.compare(np.zeros_like(ref), ref, atol=1e-2, rtol=1e-2)
    assert not c.ok and "all zeros" in c.reason


def test_small_values_missing_wholesale_fail_normwise():
    # softmax rows of width 4096 are ~2.4e-4 each, far below a float16 atol of 1e-2: half the rows
    # left at zero pass the elementwise test but not the norm-wise relative error.
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((64, 4096))
    ref = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    out = ref.copy()
    out[::2] = 0
    c = corr.compare(out, ref, atol=1e-2, rtol=1e-2)
    assert c.mismatches == 0 and not c.ok and "norm-wise" in c.reason and c.rel_l2_err > 0.5


def test_elementwise_mismatch_fails_and_counts():
    ref = _ref()
    out = ref.copy()
    out[:10] += 1.0
    c = corr.compare(out, ref, atol=1e-2, rtol=1e-2)
    assert not c.ok and c.mismatches == 10 and c.max_abs_err == pytest.approx(1.0)


def test_shape_mismatch_and_bad_reference_and_empty_fail():
    ref = _ref(10)
    assert "shape" in corr.compare(ref[:5], ref, 1, 1).reason
    bad = ref.copy()
    bad[3] = np.nan
    assert "reference" in corr.compare(ref, bad, 1, 1).reason
    assert not corr.compare(np.zeros(0), np.zeros(0), 1, 1).ok


def test_fallback_tolerances_equal_the_config_defaults():
    from tileport.config import _default_tolerances

    assert corr.FALLBACK_TOLERANCES == {k: (t.atol, t.rtol) for k, t in _default_tolerances().items()}
    assert corr.default_tolerances() == corr.FALLBACK_TOLERANCES


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_plain_and_validated_declarations_agree(path):
    validated = corr.read_declaration(path)
    raw = corr.read_plain_declaration(path)
    assert validated["dtypes"] == raw["dtypes"] and validated["shapes"] == raw["shapes"]
    assert validated["tolerances"] == {k: {n: float(x) for n, x in v.items()} for k, v in raw.get("tolerances", {}).items()}
    defaults = corr.FALLBACK_TOLERANCES
    for dtype in validated["dtypes"]:
        expected = raw.get("tolerances", {}).get(dtype)
        got = corr.tolerance_for(validated, dtype, defaults)
        assert got == ((expected["atol"], expected["rtol"]) if expected else defaults[dtype])


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_has_wrapper_reference_and_inputs_with_torch_imported_lazily(path):
    tree = ast.parse(path.read_text())
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {path.stem, "reference", "make_inputs"} <= set(functions)
    assert [a.arg for a in functions["make_inputs"].args.args] == ["shape", "dtype", "device", "seed"]
    # the reference takes the wrapper's arguments (it may drop trailing tuning-only ones, never add)
    wrapper_args = [a.arg for a in functions[path.stem].args.args]
    ref_args = [a.arg for a in functions["reference"].args.args]
    assert ref_args == wrapper_args[:len(ref_args)] and len(ref_args) >= len(wrapper_args) - 1
    top_imports = [a.name for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
                   for a in n.names] + [n.module for n in tree.body if isinstance(n, ast.ImportFrom)]
    assert "torch" not in top_imports
    assert "reference(" in (ast.get_docstring(tree) or "")


class _FakeTensor:
    def __init__(self, floating):
        self.floating, self.filled = floating, None

    def is_floating_point(self):
        return self.floating

    def fill_(self, value):
        self.filled = value
        return self


def test_poisoned_allocations_fill_floating_tensors_with_nan_and_restore():
    class FakeTorch:
        @staticmethod
        def empty(*shape, dtype="f"):
            return _FakeTensor(dtype == "f")

        @staticmethod
        def empty_like(t):
            return _FakeTensor(t.floating)

    fake = FakeTorch()
    original = fake.empty
    with corr.poisoned_allocations(fake) as count:
        a = fake.empty(3)
        b = fake.empty(3, dtype="i")
        c = fake.empty_like(a)
    assert np.isnan(a.filled) and b.filled is None and np.isnan(c.filled) and count[0] == 2
    assert fake.empty == original


def test_case_seed_is_stable_and_distinct():
    a = corr.case_seed("softmax", "float16", {"m": 1, "n": 2}, {})
    assert a == corr.case_seed("softmax", "float16", {"n": 2, "m": 1}, {})
    assert a != corr.case_seed("softmax", "float16", {"m": 1, "n": 2}, {"scale": 0.37})
    assert a != corr.case_seed("softmax", "bfloat16", {"m": 1, "n": 2}, {})


def test_case_line_reports_errors():
    r = corr.CaseResult("softmax", "float16", {"m": 4, "n": 8}, {"scale": 0.5}, ok=True, atol=1e-2, rtol=1e-2,
                        max_abs_err=1e-4, max_rel_err=1e-3, rel_l2_err=2e-4, poisoned=1, seconds=0.5)
    assert r.line().startswith("PASS softmax float16 [m=4,n=8] scale=0.5: max_abs=0.0001")


def test_cli_without_torch_exits_2_with_a_clear_message():
    try:
        import torch  # noqa: F401
        pytest.skip("torch is installed here; this checks the no-torch path")
    except ImportError:
        pass
    run = subprocess.run([sys.executable, "-m", "tileport.validators.correctness", str(EXAMPLES[0]), "--json"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "torch is not installed" in run.stderr
