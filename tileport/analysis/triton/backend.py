"""Is there a Triton-to-Tile-IR backend? (the only way a Triton reference has CUDA Tile IR)

The backend (triton-lang/Triton-to-tile-IR) installs as the Triton backend package
`triton.backends.cutile` and is switched on by `ENABLE_TILE=1`; it finds tileiras through
`TRITON_TILEIRAS_PATH` (else PATH). Without it, the IR gate has no reference IR for a Triton side and
records the gap `NO_BACKEND_GAP` (never a silent pass); the port is then judged by correctness and
performance alone.

`detect_here()` runs in the interpreter that would compile the Triton kernels (the analysis child);
`detect(python)` asks such an interpreter from tileport's own process (doctor).
"""

from __future__ import annotations

import importlib.util
import json
import os

from pydantic import BaseModel

from tileport.exec.proc import run_command

NO_BACKEND_GAP = "no Tile IR for the Triton reference: install the Tile IR backend"
BACKEND_PACKAGE = "triton.backends.cutile"
ENABLE_ENV = "ENABLE_TILE"
TRITON_ENV = ("ENABLE_TILE", "TRITON_TILEIRAS_PATH")


class TileIRBackend(BaseModel):
    triton: str | None = None  # triton's version in that interpreter (None: no triton)
    installed: bool = False  # triton.backends.cutile importable
    enabled: bool = False  # ENABLE_TILE=1 in the environment
    env: dict[str, str] = {}  # the TRITON_* / ENABLE_TILE variables that are set

    @property
    def usable(self) -> bool:
        return self.installed and self.enabled

    def describe(self) -> str:
        if self.triton is None:
            return "no triton in the analysis interpreter"
        if not self.installed:
            return f"triton {self.triton}, no Tile IR backend ({BACKEND_PACKAGE} not installed)"
        if not self.enabled:
            return f"triton {self.triton} with {BACKEND_PACKAGE}, off ({ENABLE_ENV}=1 switches it on)"
        return f"triton {self.triton} with {BACKEND_PACKAGE} ({ENABLE_ENV}=1)"


def detect_here() -> TileIRBackend:
    try:
        import triton
    except Exception:
        return TileIRBackend()
    try:
        installed = importlib.util.find_spec(BACKEND_PACKAGE) is not None
    except (ImportError, ValueError):
        installed = False
    env = {k: os.environ[k] for k in TRITON_ENV if k in os.environ}
    return TileIRBackend(triton=getattr(triton, "__version__", "?"), installed=installed,
                         enabled=os.environ.get(ENABLE_ENV) == "1", env=env)


_PROBE = ("import json; from tileport.analysis.triton.backend import detect_here; "
          "print(json.dumps(detect_here().model_dump(mode='json')))")


def detect(python: str, timeout: float = 60.0) -> TileIRBackend | None:
    """The backend as `python` sees it; None when that interpreter cannot be asked."""
    from tileport.analysis.loader import child_env

    res = run_command([python, "-c", _PROBE], env=child_env(), timeout=timeout)
    if res.returncode != 0:
        return None
    try:
        return TileIRBackend.model_validate(json.loads(res.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return None
