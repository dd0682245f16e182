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
