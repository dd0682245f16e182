"""What a local GPU run needs, checked before anything is built (milliseconds, nothing imported).

Stages D and E run the port on a GPU: here when `[gpu] command_prefix` is empty, else on the host behind the
prefix (which this check cannot see, so it passes). Here they need, in this order: an NVIDIA GPU with its
driver, then torch and cuda.tile importable by the interpreter that runs the pack, then tileiras. The first
missing part is named with its fix, and `tileport gpu pack ID` as the way to run it on another machine,
so a CPU-only machine answers BLOCKED(env) at once instead of after a cdylib build of minutes.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

DEV_GLOBS = ("nvidia[0-9]*",)


def gpu_present(dev: Path = Path("/dev"), proc: Path = Path("/proc/driver/nvidia/gpus")) -> bool:
    """An NVIDIA device node or a GPU the driver lists. CUDA_VISIBLE_DEVICES set empty (or -1) hides them all."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    if any(any(dev.glob(g)) for g in DEV_GLOBS):
        return True
    return proc.is_dir() and any(proc.iterdir())


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def missing(config, *, conversion_id: int | None = None, tileiras: str | os.PathLike | None = None,
            python: str | None = None, gpu: bool | None = None) -> str | None:
    """None when a local GPU run can start (or it runs through a command_prefix), else one line: the first
    missing part, its fix and the remote way. `python` is the GPU run's interpreter (default: this one, as
    hostpack.run_local uses); only the current interpreter is probed without starting a child."""
    if config is not None and config.gpu.command_prefix:
        return None
    remote = (f"to run it on a GPU host: `tileport gpu pack {conversion_id if conversion_id is not None else 'ID'}`"
              f", copy the directory there and `tileport gpu run DIR`, then `tileport gpu ingest`; or set "
              f"[gpu] command_prefix (e.g. \"ssh gpu-box\")")
    if not (gpu_present() if gpu is None else gpu):
        return f"no GPU on this machine (no NVIDIA device or driver found); {remote}"
    if python is None or Path(python).resolve() == Path(sys.executable).resolve():
        for mod, fix in (("torch", "pip install torch (a CUDA build)"), ("cuda.tile", "pip install cuda-tile")):
            if not _importable(mod):
                return f"{mod}: not importable by {sys.executable} ({fix}); {remote}"
    if tileiras is None:
        tileiras = os.environ.get("CUTILE_TILEIRAS_PATH") or shutil.which("tileiras")
    if not tileiras or not os.access(tileiras, os.X_OK):
        return f"tileiras: not found (pip install nvidia-cuda-tileiras, or CUTILE_TILEIRAS_PATH); {remote}"
    return None


__all__ = ["gpu_present", "missing"]
