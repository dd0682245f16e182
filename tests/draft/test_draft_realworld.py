"""Complete means right, over the real-world-shaped corpus (tests/data/draft_realworld, issue #35): every kernel
whose draft is complete (no holes, named gaps included) builds with real cargo + cutile 0.5.0 and passes its IR
self-check (PASS / PASS_WITH_NOTES) against the real cuda-tile reference export. Slow (one cargo build per op: the
op's complete kernels share one crate).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tileport.draft import draft_port
from tileport.errors import EnvironmentBlocked
from tileport.analysis import analyze_op
from tileport.validators.rust.build import BuildOptions, build_crate
from tileport.validators.rust.crate import crate_cache_root, write_crate
from tileport.validators.rust.selfcheck import self_check
from tileport.validators.tileir.diff import Severity

pytestmark = [pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "draft_realworld"
if shutil.which("cargo") is None:
    pytest.skip("cargo is not installed", allow_module_level=True)


def _ops() -> list[str]:
    return sorted(f"{p.parent.name}/{p.stem}" for part in ("tune", "heldout") for p in (CORPUS / part).glob("*.py")
                  if not p.name.startswith("_"))


@pytest.fixture(scope="module")
def torch_py() -> str:
    from benchmarks.draft_table import torch_python
    py = torch_python()
    if subprocess.run([py, "-c", "import torch, cuda.tile"], capture_output=True).returncode != 0:
        pytest.skip("no interpreter with torch + cuda-tile (scripts/setup-torch-venv.sh)")
    return py


@pytest.mark.parametrize("op", _ops())
def test_a_complete_draft_builds_and_passes_its_ir_self_check(op, torch_py, tmp_path):
    analysis = analyze_op(CORPUS / f"{op}.py", targets=["sm_90"], out_dir=tmp_path / "ref", run_tileiras=False,
                          warm=True, python=torch_py)
    complete = [k for k in analysis.kernels if not draft_port(analysis, kernel=k.name).holes]
    if not complete:
        pytest.skip(f"{op}: no kernel drafts complete")
    both = analysis.model_copy(update={"kernels": complete})
    draft = draft_port(both)
    assert draft.holes == []
    layout = write_crate(crate_cache_root() / f"test-draft-realworld-{op.replace('/', '-')}", draft.spec,
                         draft.kernel_rs)
    try:
        result = build_crate(layout, BuildOptions(cubins=False))
    except EnvironmentBlocked as e:
        pytest.skip(str(e))
    assert result.ok, [d.short() for d in result.diagnostics if d.level == "error"][:5]
    report = self_check(result, analysis, layout.spec)
    assert len(report.pairs) == len(layout.spec.jobs()) and not report.unmatched
    bad = {(p.entry, p.variant): sorted(f"{f.check}: {f.message}"[:160] for f in p.findings
                                        if f.severity == Severity.ERROR)
           for p in report.pairs if p.verdict not in ("PASS", "PASS_WITH_NOTES")}
    assert not bad, bad
