"""Run the child process that imports the op module and exports its kernels.

The op module never runs inside tileport's own process: an import-time crash, a `sys.exit`, a
segfault in a native extension or a stray print cannot take tileport down or corrupt its output.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import tileport
from tileport.errors import EnvironmentBlocked, UserError
from tileport.proc import CommandResult, run_command

CHILD_MODULE = "tileport.analysis.child"
CHILD_TIMEOUT_S = 600.0


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(tileport.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # analysing an op leaves no __pycache__ beside it
    env.pop("CUDA_TILE_DUMP_BYTECODE", None)
    env.pop("CUDA_TILE_DUMP_TILEIR", None)
    return env


def run_child(request: dict[str, Any], *, cwd: Path, python: str | None = None,
              timeout: float = CHILD_TIMEOUT_S) -> tuple[dict[str, Any], CommandResult]:
    """Send the request, return (reply, command). Failures become one-line UserErrors."""
    argv = [python or sys.executable, "-m", CHILD_MODULE]
    res = run_command(argv, cwd=cwd, env=child_env(), timeout=timeout, input=json.dumps(request).encode())
    name = Path(request["path"]).name
    if res.timed_out:
        raise UserError(f"{name}: loading and exporting took longer than {timeout:g} s; check the module "
                        "for work at import time")
    try:
        reply = json.loads(res.stdout)
    except json.JSONDecodeError:
        reply = None
    if not isinstance(reply, dict):
        if res.returncode < 0:
            why = f"killed by signal {-res.returncode}"
        else:
            why = f"exit status {res.returncode}"
        tail = res.stderr.strip().splitlines()[-1:] or [""]
        raise UserError(f"{name}: the child process that imports it died ({why}) {tail[0][:200]}".rstrip()
                        + "; run `python -c 'import runpy; runpy.run_path(\"" + request["path"] + "\")'` to see why")
    if not reply.get("ok"):
        err = reply.get("error") or {}
        if err.get("kind") == "env":
            raise EnvironmentBlocked(err.get("message", "cuda-tile is missing"))
        if err.get("kind") == "internal":
            raise UserError(f"{name}: tileport's child process failed: {err.get('message')} (a tileport bug; "
                            "please report it with the module)")
        raise UserError(err.get("message") or f"{name}: analysis failed")
    return reply, res
