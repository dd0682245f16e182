"""Done-when of issue #31 on a machine without a GPU: `tileport run OP.py` for a real-world-shaped op that has
pytest files and no TILEPORT declaration packs its gate — the port's cdylib, the op's package, its tests with their
conftest and helper modules, the launches its tests made for stage E — and stops at BLOCKED(env) naming the missing
GPU and where the pack is. Real git, real analysis capture in the torch interpreter, real cargo."""

from __future__ import annotations

import ast
import json
import os
import re
import sys
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli
from tests.analysis.test_analyze_capture import _torch_python

pytestmark = pytest.mark.slow


def test_run_packs_the_gate_of_an_op_judged_by_its_own_tests(tmp_path):
    py = _torch_python()
    if py is None:
        pytest.skip("no analysis interpreter with torch (scripts/setup-torch-venv.sh)")
    repo = tmp_path / "lib"
    shutil.copytree(REPO / "corpora" / "tilekit" / "tune", repo)
    (repo / "tileport.toml").write_text(f'[analysis]\npython = "{py}"\n')
    (repo / ".gitignore").write_text(".tileport/\n")
    # like many suites (and the benchmark scripts beside real ops), the op's tests write a results file beside
    # themselves, here one the user keeps in git: stage A runs those tests, and must not touch the user's copy
    kept = repo / "tests" / "results" / "timings.txt"
    kept.parent.mkdir()
    kept.write_text("the user's own timings\n")
    with (repo / "tests" / "conftest.py").open("a") as f:
        f.write("\n\n@pytest.fixture(scope='session', autouse=True)\ndef _timings():\n    yield\n"
                "    import pathlib\n    out = pathlib.Path(__file__).parent / 'results' / 'timings.txt'\n"
                "    out.write_text('overwritten by a test run\\n')\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@e.invalid", "commit", "-q", "-m", "lib"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    r = run_cli("run", "tilekit/ops/scale_add.py", "--model", "none", cwd=repo, timeout=1500,
                env={"CUDA_VISIBLE_DEVICES": ""})
    assert r.returncode == 3, r.stdout + r.stderr
    # the tests ran in the conversion's worktree: the user's checkout is as it was, and the worktree was put back
    assert kept.read_text() == "the user's own timings\n"
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout == ""
    assert "A ran the op's own code, which changed tests/results/timings.txt in the worktree; put back" in r.stdout
    line = next(ln for ln in r.stdout.splitlines() if "D attempt 1" in ln)
    assert "BLOCKED (env)" in line and "no GPU on this machine" in line and "packed for a GPU host at" in line
    gate = Path(re.search(r"packed for a GPU host at (\S+)", r.stdout).group(1))
    manifest = json.loads((gate / "gate.json").read_text())
    assert manifest["format"] == 2 and manifest["kernels"] == ["_scale_add_kernel"] and not manifest["harness"]
    t = manifest["tests"]
    assert (t["module"], t["import_root"]) == ("tilekit.ops.scale_add", ".")
    assert t["sources"] == [{"kind": "pytest", "path": "tests/ops/test_scale_add.py"}]
    for rel in ("tests/ops/test_scale_add.py", "tests/conftest.py", "tests/helpers/compare.py",
                "tilekit/ops/scale_add.py", "tilekit/config.py", "tilekit/utils.py"):
        assert (gate / "project" / rel).read_text() == (repo / rel).read_text(), rel
    assert {"runner.py", "tp_hosttests.py", "tp_testchild.py", "tp_replay.py", "tp_perfconfigs.py",
            "tp_correctness.py", "tp_mainblock.py"} <= {p.name for p in gate.iterdir()}
    # what travels imports only the standard library, torch, cuda.tile, pytest and its own parts
    allowed = set(sys.stdlib_module_names) | {"torch", "cuda", "pytest", "runner"}
    for name in ("tp_hosttests.py", "tp_testchild.py", "tp_replay.py", "tp_perfconfigs.py", "tp_mainblock.py",
                 "runner.py"):
        tree = ast.parse((gate / name).read_text())
        tops = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        tops |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                 and not n.level}
        assert {t for t in tops if not t.startswith("tp_")} <= allowed, (name, tops - allowed)
    # E: the launches the tests made (shapes and dtypes of test_scale_add's parameters), merged and bounded
    cfgs = manifest["perf_configs"]
    assert cfgs and all(c["kernel"] == "_scale_add_kernel" and c["origins"][0].startswith("tests/ops/") for c in cfgs)
    assert {c["dtype"] for c in cfgs} == {"float16", "bfloat16", "float32"} and len(cfgs) <= 32
    assert any("float16[1024x1024]" in c["args"] for c in cfgs)
    # the stage record names the pack; `tileport status ID` shows it
    s = run_cli("status", "1", cwd=repo)
    assert "packed for a GPU host at" in s.stdout
    # every packed gate of the repository in one archive for scripts/gpu-gate-tests.sh on the GPU host
    archive = tmp_path / "gates" / "packs.tar.xz"
    r = subprocess.run(["bash", str(REPO / "scripts" / "gpu-gate-tests.sh"), "pack", str(archive), str(repo)],
                       capture_output=True, text=True, timeout=600, env={**os.environ, "XZ_DICT": "16MiB"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"1 packs in {archive} (") and r.stdout.rstrip().endswith(": scale_add")
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        lib = tar.getmember("packs/scale_add/lib/libport.so")  # the runner script recompresses it there
        assert lib.size > 1 << 20 and "packs/scale_add/gate.json" in names
        assert json.load(tar.extractfile("packs/scale_add/gate.json")) == manifest
    # benchmarks/gpu_host_call.py times such a gate's replayed launches on the GPU host (no CUPTI in its process):
    # it loads the pack as the replay child does, and finds each configuration's kernel and grid as stage E does
    probe = ("import json, sys, importlib.util\nfrom pathlib import Path\n"
             "spec = importlib.util.spec_from_file_location('bench', sys.argv[1])\n"
             "b = importlib.util.module_from_spec(spec); spec.loader.exec_module(b)\n"
             "g = b.load_replay_gate(Path(sys.argv[2]))\n"
             "got = [b.replay_launch(g, c) for c in g.gate['perf_configs']]\n"
             "print(json.dumps({'kernels': sorted({k._pyfunc.__name__ for k, _ in got}), "
             "'grids': [list(grid) for _, grid in got], 'abi': g.lib.abi}))")
    r = subprocess.run([py, "-c", probe, str(REPO / "benchmarks" / "gpu_host_call.py"), str(gate)],
                       capture_output=True, text=True, timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert r.returncode == 0, r.stderr[-2000:]
    loaded = json.loads(r.stdout.strip().splitlines()[-1])
    assert loaded["kernels"] == ["_scale_add_kernel"] and loaded["abi"] == manifest["abi"]
    grids = [ast.literal_eval(c["grid"]) for c in cfgs]
    assert loaded["grids"] == [list(g) if isinstance(g, tuple) else [g] for g in grids]
    empty = subprocess.run(["bash", str(REPO / "scripts" / "gpu-gate-tests.sh"), "pack", str(archive), str(tmp_path)],
                           capture_output=True, text=True, timeout=60)
    assert empty.returncode == 1 and empty.stderr.count("\n") == 1 and "no packed gate under" in empty.stderr
