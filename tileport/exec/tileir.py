"""The one Tile IR backend: bytecode -> text (`tileirdisasm`) and bytecode -> cubin (`tileiras`).

Stage A's reference, stage B's port and `tileport ir-diff` all go through these two functions, so both sides of
an IR comparison are printed by the same tool with the same flags and written with the same suffixes:
`<stem>.tileirbc` -> `<stem>.tileir` (text) and `<stem>.cubin`.

Successful outputs are cached by content (`<cache dir>/tileir-cache`, outside any clone, shared by conversions
and runs): the key is the bytecode's sha256, the tool's identity (resolved path, size, mtime) and the flags, so
identical Tile IR is never compiled twice. A hit returns the same bytes and a CommandRecord with `cached_from`
naming the cache file (its seconds are the copy's). Failures are never cached. `TILEPORT_TILEIR_CACHE=off`
disables it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import time
from pathlib import Path
from typing import Mapping

from tileport.exec import settings
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


CACHE_DIR = "tileir-cache"


@functools.lru_cache(maxsize=32)
def _tool_identity(tool: str, size: int, mtime_ns: int) -> str:
    return f"{os.path.realpath(tool)}:{size}:{mtime_ns}"


def _cache_file(tool: str | os.PathLike, bytecode: str | os.PathLike, flags: list[str], suffix: str) -> Path | None:
    """Where this (tool, bytecode, flags) output lives in the cache; None when caching is off or a file is
    unreadable (then the tool just runs)."""
    if not settings.tileir_cache_enabled():
        return None
    try:
        st = os.stat(tool)
        data = Path(bytecode).read_bytes()
    except OSError:
        return None
    h = hashlib.sha256()
    for part in (_tool_identity(str(tool), st.st_size, st.st_mtime_ns), *flags):
        h.update(part.encode() + b"\0")
    h.update(hashlib.sha256(data).digest())
    key = h.hexdigest()
    return settings.cache_dir() / CACHE_DIR / key[:2] / f"{key}{suffix}"


def _store(src: Path, dest: Path) -> None:
    """Put a fresh output into the cache atomically (a reader never sees a half-written file)."""
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    except OSError:
        pass


def _hit(argv: list[str], cached: Path, start: float, cwd, stdout: str = "") -> CommandResult:
    res = CommandResult(argv, 0, stdout, "", time.monotonic() - start, cwd=str(cwd) if cwd else None)
    res.record.cached_from = str(cached)
    return res


def disassemble(bytecode: str | os.PathLike, *, tileirdisasm: str | os.PathLike, text_out: str | os.PathLike | None = None,
                env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None,
                timeout: float = TOOL_TIMEOUT_S, output_cap: int = DEFAULT_OUTPUT_CAP) -> CommandResult:
    """Run tileirdisasm (or take its cached text); on success (and output not truncated) write the text to
    `text_out` when given."""
    start = time.monotonic()
    argv = [str(tileirdisasm), str(bytecode)]
    cached = _cache_file(tileirdisasm, bytecode, ["tileirdisasm"], TEXT_SUFFIX)
    if cached is not None and cached.is_file():
        try:
            text = cached.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = None
        if text is not None and len(text) <= output_cap:
            if text_out is not None:
                Path(text_out).write_text(text, encoding="utf-8")
            return _hit(argv, cached, start, cwd, text)
    res = run_command(argv, env=env, cwd=cwd, timeout=timeout, output_cap=output_cap)
    if res.ok and not res.truncated:
        if text_out is not None:
            Path(text_out).write_text(res.stdout, encoding="utf-8")
        if cached is not None:
            try:
                cached.parent.mkdir(parents=True, exist_ok=True)
                tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")
                tmp.write_text(res.stdout, encoding="utf-8")
                os.replace(tmp, cached)
            except OSError:
                pass
    return res


def assemble(bytecode: str | os.PathLike, target: str, *, tileiras: str | os.PathLike,
             cubin_out: str | os.PathLike | None = None, opt_level: int = OPT_LEVEL,
             env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None,
             timeout: float = TOOL_TIMEOUT_S, output_cap: int = DEFAULT_OUTPUT_CAP) -> CommandResult:
    """Compile bytecode for one GPU target with tileiras (default output: `<stem>.cubin` beside it), or copy the
    cached cubin of the same bytecode, tileiras and flags."""
    start = time.monotonic()
    out = Path(cubin_out if cubin_out is not None else cubin_path(bytecode))
    argv = tileiras_argv(tileiras, bytecode, target, out, opt_level)
    cached = _cache_file(tileiras, bytecode, ["tileiras", target, f"-O{opt_level}"], CUBIN_SUFFIX)
    if cached is not None and cached.is_file():
        try:
            shutil.copyfile(cached, out)
            return _hit(argv, cached, start, cwd)
        except OSError:
            pass
    res = run_command(argv, env=env, cwd=cwd, timeout=timeout, output_cap=output_cap)
    if cached is not None and res.ok and out.is_file():
        _store(out, cached)
    return res
