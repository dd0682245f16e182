"""Shared test fixtures. Tests use the real tools (git, cuda-tile, tileiras, cargo, SQLite)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the real `tileport` entry point in a child process, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "tileport", *args],
        cwd=cwd or REPO, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout,
    )


@pytest.fixture
def cli():
    return run_cli


def device_missing(*, cuda_tile: bool = False) -> str | None:
    """Why the GPU-host tests cannot run here (None: they can): torch seeing a CUDA GPU, tileiras on PATH (or
    CUTILE_TILEIRAS_PATH) and, with `cuda_tile`, cuda.tile importable."""
    import shutil

    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU visible to torch"
    if cuda_tile:
        try:
            import cuda.tile  # noqa: F401
        except ImportError:
            return "cuda.tile is not installed"
    if not (os.environ.get("CUTILE_TILEIRAS_PATH") or shutil.which("tileiras")):
        return "tileiras is not on PATH"
    return None


def packed_dir(variable: str, dest: Path) -> Path | None:
    """A fresh copy at `dest` of the gate dir that the environment variable names (packed on a machine with cargo),
    its earlier results.json dropped; None when the variable is unset."""
    import shutil

    packed = os.environ.get(variable)
    if not packed:
        return None
    shutil.copytree(Path(packed), dest)
    (dest / "results.json").unlink(missing_ok=True)
    return dest
