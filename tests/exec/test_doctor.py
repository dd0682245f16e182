"""`tileport doctor`: real probes of the installed toolchain, and exit status tied to the requested work."""

import json

from tileport.exec import doctor
from tileport.exec.toolchain import Toolchain


def test_doctor_json_reports_every_part_with_real_tileiras_facts(cli):
    r = cli("doctor", "--json", "--for", "analyze")
    data = json.loads(r.stdout)
    names = [c["name"] for c in data["checks"]]
    assert names == ["python", "cuda-tile", "analysis-python", "triton-tileir", "tileiras", "tileirdisasm", "cargo", "rustc",
                     "cuda-headers", "libclang", "cutile-crates", "sandbox", "offline", "gpu", "model-endpoint"]
    ti = next(c for c in data["checks"] if c["name"] == "tileiras")
    assert ti["status"] == "OK"
    assert "13.4" in ti["facts"]["bytecode_versions"]
    assert ti["facts"]["targets"] == {"sm_90": True, "sm_100": True}
    assert r.returncode == 0 and data["ok"] is True


def test_doctor_fails_when_requested_work_needs_a_missing_part(cli, tmp_path):
    # Point the model endpoint at a closed port: "model" work must then fail with the fix shown.
    cfg = tmp_path / "tileport.toml"
    cfg.write_text("[model]\nbase_url = 'http://127.0.0.1:9/v1'\n")
    r = cli("--config", str(cfg), "doctor", "--for", "model")
    assert r.returncode == 1
    line = next(l for l in r.stdout.splitlines() if l.startswith("model-endpoint"))
    assert "MISSING" in line and "tileport model serve" in line
    assert "NOT ready for: model" in r.stdout


def test_missing_tileiras_is_missing_with_fix():
    tc = Toolchain(tileiras=None, tileirdisasm=None, cuda_toolkit=None, libclang_dir=None, cargo=None, rustc=None)
    c = doctor.check_tileiras(tc, ["sm_90"])
    assert c.status == doctor.MISSING and "pip install" in c.fix
    assert doctor.check_cuda_headers(tc).status == doctor.MISSING


def test_old_cuda_headers_are_too_old(tmp_path):
    inc = tmp_path / "include"
    inc.mkdir()
    (inc / "cuda.h").write_text("#define CUDA_VERSION 12080\n")
    (inc / "curand.h").write_text("")
    tc = Toolchain(tileiras=None, tileirdisasm=None, cuda_toolkit=tmp_path, libclang_dir=None, cargo=None, rustc=None)
    c = doctor.check_cuda_headers(tc)
    assert c.status == doctor.TOO_OLD and "12080" in c.detail


def test_doctor_reports_a_missing_sandbox_with_the_fix_and_an_unconfined_opt_out(monkeypatch):
    from tileport.config import Config
    from tileport.exec import sandbox

    monkeypatch.setenv("PATH", "/nonexistent")  # a machine without bubblewrap
    sandbox.status.cache_clear()
    try:
        c = doctor.check_sandbox(Config())
        assert c.status == doctor.MISSING and "apt-get install bubblewrap" in c.fix
        assert "sandbox" in doctor.NEEDS["build-rust"]
        loose = doctor.check_sandbox(Config.model_validate({"sandbox": {"require": False}}))
        assert loose.status == doctor.OK and "UNCONFINED" in loose.detail
    finally:
        monkeypatch.undo()
        sandbox.status.cache_clear()
