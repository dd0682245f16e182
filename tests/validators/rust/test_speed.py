"""What makes a conversion's CPU stages fast, as behaviour: D answers BLOCKED(env) before building anything on a
machine without a GPU; tileiras / tileirdisasm outputs come from a content-hash cache with identical bytes; a
second checkout's venv paths give cargo the same inputs (no rebuild of the shared cutile tree); the cargo slot is
held around cargo only and a wait on it is logged. Timings are benchmarks (benchmarks/bench_stages.py), not here.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from tileport.config import Config
from tileport.exec import tileir, toolchain
from tileport.validators.gpu import preflight

ROOT = Path(__file__).resolve().parents[3]


# ---------------------------------------------------------------------------------------------- D's preflight


def _ctx(tmp_path: Path, logs: list[str], config: Config | None = None):
    paths = SimpleNamespace(crate=tmp_path / "wt" / ".tileport-build" / "crate",
                            reference=tmp_path / "ref", spec_json=tmp_path / "spec.json")
    return SimpleNamespace(conversion_id=7, op="vector_add", attempt=1, config=config or Config(),
                           toolchain=toolchain.resolve(), paths=paths, log=logs.append,
                           limits=SimpleNamespace(gpu=threading.BoundedSemaphore(1)))


@pytest.mark.skipif(preflight.gpu_present(), reason="a GPU is here: D would not stop at the preflight")
def test_d_names_the_missing_gpu_before_building_anything(tmp_path, monkeypatch):
    from tileport.pipeline.stages import host_correctness
    from tileport.validators import gpu

    def must_not_run(*_a, **_k):  # NAMED FAKE: the real gate builds a cdylib; the preflight must stop before it
        raise AssertionError("the gate (cdylib build) ran on a machine with no GPU")

    monkeypatch.setattr(gpu, "host_and_correctness", must_not_run)
    logs: list[str] = []
    r = host_correctness.run(_ctx(tmp_path, logs))
    assert (r.verdict, r.fail_class.value) == ("BLOCKED", "env")
    assert r.summary.startswith("blocked: no GPU on this machine")  # the GPU first, not "pip install torch"
    assert "tileport gpu pack 7" in r.summary and "command_prefix" in r.summary
    assert not (tmp_path / "wt").exists()  # nothing built or packed
    assert logs and "blocked before building" in logs[0]


def test_preflight_order_and_remote_prefix(tmp_path):
    cfg = Config()
    assert preflight.missing(cfg, gpu=False).startswith("no GPU")
    # with a GPU: the interpreter's torch / cuda.tile, then tileiras, each with the remote way
    why = preflight.missing(cfg, gpu=True, tileiras=tmp_path / "no-tileiras")
    assert why and not why.startswith("no GPU") and "tileport gpu pack ID" in why
    assert why.split(":")[0] in ("torch", "cuda.tile", "tileiras")
    # a command_prefix runs the gate elsewhere: nothing here is required
    remote = cfg.model_copy(update={"gpu": cfg.gpu.model_copy(update={"command_prefix": "ssh gpu-box"})})
    assert preflight.missing(remote, gpu=False) is None


def test_cuda_visible_devices_empty_hides_gpus(monkeypatch, tmp_path):
    (tmp_path / "nvidia0").touch()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert not preflight.gpu_present(dev=tmp_path)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert preflight.gpu_present(dev=tmp_path, proc=tmp_path / "none")


# ----------------------------------------------------------------------------------- tileiras / disasm cache


@pytest.fixture(scope="module")
def bytecode(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ref")
    r = subprocess.run([sys.executable, "-m", "tileport", "analyze", str(ROOT / "examples" / "vector_add.py"),
                        "--out", str(out), "--target", "sm_90", "--no-cubin"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return sorted(out.rglob("*.tileirbc"))[0]


@pytest.fixture()
def tools():
    tc = toolchain.resolve()
    if tc.tileiras is None or tc.tileirdisasm is None:
        pytest.skip("tileiras / tileirdisasm not installed")
    return tc


def test_cache_hits_return_identical_artifacts(bytecode, tools, tmp_path, monkeypatch):
    monkeypatch.setenv("TILEPORT_CACHE_DIR", str(tmp_path / "cache"))
    a, b = tmp_path / "a.cubin", tmp_path / "b.cubin"
    first = tileir.assemble(bytecode, "sm_90", tileiras=tools.tileiras, cubin_out=a)
    assert first.ok and first.record.cached_from is None
    second = tileir.assemble(bytecode, "sm_90", tileiras=tools.tileiras, cubin_out=b)
    assert second.ok and second.record.cached_from and Path(second.record.cached_from).is_file()
    assert a.read_bytes() == b.read_bytes() and a.read_bytes()[:4] == b"\x7fELF"
    # another target or opt level is another key: compiled, not copied
    other = tileir.assemble(bytecode, "sm_100", tileiras=tools.tileiras, cubin_out=tmp_path / "c.cubin")
    assert other.ok and other.record.cached_from is None

    t1, t2 = tmp_path / "a.tileir", tmp_path / "b.tileir"
    d1 = tileir.disassemble(bytecode, tileirdisasm=tools.tileirdisasm, text_out=t1)
    d2 = tileir.disassemble(bytecode, tileirdisasm=tools.tileirdisasm, text_out=t2)
    assert d1.record.cached_from is None and d2.record.cached_from
    assert d1.stdout == d2.stdout == t1.read_text() == t2.read_text() and "entry" in d1.stdout

    # changed bytecode: a miss (the key is the content, not the path)
    changed = tmp_path / "changed.tileirbc"
    changed.write_bytes(bytecode.read_bytes() + b"\0")
    miss = tileir.disassemble(changed, tileirdisasm=tools.tileirdisasm)
    assert miss.record.cached_from is None


def test_failures_are_not_cached_and_cache_can_be_off(bytecode, tools, tmp_path, monkeypatch):
    monkeypatch.setenv("TILEPORT_CACHE_DIR", str(tmp_path / "cache"))
    bad = tmp_path / "bad.tileirbc"
    bad.write_bytes(b"not tile ir")
    for _ in range(2):
        r = tileir.assemble(bad, "sm_90", tileiras=tools.tileiras, cubin_out=tmp_path / "bad.cubin")
        assert not r.ok and r.record.cached_from is None
    monkeypatch.setenv("TILEPORT_TILEIR_CACHE", "off")
    for _ in range(2):
        r = tileir.disassemble(bytecode, tileirdisasm=tools.tileirdisasm)
        assert r.ok and r.record.cached_from is None
    assert not list((tmp_path / "cache").rglob("*.tileir"))


# ----------------------------------------------------------------------- a second checkout's cargo inputs


def _second_checkout(tmp_path: Path, tc: toolchain.Toolchain) -> toolchain.Toolchain:
    """The same pip CUDA headers and libclang installed into another venv: other paths, other mtimes."""
    venv = tmp_path / "other-clone" / ".venv" / "site-packages"
    cuda = venv / "nvidia" / "cu13"
    shutil.copytree(tc.cuda_toolkit / "include", cuda / "include", copy_function=shutil.copyfile)
    clang = venv / "clang" / "native"
    clang.mkdir(parents=True)
    shutil.copyfile(tc.libclang_dir / "libclang.so", clang / "libclang.so")
    return toolchain.Toolchain(tileiras=tc.tileiras, tileirdisasm=tc.tileirdisasm, cuda_toolkit=cuda,
                               libclang_dir=clang, cargo=tc.cargo, rustc=tc.rustc)


@pytest.fixture()
def build_tc():
    tc = toolchain.resolve()
    if tc.cuda_toolkit is None or tc.libclang_dir is None or not (tc.cuda_toolkit / "include" / "cuda.h").is_file():
        pytest.skip("the pip CUDA headers / libclang are not installed")
    return tc


def test_second_checkout_gives_cargo_the_same_inputs(build_tc, tmp_path):
    other = _second_checkout(tmp_path, build_tc)
    mine, theirs = build_tc.cargo_env(), other.cargo_env()
    for var in ("CUDA_TOOLKIT_PATH", "LIBCLANG_PATH"):
        assert mine[var] == theirs[var], var
        assert str(tmp_path) not in theirs[var] and ".venv" not in theirs[var]
    cuda_h = Path(mine["CUDA_TOOLKIT_PATH"]) / "include" / "cuda.h"
    assert cuda_h.read_bytes() == (build_tc.cuda_toolkit / "include" / "cuda.h").read_bytes()
    # other headers (another CUDA release) get another path: never a stale build for different inputs
    (other.cuda_toolkit / "include" / "curand.h").write_text("/* changed */\n")
    changed = toolchain.Toolchain(**{**other.__dict__})
    assert changed.build_inputs()[0] != build_tc.build_inputs()[0]


@pytest.mark.slow
def test_second_checkout_does_not_rebuild_the_shared_dependency_tree(build_tc, tmp_path):
    """Real cargo: the same crate built with this checkout's toolchain, then with a second checkout's venv paths
    (what used to rerun the cuda-bindings / bindgen build scripts and recompile the tree): nothing rebuilt."""
    from tileport.errors import EnvironmentBlocked
    from tileport.validators.rust.build import BuildOptions, build_crate, prepare_crate
    from tileport.validators.rust.crate import crate_cache_root

    if build_tc.cargo is None:
        pytest.skip("cargo is not installed")
    layout = prepare_crate(ROOT / "ports" / "vector_add", out=crate_cache_root() / "test-speed-second-checkout")
    try:
        first = build_crate(layout, BuildOptions(toolchain=build_tc, cubins=False))
        assert first.ok, [d.short() for d in first.diagnostics]
        again = build_crate(layout, BuildOptions(toolchain=_second_checkout(tmp_path, build_tc), cubins=False))
    except EnvironmentBlocked as e:
        pytest.skip(str(e))
    assert again.ok, [d.short() for d in again.diagnostics]
    assert again.rebuilt == [], f"a second checkout's paths recompiled {again.rebuilt}"


# ---------------------------------------------------------------------------------------------- the cargo slot


def test_a_wait_for_the_cargo_slot_is_logged_and_timed():
    from tileport.validators.rust.build import BuildOptions, RustBuildResult, _held

    slot = threading.BoundedSemaphore(1)
    logs: list[str] = []
    opts = BuildOptions(log=logs.append)
    result = RustBuildResult(crate="x", ok=False, stage="cargo")
    slot.acquire()  # another conversion's cargo build holds it
    threading.Timer(0.2, slot.release).start()
    with _held(slot, opts, result):
        assert not slot.acquire(blocking=False)  # held by us now
    assert slot.acquire(blocking=False)  # released after the block
    assert logs[0].startswith("waiting for the cargo lock") and "got the cargo lock" in logs[1]
    assert result.timings["cargo_lock_wait"] >= 0.1


@pytest.mark.slow
def test_prebuild_leaves_the_first_conversion_build_warm(build_tc):
    """setup.sh's prebuild: the dependency tree only (no port code), one line per crate compiled, the stamp the
    first conversion build reads; after it a port build recompiles only its own crate."""
    from tileport.errors import EnvironmentBlocked
    from tileport.validators.rust.build import BuildOptions, build_crate, deps_stamp, prepare_crate
    from tileport.validators.rust.crate import crate_cache_root
    from tileport.validators.rust.prebuild import prebuild

    if build_tc.cargo is None:
        pytest.skip("cargo is not installed")
    lines: list[str] = []
    try:
        prebuild(lines.append, BuildOptions(toolchain=build_tc, cubins=False, disasm=False))
    except EnvironmentBlocked as e:
        pytest.skip(str(e))
    assert lines[-1].startswith("prebuild: cutile dependency tree ready")
    assert all("compiled crate" in ln and "/" in ln for ln in lines[:-1] if "fetching" not in ln)
    assert deps_stamp(build_tc, BuildOptions()).is_file()
    layout = prepare_crate(ROOT / "ports" / "vector_add", out=crate_cache_root() / "test-speed-after-prebuild")
    logs: list[str] = []
    r = build_crate(layout, BuildOptions(toolchain=build_tc, cubins=False, log=logs.append))
    assert r.ok and all(name.startswith("tileport-port-") for name in r.rebuilt)
    assert not any("first build" in ln for ln in logs) and any(ln.startswith("IR dump") for ln in logs)
