"""The coverage table (docs/draft_coverage.md) classifies every public name of the installed cuda.tile, its
cutile-rs counterparts exist in the cutile 0.5 sources, the committed table is what the generator writes, and a
named gap reaches the user as a hole saying "cutile-rs 0.5 has no X"."""

from __future__ import annotations

import glob
import re
import textwrap
from pathlib import Path

import pytest

from tileport.draft import coverage
from tileport.draft.coverage import A, G, T, classify, render


def test_every_public_cuda_tile_name_is_classified():
    rows, missing = classify()
    assert missing == [], f"unclassified cuda.tile names (classify them in coverage.py): {missing}"
    names = {n for _, n, _ in rows}
    # the keyword arguments the issue names are rows of their own
    for kw in ("load(..., allow_tma=)", "load(..., padding_mode=)", "load(..., latency=)", "exp2(..., flush_to_zero=)"):
        assert kw in names


def test_an_unclassified_name_fails_the_check(monkeypatch):
    monkeypatch.delitem(coverage.FUNCTIONS, "cumsum")
    _, missing = classify()
    assert "cumsum" in missing
    with pytest.raises(SystemExit, match="unclassified cuda.tile names: cumsum"):
        render()


def test_committed_table_is_current():
    assert coverage.DOC.read_text(encoding="utf-8") == render(), \
        "docs/draft_coverage.md is stale: run python scripts/gen_coverage.py"


def _crate_source() -> str | None:
    found = sorted(glob.glob(str(Path.home() / ".cargo/registry/src/*/cutile-0.5.0/src/_core.rs")))
    return Path(found[-1]).read_text(encoding="utf-8") if found else None


def test_translated_counterparts_exist_in_the_cutile_sources():
    src = _crate_source()
    if src is None:
        pytest.skip("cutile 0.5.0 sources are not in the cargo registry (build a crate once)")
    defined = set(re.findall(r"\bfn ([a-z_0-9]+)", src)) | set(re.findall(r"pub (?:struct|mod) ([A-Za-z_0-9]+)", src))
    absent = []
    for kind, name, row in classify()[0]:
        if row.status not in (T, A) or kind not in ("function", "keyword"):
            continue
        for ident in re.findall(r"\b([a-z][a-z_0-9]{2,})\b", row.rust):
            if "_" in ident and ident not in defined and ident not in ("const_array", "partition_permuted", "num_cta_in_cga",
                                                                      "partition_mut", "tensor_strides_n"):
                absent.append(f"{name}: {ident}")
    assert absent == []


GAP_OP = textwrap.dedent('''
    import cuda.tile as ct

    @ct.kernel
    def top1_kernel(x, out, TILE: ct.Constant[int]):
        b = ct.bid(0)
        t = ct.load(x, index=(b, 0), shape=(1, TILE))
        ct.store(out, index=(b, 0), tile=ct.argmax(t, axis=1, keepdims=True))

    def top1(x, out):
        import torch
        ct.launch(torch.cuda.current_stream(), (x.shape[0], 1, 1), top1_kernel, (x, out, 128))
    ''')


def test_a_named_gap_is_a_hole_that_says_what_cutile_rs_lacks(tmp_path):
    from tileport.draft import draft_port
    from tileport.analysis import analyze_op
    op = tmp_path / "top1.py"
    op.write_text(GAP_OP, encoding="utf-8")
    d = draft_port(analyze_op(op, targets=["sm_90"], out_dir=tmp_path / "a", run_tileiras=False, warm=True))
    (hole,) = d.holes
    assert hole.gap and hole.what == "ct.argmax" and "cutile-rs 0.5 has no argmax reduction" in str(hole)
    assert "closest: reduce over (value, index) pairs" in str(hole)
    assert f"// TILEPORT-HOLE {hole.id} BEGIN unsupported: ct.argmax at top1.py:8:" in d.kernel_rs
    assert row_status("argmax") == G


def row_status(name: str) -> str:
    return coverage.FUNCTIONS[name].status


def test_every_translated_function_is_built_by_a_test_against_the_reference_ir():
    # the kernels that tests build and IR-self-check: tests/draft/test_draft_build_core.py (default suite), the examples,
    # tests/data/draft_heldout and tests/data/draft_corpus (tests/draft/test_draft_build.py, heavy), and
    # tests/data/draft_realworld (tests/draft/test_draft_realworld.py: every complete draft built, slow)
    repo = Path(__file__).resolve().parents[2]
    sources = [p.read_text(encoding="utf-8") for p in
               [*repo.glob("examples/*.py"), *repo.glob("tests/data/draft_heldout/*.py"),
                *repo.glob("tests/data/draft_corpus/**/*.py"), *repo.glob("tests/data/draft_realworld/**/*.py"), repo / "tests" / "draft" / "test_draft_build_core.py"]]
    text = "\n".join(sources)
    untested = [name for name, row in coverage.FUNCTIONS.items()
                if row.status in (T, A) and name not in ("kernel", "function")
                and not re.search(rf"\bct\.{name}\(", text)]
    assert untested == [], f"translated functions no build test exercises: {untested}"
