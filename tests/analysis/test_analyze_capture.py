"""Stage A on ops shaped like real-world code: launch capture, packages, per-kernel results, the interpreter.

The torch tests run the op's own wrapper in a separate interpreter that has torch (made by
`scripts/setup-torch-venv.sh`, which `scripts/setup.sh --test` runs): fake CUDA tensors on this
CPU machine, real cuda-tile exports and tileirdisasm. They skip when that interpreter is absent,
except with TILEPORT_REQUIRE_TORCH=1 (CI), where they fail. The no-torch tests use tileport's own
interpreter, which has no torch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tileport.analysis import analyze_op
from tileport.analysis.schema import Analysis

REPO = Path(__file__).resolve().parents[2]
HELDOUT = REPO / "tests" / "data" / "heldout_ops"
TORCH_VENV_PYTHON = Path(os.environ.get("TILEPORT_TORCH_VENV", Path.home() / ".cache/tileport/torch-venv")) \
    / "bin" / "python"


def _torch_python() -> str | None:
    py = os.environ.get("TILEPORT_TORCH_PYTHON") or str(TORCH_VENV_PYTHON)
    if not Path(py).is_file():
        return None
    ok = subprocess.run([py, "-c", "import torch, cuda.tile, pydantic"], capture_output=True, timeout=120)
    return py if ok.returncode == 0 else None


@pytest.fixture(scope="session")
def torch_python() -> str:
    py = _torch_python()
    if py is None:
        why = f"no interpreter with torch + cuda-tile at {TORCH_VENV_PYTHON} (run scripts/setup-torch-venv.sh)"
        if os.environ.get("TILEPORT_REQUIRE_TORCH") == "1":
            pytest.fail(f"TILEPORT_REQUIRE_TORCH=1 but {why}")
        pytest.skip(why)
    return py


def tileport(*args: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tileport", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def analyse(path: Path, out: Path, python: str | None) -> Analysis:
    return analyze_op(path, targets=["sm_90"], out_dir=out, run_tileiras=False, python=python)


def ir_texts(a: Analysis) -> dict[str, str]:
    """variant name / dtype -> Tile IR text"""
    out = {}
    for v, inst in a.instances():
        out[f"{v.kernel}[{v.name}]/{inst.dtype}"] = (Path(a.out_dir) / inst.builds[0].text.path).read_text()
    return out


# ---------------------------------------------------------------------------------------------
# With torch: the held-out ops, unmodified


@pytest.mark.slow
def test_autotuned_op_gives_one_variant_per_search_space_config(torch_python, tmp_path):
    a = analyse(HELDOUT / "autotuned_matmul.py", tmp_path / "mm", torch_python)
    assert a.unresolved == [] and a.capture is not None and a.capture.mode == "fake tensors (CPU)"
    names = {v.name for v in a.variants if v.kernel == "gemm_kernel"}
    # the three configs of the search space, each with the occupancy hint hints_fn gives it (an explicit
    # occupancy=1 differs from the module-level kernel, which sets none)
    assert names == {"TILE_M=128,TILE_N=128,TILE_K=32,occupancy=1", "TILE_M=64,TILE_N=128,TILE_K=64,occupancy=2",
                     "TILE_M=128,TILE_N=64,TILE_K=32,occupancy=2"}
    assert any("exhaustive_search" in s for v in a.variants for s in v.sources)
    # after the search, the wrapper's own launch of the chosen config was reached too
    assert any(ln.captured and ln.line == 49 for ln in a.launches), [(ln.line, ln.entry) for ln in a.launches]
    texts = ir_texts(a)
    assert any("tile<64x64xf16>" in t for t in texts.values())  # TILE_M x TILE_K = 64x64 really compiled
    assert {inst.dtype for _, inst in a.instances()} == {"float16", "float32"}


@pytest.mark.slow
def test_factory_kernel_is_found_and_its_closure_values_make_variants(torch_python, tmp_path):
    a = analyse(HELDOUT / "factory_scale.py", tmp_path / "f", torch_python)
    assert [k.name for k in a.kernels] == ["scale_kernel"]
    (v,) = [v for v in a.variants]
    assert v.constants == {"TILE": 1024} and "relu=false" in v.name
    launch = a.launches[0]
    assert launch.captured and launch.grid.startswith("(") and launch.entry.startswith("scale(")


@pytest.mark.slow
def test_package_op_with_relative_imports_and_run_time_constant(torch_python, tmp_path):
    a = analyse(HELDOUT / "normpkg" / "layernorm.py", tmp_path / "ln", torch_python)
    (v,) = [v for v in a.variants]
    assert v.kernel == "_layer_norm_fwd" and v.constants == {"TILE_N": 128}  # next_power_of_2(128) and (100)
    assert all("tile<1x128x" in t for t in ir_texts(a).values())


@pytest.mark.slow
def test_kernel_chosen_by_expression_reaches_both_kernels(torch_python, tmp_path):
    a = analyse(HELDOUT / "masked_or_aligned.py", tmp_path / "g", torch_python)
    assert {v.kernel for v in a.variants} == {"gelu_aligned", "gelu_masked"}
    masked = [t for k, t in ir_texts(a).items() if k.startswith("gelu_masked")]
    assert masked and all("store_ptr_tko" in t for t in masked)


@pytest.mark.slow
def test_one_kernel_never_launched_the_other_still_analysed(torch_python, tmp_path):
    op = tmp_path / "two.py"
    op.write_text(textwrap.dedent('''
        import torch
        import cuda.tile as ct

        @ct.kernel
        def used(x, y, T: ct.Constant[int]):
            i = ct.bid(0)
            ct.store(y, index=(i,), tile=ct.load(x, index=(i,), shape=(T,)) * 2)

        @ct.kernel
        def legacy(x, y, T: ct.Constant[int]):
            i = ct.bid(0)
            ct.store(y, index=(i,), tile=ct.load(x, index=(i,), shape=(T,)))

        def double(x):
            y = torch.empty_like(x)
            T = 1 << (x.numel() - 1).bit_length()
            ct.launch(torch.cuda.current_stream(), (1,), used, (x, y, min(T, 1024)))
            return y
    '''))
    a = analyse(op, tmp_path / "out", torch_python)
    assert {v.kernel for v in a.variants} == {"used"}
    (u,) = a.unresolved
    assert u.kernel == "legacy"
    assert "no ct.launch of legacy reached" in u.message and "double(" in u.message and "launches seen: used" in u.message
    on_disk = json.loads((tmp_path / "out" / "analysis.json").read_text())
    assert on_disk["unresolved"][0]["kernel"] == "legacy"


@pytest.mark.slow
def test_op_supplied_inputs_function_decides_what_is_captured(torch_python, tmp_path):
    op = tmp_path / "rows.py"
    op.write_text(textwrap.dedent('''
        import torch
        import cuda.tile as ct

        @ct.kernel
        def row_scale(x, y, N: ct.Constant[int]):
            r = ct.bid(0)
            ct.store(y, index=(r, 0), tile=ct.load(x, index=(r, 0), shape=(1, N)) * 3)

        def scale_rows(x):
            y = torch.empty_like(x)
            ct.launch(torch.cuda.current_stream(), (x.shape[0],), row_scale, (x, y, x.shape[1]))
            return y

        def tileport_inputs(op, device):
            for n in (64, 256):
                yield op.scale_rows, (torch.empty((8, n), dtype=torch.bfloat16, device=device),), {}
    '''))
    a = analyse(op, tmp_path / "out", torch_python)
    assert sorted(v.constants["N"] for v in a.variants) == [64, 256]
    assert {inst.dtype for _, inst in a.instances()} == {"bfloat16"}
    assert a.capture.calls == 2


@pytest.mark.slow
def test_launches_passing_none_are_named_and_the_op_main_check_runs(torch_python, tmp_path):
    # generated model code forwards `bias=None` straight into ct.launch; cuda-tile 1.7 refuses None as a kernel
    # argument, so those launches make no variant and no configuration, and each says why in one line
    a = analyse(REPO / "tests" / "data" / "optional_args" / "linear_bias.py", tmp_path / "o", torch_python)
    skipped = [n for n in a.notes if "skipped: it passes None for" in n]
    assert any("'bias'" in n and "refuses as a kernel argument" in n for n in skipped), a.notes
    # its statically resolved kernel still ran the op's own __main__ check: the tensor launch is a configuration
    # to judge and time, the None launch is not, and the check's tolerance is recorded
    assert a.capture is not None and any(s.endswith("__main__") for s in a.capture.sources)
    assert [c.args[2] for c in a.capture.configurations] == ["float16[192]"]
    assert a.tolerances["float16"].rtol == 1e-2
    # a kernel launched only with None is unresolved with that reason, not "no ct.launch reached"
    (u,) = a.unresolved
    assert u.kernel == "scale_rows_kernel" and "passes None for 'factor'" in u.message
    assert "no ct.launch" not in u.message


@pytest.mark.slow
def test_the_op_s_own_code_cannot_overwrite_what_the_user_keeps_in_the_checkout(torch_python, tmp_path):
    # real benchmark scripts (the cutile-rs paper's among them) write their results beside themselves, into files
    # the repository tracks; stage A runs that __main__ block, and once overwrote a user's committed results with
    # the numbers of a fake-tensor run
    from tileport.exec import sandbox

    if not sandbox.status().ok:
        pytest.skip(f"no usable bwrap here: {sandbox.status().detail}")
    repo = tmp_path / "lib"
    (repo / "results").mkdir(parents=True)
    kept = repo / "results" / "scale_results.csv"
    kept.write_text("n,median_s\n10000,0.0000031\n")
    op = repo / "scale_bench.py"
    op.write_text(textwrap.dedent('''
        from pathlib import Path
        import torch
        import cuda.tile as ct

        TILE = 256

        @ct.kernel
        def scale(a, c, F: ct.Constant[float]):
            i = ct.bid(0)
            ct.store(c, index=(i,), tile=ct.load(a, index=(i,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO) * F)

        if __name__ == "__main__":
            rows = []
            for n in (1000, 10000):
                a = torch.randn(n, device="cuda", dtype=torch.float32)
                c = torch.empty_like(a)
                ct.launch(torch.cuda.current_stream(), (ct.cdiv(n, TILE), 1, 1), scale, (a, c, 2.0))
                rows.append(f"{n},0.0")
            (Path(__file__).parent / "results" / "scale_results.csv").write_text("n,median_s\\n" + "\\n".join(rows))
    '''))
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@e.invalid", "commit", "-q",
                                                  "-m", "bench"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    a = analyse(op, repo / "out" / "scale_bench", torch_python)  # its output directory inside the checkout
    assert kept.read_text() == "n,median_s\n10000,0.0000031\n"
    assert subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo, capture_output=True,
                          text=True).stdout == ""
    # the launches made before the refused write are still what the op runs with, and the refusal says why
    assert [c.grid for c in a.capture.configurations] == ["(4, 1, 1)", "(40, 1, 1)"]
    (err,) = a.capture.errors
    assert "Read-only file system" in err and "scale_results.csv" in err and "keeps the op's checkout read-only" in err
    assert (repo / "out" / "scale_bench" / "analysis.json").is_file()
    # a conversion of an op outside its repository (no worktree copy to run) runs it read-only as well
    from types import SimpleNamespace

    from tileport.config import Config
    from tileport.exec.toolchain import from_config
    from tileport.pipeline.stages.analyze import run as stage_a

    config = Config.model_validate({"targets": ["sm_90"], "analysis": {"python": torch_python}})
    ctx = SimpleNamespace(op_path=str(op), source=op, reference_dir=tmp_path / "ref", kernel=None, config=config,
                          toolchain=from_config(config), attempt=1, triton=None)
    assert stage_a(ctx).verdict == "PASS"
    assert kept.read_text() == "n,median_s\n10000,0.0000031\n"


@pytest.mark.slow
def test_without_bwrap_the_analysis_says_the_checkout_was_left_writable(torch_python, tmp_path, monkeypatch):
    from tileport.analysis import pipeline
    from tileport.exec import sandbox

    missing = sandbox.SandboxStatus(False, "none", "bubblewrap (bwrap) is not installed")  # NAMED FAKE: no bwrap
    monkeypatch.setattr(sandbox, "status", lambda: missing)
    monkeypatch.setattr(pipeline, "sandbox_status", lambda: missing)
    repo = tmp_path / "lib"
    repo.mkdir()
    op = repo / "vadd.py"
    shutil.copy(REPO / "examples" / "vector_add.py", op)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    a = analyse(op, tmp_path / "o", torch_python)
    assert f"the op's own code ran with {repo.resolve()} writable: bubblewrap (bwrap) is not installed" in a.notes


@pytest.mark.slow
def test_a_script_doing_its_work_at_import_is_analysed_from_the_launches_it_makes(torch_python, tmp_path):
    # a smoke/probe script in the shape of real ones: it asks the GPU its name, launches at module level, then
    # compares on the host (a fake tensor's values cannot be compared): the launches before that are what it runs
    op = tmp_path / "probe_scale.py"
    op.write_text(textwrap.dedent('''
        import torch
        import cuda.tile as ct

        print("device", torch.cuda.get_device_name(0))
        TILE = 256

        @ct.kernel
        def scale(a, c, F: ct.Constant[float]):
            i = ct.bid(0)
            ct.store(c, index=(i,), tile=ct.load(a, index=(i,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO) * F)

        n = 10000
        a = torch.randn(n, device="cuda", dtype=torch.float32)
        c = torch.empty_like(a)
        ct.launch(torch.cuda.current_stream(), (ct.cdiv(n, TILE), 1, 1), scale, (a, c, 3.0))
        torch.cuda.synchronize()
        print("ok", torch.allclose(c, a * 3.0))
    '''))
    a = analyse(op, tmp_path / "o", torch_python)
    (v,) = a.variants
    assert v.kernel == "scale" and v.constants == {"F": 3.0}
    assert a.capture.sources == ["probe_scale.py (import)"]
    assert [c.grid for c in a.capture.configurations] == ["(40, 1, 1)"]
    assert any("does its work when imported" in n and "1 launch(es) before that are kept" in n for n in a.notes)


@pytest.mark.slow
def test_cli_python_option_and_config_key(torch_python, tmp_path):
    (tmp_path / "tileport.toml").write_text(f'targets = ["sm_90"]\n[analysis]\npython = "{torch_python}"\n')
    r = tileport("analyze", str(HELDOUT / "tuned_add.py"), "--no-cubin", "--out", "o", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "add_kernel" in r.stdout and "launch capture (fake tensors (CPU))" in r.stdout
    r = tileport("doctor", "--json", cwd=tmp_path)
    check = next(c for c in json.loads(r.stdout)["checks"] if c["name"] == "analysis-python")
    assert check["status"] == "OK" and check["facts"]["path"] == torch_python and check["facts"]["torch"]


# ---------------------------------------------------------------------------------------------
# Without torch (tileport's own interpreter)


def test_op_importing_torch_says_how_to_point_at_an_interpreter_with_it(tmp_path):
    if _has_torch_here():
        pytest.skip("this interpreter has torch")
    r = tileport("analyze", str(HELDOUT / "tuned_add.py"), "--no-cubin", "--target", "sm_90", "--out", "o",
                 cwd=tmp_path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert "has no torch" in lines[0] and "--python" in lines[0] and "[analysis] python" in lines[0]
    assert not (tmp_path / "o").exists()


def test_python_option_that_does_not_exist_is_one_line(tmp_path):
    r = tileport("analyze", str(REPO / "examples" / "vector_add.py"), "--python", str(tmp_path / "nope"),
                 cwd=tmp_path)
    assert r.returncode == 2 and "no such interpreter" in r.stderr and "Traceback" not in r.stderr


def test_package_op_without_torch_loads_with_relative_imports(tmp_path):
    pkg = tmp_path / "mypkg"
    (pkg / "ops").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ops" / "__init__.py").write_text("")
    (pkg / "ops" / "_sizes.py").write_text("TILE = 256\n")
    (pkg / "ops" / "copy.py").write_text(textwrap.dedent('''
        import cuda.tile as ct
        from ._sizes import TILE

        @ct.kernel
        def copy_kernel(x, y, TILE: ct.Constant[int], NUMEL: ct.Constant[int]):
            i = ct.bid(0)
            ct.store(y, index=(i,), tile=ct.load(x, index=(i,), shape=(TILE,)))

        def copy(x, y):
            n = x.numel()
            ct.launch(None, (ct.cdiv(n, 256),), copy_kernel, (x, y, 256, n))
    '''))
    r = tileport("analyze", str(pkg / "ops" / "copy.py"), "--no-cubin", "--target", "sm_90", "--out", "o",
                 cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    a = json.loads((tmp_path / "o" / "analysis.json").read_text())
    (v,) = a["variants"]
    # NUMEL = x.numel() is computed at run time but the body never reads it: no declaration needed
    assert v["constants"] == {"TILE": 256, "NUMEL": 0}
    assert any("never reads it" in n for n in a["notes"])
    assert a["launches"][0]["grid"] == "(ct.cdiv(n, 256),)"


def test_doctor_reports_a_configured_analysis_python_that_does_not_run(tmp_path):
    (tmp_path / "tileport.toml").write_text(f'[analysis]\npython = "{tmp_path / "missing-python"}"\n')
    r = tileport("doctor", "--for", "analyze", cwd=tmp_path)
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("analysis-python"))
    assert "MISSING" in line and "does not run" in line
    assert r.returncode == 1


def _has_torch_here() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None
