"""Launch capture on the GPU host behind `[gpu] command_prefix` (tileport.analysis.remote / hostcapture), when capture
on this CPU machine records no launch of a kernel.

The op here picks its tile size with a helper module only the GPU host's interpreter has (as real projects pick it
from a vendor extension built there): on this machine its wrapper raises before launching. The "GPU host" is this
machine reached through the prefix `bash -c` (real shells, real copies, a real second interpreter: the torch one with
that helper on its path, like a GPU host's environment); the copy goes to a temporary remote_dir."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tileport.config import Config
from tileport.errors import UserError
from tileport.analysis import analyze_op

from test_analyze_capture import torch_python  # noqa: F401  (the shared fixture)

OP = '''
import torch
import cuda.tile as ct

try:
    from vendor_tiles import best_block  # built on the GPU host only
except ImportError:
    best_block = None


@ct.kernel
def scale_kernel(x, out, BLOCK: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(out, index=(i,), tile=ct.load(x, index=(i,), shape=(BLOCK,)) * 2)


def scale(x):
    if best_block is None:
        raise RuntimeError("vendor_tiles is not built on this machine")
    block = best_block(x.shape[0])
    out = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(x.shape[0], block), 1, 1), scale_kernel, (x, out, block))
    return out
'''

TEST = '''
import torch
from scaler.ops import scale


def test_scale():
    x = torch.randn(4096, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(scale(x), x * 2, rtol=1e-3, atol=1e-3)
'''


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "proj"
    (root / "scaler").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'scaler'\n")
    (root / "scaler" / "__init__.py").write_text("")
    (root / "scaler" / "ops.py").write_text(textwrap.dedent(OP))
    (root / "tests" / "test_ops.py").write_text(textwrap.dedent(TEST))
    return root


def _gpu_host_python(tmp_path: Path, torch_python: str) -> str:  # noqa: F811
    """The GPU host's interpreter: the torch one, with the vendor helper the op imports on its path."""
    vendor = tmp_path / "gpu-host-site"
    vendor.mkdir()
    (vendor / "vendor_tiles.py").write_text("def best_block(n):\n    return 512 if n >= 4096 else 128\n")
    py = tmp_path / "gpu-python"
    py.write_text(f'#!/bin/sh\nPYTHONPATH="$PYTHONPATH:{vendor}" exec {torch_python} "$@"\n')
    py.chmod(0o755)
    return str(py)


@pytest.mark.slow
def test_capture_on_the_gpu_host_resolves_what_the_cpu_capture_missed(project, tmp_path, torch_python):  # noqa: F811
    op = project / "scaler" / "ops.py"
    # capture on fake arrays reaches no launch: the one line says how to capture with real ones
    with pytest.raises(UserError, match=r"no ct.launch of scale_kernel.*set \[gpu\] command_prefix"):
        analyze_op(op, targets=["sm_90"], out_dir=tmp_path / "cpu", run_tileiras=False, python=torch_python)

    remote = tmp_path / "remote"
    cfg = Config().model_copy(update={"gpu": Config().gpu.model_copy(update={
        "command_prefix": "bash -c", "remote_dir": str(remote), "python": _gpu_host_python(tmp_path, torch_python)})})
    a = analyze_op(op, targets=["sm_90"], out_dir=tmp_path / "host", run_tileiras=False, python=torch_python,
                   config=cfg)
    assert not a.unresolved
    (v,) = a.variants
    assert v.kernel == "scale_kernel" and v.constants == {"BLOCK": 512}  # the helper's value, for the test's size
    assert "tile<512xf16>" in (Path(a.out_dir) / v.instances[0].builds[0].text.path).read_text()
    assert any("launch capture on the GPU host (bash -c)" in n and "test_ops.py" in n for n in a.notes), a.notes
    # the launch the test made there is a configuration D and E judge, with the test's tolerance
    assert [c.grid for c in a.capture.configurations] == ["(8, 1, 1)"]
    assert a.tolerances["float16"].rtol == 1e-3
    # what travelled (the project, tileport's analysis package) and the run there are recorded commands
    assert (remote / "capture-ops" / "project" / "tests" / "test_ops.py").is_file()
    assert any("tileport.analysis.hostcapture" in " ".join(c.argv) for c in a.commands)


@pytest.mark.slow
def test_a_gpu_host_that_cannot_capture_is_one_note(project, tmp_path, torch_python):  # noqa: F811
    cfg = Config().model_copy(update={"gpu": Config().gpu.model_copy(update={
        "command_prefix": "bash -c", "remote_dir": str(tmp_path / "remote"), "python": torch_python})})
    # the GPU host's interpreter lacks the helper too: one line says what happened there (and gives no advice to
    # set the prefix that is set)
    with pytest.raises(UserError) as e:
        analyze_op(project / "scaler" / "ops.py", targets=["sm_90"], out_dir=tmp_path / "o", run_tileiras=False,
                   python=torch_python, config=cfg)
    msg = str(e.value)
    assert "on the GPU host (bash -c) capture recorded nothing either" in msg and "vendor_tiles is not built" in msg
    assert "set [gpu] command_prefix" not in msg and "\n" not in msg
