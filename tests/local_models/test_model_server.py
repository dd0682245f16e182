"""`tileport model serve|status` and the vLLM launcher, with a stand-in `vllm` package (no real vLLM)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tileport.errors import UserError
from tileport.local_models.fake_server import FakeOpenAIServer
from tileport.local_models.server import (
    ServeOptions,
    ServerStartError,
    VllmServer,
    check_model_dir,
    free_port,
    resolve_vllm_python,
)

# A stand-in for `python -m vllm.entrypoints.openai.api_server`: logs like vLLM, opens its port
# after a short "load", serves /health and /v1/models, and can crash or ignore SIGTERM on request.
FAKE_API_SERVER = textwrap.dedent('''
    import argparse, os, signal, sys, time
    from tileport.local_models.fake_server import FakeOpenAIServer

    ap = argparse.ArgumentParser()
    ap.add_argument("--model"); ap.add_argument("--served-model-name"); ap.add_argument("--host")
    ap.add_argument("--port", type=int); ap.add_argument("--max-model-len", type=int, default=4096)
    args, _ = ap.parse_known_args()
    print("INFO starting fake vLLM argv=" + " ".join(sys.argv[1:]), flush=True)
    if os.environ.get("FAKE_VLLM_IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(float(os.environ.get("FAKE_VLLM_LOAD_S", "0.5")))
    if os.environ.get("FAKE_VLLM_CRASH"):
        print("RuntimeError: Engine core initialization failed. See root cause above.", flush=True)
        sys.exit(1)
    srv = FakeOpenAIServer(model=args.served_model_name, max_model_len=args.max_model_len, port=args.port)
    srv.__enter__()
    print("INFO:     Application startup complete.", flush=True)
    while True:
        time.sleep(0.1)
''')


@pytest.fixture
def fake_vllm(tmp_path, monkeypatch):
    pkg = tmp_path / "fakevllm" / "vllm" / "entrypoints" / "openai"
    pkg.mkdir(parents=True)
    for d in (pkg, pkg.parent, pkg.parent.parent):
        (d / "__init__.py").write_text("")
    (pkg / "api_server.py").write_text(FAKE_API_SERVER)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "fakevllm"), os.environ.get("PYTHONPATH", "")]))
    for var in ("FAKE_VLLM_CRASH", "FAKE_VLLM_IGNORE_TERM", "FAKE_VLLM_LOAD_S", "TILEPORT_VLLM_PYTHON"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


@pytest.fixture
def model_dir(tmp_path) -> Path:
    d = tmp_path / "tiny-model"
    d.mkdir()
    (d / "config.json").write_text('{"model_type": "llama"}')
    (d / "model.safetensors").write_bytes(b"\0" * 16)
    return d


def run_cli(*args: str, env: dict | None = None, cwd: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tileport", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


# ---- model dir checks -------------------------------------------------------------------------


def test_model_dir_checks_name_the_problem(tmp_path, model_dir):
    assert check_model_dir(model_dir) == model_dir.resolve()
    with pytest.raises(UserError, match="does not exist"):
        check_model_dir(tmp_path / "nope")
    (tmp_path / "w.gguf").write_bytes(b"GGUF")
    with pytest.raises(UserError, match="GGUF loader is CUDA-only"):
        check_model_dir(tmp_path / "w.gguf")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match="no config.json"):
        check_model_dir(empty)
    (empty / "config.json").write_text("{}")
    with pytest.raises(UserError, match="no weights"):
        check_model_dir(empty)


def test_serve_with_a_bad_model_path_is_one_line_and_exit_2(tmp_path):
    r = run_cli("model", "serve", "--model", str(tmp_path / "missing"), cwd=str(tmp_path))
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "does not exist" in r.stderr
    assert "Traceback" not in r.stderr


def test_serve_without_a_model_says_what_to_pass(tmp_path):
    r = run_cli("model", "serve", cwd=str(tmp_path))
    assert r.returncode == 2 and "--model PATH" in r.stderr and "--cpu-fallback" in r.stderr


def test_cpu_fallback_not_set_up_points_at_the_setup_script(tmp_path):
    env = dict(os.environ, TILEPORT_VLLM_VENV=str(tmp_path / "no-venv"))
    r = run_cli("model", "serve", "--cpu-fallback", env=env, cwd=str(tmp_path))
    assert r.returncode == 2 and "scripts/setup-vllm-cpu.sh" in r.stderr


def test_python_without_vllm_is_a_clear_error(tmp_path):
    with pytest.raises(UserError, match="cannot import vllm"):
        resolve_vllm_python(sys.executable)
    with pytest.raises(UserError, match="does not exist"):
        resolve_vllm_python(str(tmp_path / "python"))


# ---- vLLM command line -------------------------------------------------------------------------


def test_vllm_command_line_has_the_documented_flags(model_dir):
    argv = ServeOptions(model_dir, served_name="coder", python="/v/bin/python", port=8001, max_model_len=8192, gpus=2).argv()
    joined = " ".join(argv)
    assert argv[:3] == ["/v/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    for flag in ("--served-model-name coder", "--max-model-len 8192", "--tensor-parallel-size 2",
                 "--enable-auto-tool-choice", "--tool-call-parser hermes", "--port 8001"):
        assert flag in joined
    assert argv[argv.index("--structured-outputs-config") + 1] == '{"backend":"xgrammar"}'
    assert "--enforce-eager" not in argv
    cpu = ServeOptions(model_dir, cpu=True).argv()
    assert "--enforce-eager" in cpu and "--tensor-parallel-size" not in cpu
    assert ServeOptions(model_dir).env()["HF_HUB_OFFLINE"] == "1"


# ---- launcher lifecycle with the stand-in ------------------------------------------------------


def test_launcher_waits_for_health_reads_models_and_stops_the_group(fake_vllm, model_dir):
    lines: list[str] = []
    opts = ServeOptions(model_dir, served_name="coder", port=free_port(), max_model_len=1234)
    with VllmServer(opts, on_log=lines.append) as srv:
        info = srv.wait_ready(30, poll_s=0.1)
        assert info.healthy and info.models == ["coder"] and info.max_model_len == 1234
        assert srv.ready_after_s >= 0.5  # it waited for the port to open
        assert any("Application startup complete" in line for line in lines)
        pid = srv.proc.pid
    assert not srv.running
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)  # nothing of the group is left


def test_launcher_escalates_to_sigkill(fake_vllm, model_dir, monkeypatch):
    monkeypatch.setenv("FAKE_VLLM_IGNORE_TERM", "1")
    srv = VllmServer(ServeOptions(model_dir, port=free_port()))
    srv.start()
    srv.wait_ready(30, poll_s=0.1)
    t0 = time.monotonic()
    assert srv.stop(grace_s=1) == -signal.SIGKILL
    assert time.monotonic() - t0 < 10


def test_server_that_crashes_on_start_reports_its_log(fake_vllm, model_dir, monkeypatch):
    monkeypatch.setenv("FAKE_VLLM_CRASH", "1")
    with VllmServer(ServeOptions(model_dir, port=free_port())) as srv:
        with pytest.raises(ServerStartError, match="(?s)exited with status 1.*Engine core initialization failed"):
            srv.wait_ready(30, poll_s=0.1)


def test_server_that_never_gets_healthy_times_out(fake_vllm, model_dir, monkeypatch):
    monkeypatch.setenv("FAKE_VLLM_LOAD_S", "30")
    with VllmServer(ServeOptions(model_dir, port=free_port())) as srv:
        with pytest.raises(ServerStartError, match="not healthy after 1 s"):
            srv.wait_ready(1, poll_s=0.1)


def test_launch_refuses_a_busy_port(model_dir):
    with FakeOpenAIServer() as busy:
        with pytest.raises(UserError, match="already in use"):
            VllmServer(ServeOptions(model_dir, port=busy.port)).start()


def test_cli_serve_runs_until_sigterm_then_stops_vllm(fake_vllm, model_dir, tmp_path):
    port = free_port()
    log = tmp_path / "vllm.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tileport", "model", "serve", "--model", str(model_dir), "--python", sys.executable,
         "--port", str(port), "--max-model-len", "512", "--log", str(log), "--", "--dtype", "float16"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(tmp_path),
    )
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if line.startswith("Ctrl-C") or not line:
                break
        out = "".join(lines)
        assert "ready in" in out and "max_model_len  512" in out and "tileport-coder (served)" in out
        status = run_cli("model", "status", "--url", f"http://127.0.0.1:{port}/v1", cwd=str(tmp_path))
        assert status.returncode == 0 and "health         ok" in status.stdout
        again = run_cli("model", "serve", "--model", str(model_dir), "--python", sys.executable, "--port", str(port),
                        cwd=str(tmp_path))
        assert again.returncode == 0 and "already answers" in again.stdout
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    assert "vLLM stopped" in err
    assert "Application startup complete" in log.read_text()
    assert "--max-model-len 512 --dtype float16" in log.read_text()  # flags after `--` reach vLLM unchanged
    gone = run_cli("model", "status", "--url", f"http://127.0.0.1:{port}/v1", cwd=str(tmp_path))
    assert gone.returncode == 1 and "no model server at" in gone.stderr


def test_status_reads_the_configured_endpoint(tmp_path):
    with FakeOpenAIServer(model="tileport-coder", max_model_len=4096) as srv:
        (tmp_path / "tileport.toml").write_text(f'[model]\nbase_url = "{srv.base_url}"\n')
        r = run_cli("model", "status", cwd=str(tmp_path))
        assert r.returncode == 0
        assert srv.base_url in r.stdout and "max_model_len  4096" in r.stdout
        (tmp_path / "tileport.toml").write_text(f'[model]\nbase_url = "{srv.base_url}"\nmodel = "other"\n')
        r = run_cli("model", "status", cwd=str(tmp_path))
        assert r.returncode == 1 and "NOT served" in r.stdout


def test_status_with_nothing_listening_says_so(tmp_path):
    port = free_port()
    r = run_cli("model", "status", "--url", f"http://127.0.0.1:{port}/v1", cwd=str(tmp_path))
    assert r.returncode == 1
    assert f"no model server at http://127.0.0.1:{port}/v1" in r.stderr and "tileport model serve" in r.stderr
