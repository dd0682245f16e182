"""Disassemble Tile IR bytecode (`tileirdisasm`) and compile it to an sm cubin (`tileiras`).

The text is what stage B's IR self-check compares against; the cubin is proof that the
backend accepts the reference for that GPU. Both run as recorded commands, several at a time.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tileport.analysis.schema import IRSummary
from tileport.exec import tileir
from tileport.exec.proc import CommandResult

TOOL_TIMEOUT_S = tileir.TOOL_TIMEOUT_S

_OP_RE = re.compile(r"^\s*(?:%[^=]*=\s*)?([a-z_][a-z0-9_]*)\b")
_MEMORY_OPS = {"load_view_tko", "store_view_tko", "load_ptr_tko", "store_ptr_tko"}
_TILE_RE = re.compile(r"tile<(?:\d+x)*(?:ptr<\w+>|\w+)>")  # tile<256xf16>, tile<256xptr<f16>>, tile<i32>


def memory_tile(op: str, line: str) -> str | None:
    """The data tile a load produces or a store writes: a load's result type, a store's first operand type that is
    not a pointer tile (pointer loads and stores also carry a mask tile<Nxi1> and an index tile<i32>)."""
    operands, _, results = line.rpartition(":")[2].partition("->")
    if op.startswith("load"):
        tiles = _TILE_RE.findall(results)
        return tiles[0] if tiles else None
    tiles = [t for t in _TILE_RE.findall(operands) if "ptr<" not in t]
    return tiles[0] if tiles else None
_PAD_RE = re.compile(r"padding_value = (\w+)")
_HINTS_RE = re.compile(r"optimization_hints=<[^{]*\{([^}]*)\}")


def summarize_ir(text: str) -> IRSummary:
    ops: Counter[str] = Counter()
    memory: list[str] = []
    features: set[str] = set()
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith(("(", "}", "//")):
            continue  # region headers of reduce/scan bodies, closing braces
        m = _OP_RE.match(s)
        if not m:
            continue
        op = m.group(1)
        ops[op] += 1
        pad = _PAD_RE.search(s)
        if op in _MEMORY_OPS:
            desc = f"{op} {memory_tile(op, s) or '?'}"
            if pad:
                desc += f" padding={pad.group(1)}"
            if "dim_map" in s:
                desc += " dim_map"
            memory.append(desc)
        if pad:
            features.add(f"padding={pad.group(1)}")
        features.update(re.findall(r"rounding<\w+>", s))
        if "flush_to_zero" in s:
            features.add("flush_to_zero")
        hints = _HINTS_RE.search(s)
        if hints and hints.group(1).strip():
            features.add(f"hints {{{hints.group(1).strip()}}}")
    return IRSummary(ops=dict(sorted(ops.items())), memory=memory, features=sorted(features))


@dataclass
class BackendJob:
    bytecode: Path
    target: str
    text_out: Path
    cubin_out: Path | None  # None: skip tileiras


@dataclass
class BackendResult:
    job: BackendJob
    disasm: CommandResult
    tileiras: CommandResult | None


def _run_one(job: BackendJob, tileirdisasm: Path, tileiras: Path | None, env: dict[str, str]) -> BackendResult:
    dis = tileir.disassemble(job.bytecode, tileirdisasm=tileirdisasm, text_out=job.text_out, env=env,
                             cwd=job.bytecode.parent, timeout=TOOL_TIMEOUT_S)
    ras = None
    if job.cubin_out is not None and tileiras is not None:
        ras = tileir.assemble(job.bytecode, job.target, tileiras=tileiras, cubin_out=job.cubin_out, env=env,
                              cwd=job.bytecode.parent, timeout=TOOL_TIMEOUT_S)
    return BackendResult(job, dis, ras)


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def run_backend(jobs: list[BackendJob], *, tileirdisasm: Path, tileiras: Path | None, env: dict[str, str],
                workers: int | None = None) -> list[BackendResult]:
    """Run every job (disasm, then tileiras), in parallel; results in job order."""
    workers = workers or default_workers()
    if workers == 1 or len(jobs) <= 1:
        return [_run_one(j, tileirdisasm, tileiras, env) for j in jobs]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda j: _run_one(j, tileirdisasm, tileiras, env), jobs))
