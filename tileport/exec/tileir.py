"""The one Tile IR backend: bytecode -> text (`tileirdisasm`) and bytecode -> cubin (`tileiras`).

Stage A's reference, stage B's port and `tileport ir-diff` all go through these two functions, so both sides of
an IR comparison are printed by the same tool with the same flags and written with the same suffixes:
`<stem>.tileirbc` -> `<stem>.tileir` (text) and `<stem>.cubin`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from tileport.exec.proc import DEFAULT_OUTPUT_CAP, CommandResult, run_command

BYTECODE_SUFFIX = ".tileirbc"
TEXT_SUFFIX = ".tileir"
CUBIN_SUFFIX = ".cubin"
OPT_LEVEL = 3
TOOL_TIMEOUT_S = 300.0


def text_path(bytecode: str | os.PathLike) -> Path:
    return Path(bytecode).with_suffix(TEXT_SUFFIX)


def cubin_path(bytecode: str | os.PathLike) -> Path:
    return Path(bytecode).with_suffix(CUBIN_SUFFIX)


def tileiras_argv(tileiras: str | os.PathLike, bytecode: str | os.PathLike, target: str,
                  out: str | os.PathLike, opt_level: int = OPT_LEVEL) -> list[str]:
    return [str(tileiras), "--gpu-name", target, f"-O{opt_level}", str(bytecode), "-o", str(out)]


def disassemble(bytecode: str | os.PathLike, *, tileirdisasm: str | os.PathLike, text_out: str | os.PathLike | None = None,
                env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None,
                timeout: float = TOOL_TIMEOUT_S, output_cap: int = DEFAULT_OUTPUT_CAP) -> CommandResult:
    """Run tileirdisasm; on success (and output not truncated) write the text to `text_out` when given."""
    res = run_command([tileirdisasm, bytecode], env=env, cwd=cwd, timeout=timeout, output_cap=output_cap)
    if text_out is not None and res.ok and not res.truncated:
        Path(text_out).write_text(res.stdout, encoding="utf-8")
    return res


def assemble(bytecode: str | os.PathLike, target: str, *, tileiras: str | os.PathLike,
             cubin_out: str | os.PathLike | None = None, opt_level: int = OPT_LEVEL,
             env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None,
             timeout: float = TOOL_TIMEOUT_S, output_cap: int = DEFAULT_OUTPUT_CAP) -> CommandResult:
    """Compile bytecode for one GPU target with tileiras (default output: `<stem>.cubin` beside it)."""
    out = cubin_out if cubin_out is not None else cubin_path(bytecode)
    return run_command(tileiras_argv(tileiras, bytecode, target, out, opt_level), env=env, cwd=cwd,
                       timeout=timeout, output_cap=output_cap)
