"""Stage A from the op's own tests, `__main__` block and scripts (issue #20), and the better guessing.

A small project is written the way real libraries are laid out (a package of ops, pytest files in a separate
tests/ tree, parametrized over shapes and dtypes with per-dtype tolerances); stage A runs it with the real torch
interpreter (fake CUDA tensors on this CPU machine) and real cuda-tile exports and tileirdisasm. Skipped when the
torch interpreter is absent, failed then under TILEPORT_REQUIRE_TORCH=1, as in test_analyze_capture.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tileport.config import Config
from tileport.errors import UserError
from tileport.analysis import analyze_op
from tileport.analysis.testfind import discover, resolve
from tileport.analysis.wrapper_hints import hints_for

from test_analyze_capture import torch_python  # noqa: F401  (the shared fixture)

REPO = Path(__file__).resolve().parents[2]

KERNELS = '''\
import cuda.tile as ct


@ct.kernel
def scale_rows(x, y, alpha, TILE: ct.Constant[int]):
    r, c = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(r, c), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(r, c), tile=(t.astype(ct.float32) * alpha).astype(y.dtype))
'''

TEST = '''\
import pytest
import torch
import cuda.tile as ct

from proj.kern import scale_rows

TOL = {torch.float16: dict(rtol=1e-3, atol=2e-3), torch.float32: dict(rtol=1e-6, atol=1e-6)}


def run(x, tile):
    y = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (x.shape[0], (x.shape[1] + tile - 1) // tile, 1), scale_rows,
              (x, y, 2.0, tile))
    return y


@pytest.mark.parametrize("M,N,tile", [(64, 384, 128), (8, 1000, 256)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_scale(M, N, tile, dtype):
    x = torch.randn(M, N, device="cuda", dtype=dtype)
    assert torch.cuda.get_device_properties(0).multi_processor_count > 0
    torch.testing.assert_close(run(x, tile), x * 2, **TOL[dtype])
    assert run(x, tile).sum().item() != 12345  # a data-dependent read must not stop the capture
'''


def project(root: Path, with_tests: bool = True) -> Path:
    (root / "proj").mkdir(parents=True)
    (root / "proj" / "__init__.py").write_text("")
    (root / "proj" / "kern.py").write_text(KERNELS)
    if with_tests:
        (root / "tests").mkdir()
        (root / "tests" / "test_kern.py").write_text(TEST)
    return root / "proj" / "kern.py"


def analyse(op: Path, out: Path, python: str, **kw):
    return analyze_op(op, targets=["sm_90"], out_dir=out, run_tileiras=False, python=python, **kw)


def test_kernel_only_module_is_analysed_from_the_tests_that_launch_it(torch_python, tmp_path):
    op = project(tmp_path / "p")
    with pytest.raises(UserError) as e:  # without its tests: one line saying which --tests to give
        analyse(op, tmp_path / "no", torch_python, discover_tests=False)
    msg = str(e.value)
    assert "\n" not in msg and "--tests tests/test_kern.py" in msg and "launches none of its kernels" in msg
    assert not (tmp_path / "no").exists()

    a = analyse(op, tmp_path / "out", torch_python)  # tests/test_kern.py is found
    assert a.tests == [str((tmp_path / "p" / "tests" / "test_kern.py").resolve())]
    assert sorted(v.name for v in a.variants) == ["TILE=128", "TILE=256"]
    assert a.dtypes == ["float16", "float32"]
    cfgs = a.configurations("test")
    assert len(cfgs) == 4 and all(c.kernel == "scale_rows" for c in cfgs)
    assert {tuple(c.args[:1]) for c in cfgs} == {("float16[64x384]",), ("float16[8x1000]",), ("float32[64x384]",),
                                                  ("float32[8x1000]",)}
    assert all("test_kern.py::test_scale[" in c.origin for c in cfgs)
    assert {c.grid for c in cfgs} == {"(64, 3, 1)", "(8, 4, 1)"}
    # the tests' own tolerances, with the line they come from
    assert a.tolerances["float16"].atol == 2e-3 and a.tolerances["float16"].rtol == 1e-3
    assert a.tolerances["float32"].atol == 1e-6
    assert a.tolerance_sources["float16"].startswith("tests: test_kern.py:22 (")
    on_disk = json.loads((tmp_path / "out" / "analysis.json").read_text())
    assert on_disk["capture"]["configurations"][0]["source"] == "test"


BROKEN_TESTS = {
    "test_hang.py": "import time\n\ndef test_forever():\n    while True:\n        time.sleep(0.01)\n",
    "test_missing.py": "import no_such_module_xyz\n\ndef test_x():\n    pass\n",
}


def test_broken_hanging_tests_and_main_block_are_one_line_each(torch_python, tmp_path):
    op = project(tmp_path / "p", with_tests=False)
    (tmp_path / "p" / "tests").mkdir()
    for name, text in BROKEN_TESTS.items():
        (tmp_path / "p" / "tests" / name).write_text(text)
    # the op module's own __main__ block launches it; a bench script given with --tests does too
    op.write_text(KERNELS + textwrap.dedent('''
        if __name__ == "__main__":
            import torch
            x = torch.randn(16, 512, device="cuda", dtype=torch.bfloat16)
            ct.launch(torch.cuda.current_stream(), (16, 4, 1), scale_rows, (x, torch.empty_like(x), 0.5, 128))
        '''))
    bench = tmp_path / "p" / "bench_kern.py"
    bench.write_text("import torch\nimport cuda.tile as ct\nfrom proj.kern import scale_rows\n"
                     "x = torch.randn(4, 4096, device='cuda', dtype=torch.float16)\n"
                     "ct.launch(torch.cuda.current_stream(), (4, 8, 1), scale_rows, (x, x, 1.0, 512))\n")
    config = Config.model_validate({"analysis": {"tests_timeout_s": 20}})
    a = analyse(op, tmp_path / "out", torch_python, config=config,
                tests=[str(tmp_path / "p" / "tests"), str(bench)])
    errors = a.capture.errors
    assert {c.source for c in a.configurations()} == {"main", "bench"}, errors
    assert sorted(v.name for v in a.variants) == ["TILE=128", "TILE=512"]
    assert set(a.dtypes) == {"bfloat16", "float16"}
    errors = a.capture.errors
    assert any("test_missing.py" in e and "no_such_module_xyz" in e for e in errors), errors
    assert any("time limit in" in e and "test_hang.py::test_forever" in e for e in errors), errors
    assert all("\n" not in e and "Traceback" not in e for e in errors)


def test_tests_option_that_does_not_exist_is_one_line(tmp_path):
    op = project(tmp_path / "p", with_tests=False)
    r = subprocess.run([sys.executable, "-m", "tileport", "analyze", str(op), "--tests", "nope/test_x.py",
                        "--out", str(tmp_path / "o")], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "nope/test_x.py: no such test file or directory (from --tests)" in r.stderr
    assert not (tmp_path / "o").exists()


def test_discovery_finds_the_nearest_tests_tree_and_config_paths(tmp_path):
    op = project(tmp_path / "p")
    (tmp_path / "p" / "tests" / "sub").mkdir()
    (tmp_path / "p" / "tests" / "sub" / "kern_test.py").write_text("")
    (tmp_path / "p" / "tests" / "test_other.py").write_text("")
    assert [p.name for p in discover(op)] == ["kern_test.py", "test_kern.py"]
    got = resolve(op, [], [str(tmp_path / "p" / "tests" / "test_other.py")], True)
    assert [p.name for p in got] == ["test_other.py", "kern_test.py", "test_kern.py"]
    with pytest.raises(UserError, match=r"\[analysis\] tests in tileport.toml"):
        resolve(op, [], [str(tmp_path / "missing.py")], True)


def test_wrapper_hints_read_rank_and_dtype_from_the_source(tmp_path):
    src = tmp_path / "w.py"
    src.write_text(textwrap.dedent('''
        def attn(q, k, v, cache, positions, w):
            B, H, S, D = q.shape
            assert cache.dtype == torch.float32, "cache must be float32"
            assert positions.dtype in (torch.int32, torch.int64)
            n = k.size(-3) + v.shape[2]
            assert w.dim() == 1
        '''))
    import importlib.util
    spec = importlib.util.spec_from_file_location("w_hints", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    h = hints_for(mod.attn)
    assert h.exact == {"q": 4, "w": 1}
    assert h.at_least == {"k": 3, "v": 3}
    assert h.dtypes == {"cache": ["float32"], "positions": ["int32", "int64"]}


GUESS_OP = '''\
import math
import torch
import cuda.tile as ct

HEADS_TILE = 64


@ct.kernel
def attn_scale(q, cache, o, TILE_S: ct.Constant[int], D: ct.Constant[int]):
    bh, s = ct.bid(0), ct.bid(1)
    t = ct.load(q, index=(bh, s, 0), shape=(1, TILE_S, D), padding_mode=ct.PaddingMode.ZERO)
    c = ct.load(cache, index=(s, 0), shape=(TILE_S, D), padding_mode=ct.PaddingMode.ZERO)
    ct.store(o, index=(bh, s, 0), tile=(t.astype(ct.float32) * ct.reshape(c, (1, TILE_S, D))).astype(o.dtype))


def scaled(q, cache):
    B, H, S, D = q.shape
    assert cache.dtype == torch.float32, "cache should be float32"
    assert cache.shape[1] == D and cache.size(0) >= S
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    assert props.multi_processor_count >= 100
    o = torch.empty(B * H, S, D, device="cuda", dtype=q.dtype)
    ct.launch(torch.cuda.current_stream(), (B * H, math.ceil(S / HEADS_TILE), 1), attn_scale,
              (q.reshape(B * H, S, D), cache, o, HEADS_TILE, D))
    return o.view(B, H, S, D)
'''


def test_guessing_reads_rank_and_dtype_from_the_wrapper(torch_python, tmp_path):
    op = tmp_path / "attn_scale.py"
    op.write_text(GUESS_OP)
    a = analyse(op, tmp_path / "out", torch_python)
    assert [v.name for v in a.variants][:1] and all(v.kernel == "attn_scale" for v in a.variants)
    cfg = a.configurations("guess")[0]
    q, cache = cfg.args[0], cfg.args[1]
    assert q.count("x") == 2 and cache.startswith("float32[")  # reshaped 4-D q; the float32 cache its assert asks
    assert all(c.source == "guess" for c in a.configurations())


FAKE_CUDA = '''
import torch
from tileport.analysis.fakecuda import fake_cuda, SM_COUNT
with fake_cuda() as fc:
    assert torch.cuda.get_device_properties(0).multi_processor_count == SM_COUNT
    x = torch.randn(8, 4, device="cuda")
    assert x[torch.arange(3, device="cuda")].shape == (3, 4) and x[:, :2].shape == (8, 2) and x[2].shape == (4,)
    x[0] = 1.0
    assert torch.ones(3).cuda().device.type == "cuda" and torch.ones(3).to("cuda").device.type == "cuda"
    m = torch.nn.Linear(4, 4).cuda()
    assert m.weight.device.type == "cuda"
    ln = torch.nn.LayerNorm(4).cuda()  # a C++ kernel that aborts on a fake leaf requiring grad
    assert ln(x).shape == (8, 4)
    assert x.t().contiguous().shape == (4, 8)
    e = torch.cuda.Event(enable_timing=True); e.record()
    with torch.cuda.stream(torch.cuda.Stream()):
        y = torch.empty(2, device="cuda")
    assert x.sum().item() == 1.0 and fc.data_reads == ["item"]
print("ok")
'''


def test_fake_cuda_answers_what_wrappers_and_tests_call(torch_python):
    r = subprocess.run([torch_python, "-c", FAKE_CUDA], cwd=REPO, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:]
