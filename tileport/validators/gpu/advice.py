"""What a slow configuration's launch attributes say, in words a kernel writer (a model or a person) can act on.

Stage E stores each side's CUPTI launch attributes per configuration (grid, block, registers per thread, shared
memory). Two readings follow from the hardware's occupancy arithmetic alone, for any kernel:

* registers bound the blocks an SM holds: a kernel of R registers x T threads fits floor(REGISTER_FILE / (R x T))
  blocks per SM (64 Ki 32-bit registers on sm_80/sm_90). One or two blocks per SM leave a latency-bound kernel
  (one row per block, a load, reductions, a store) waiting on memory; cutile's `occupancy` hint asks tileiras for
  more blocks per SM, at the price of fewer registers (it can spill: the next measurement decides);
* the two sides launched differently (registers, shared memory, block size): the port's code differs from the
  reference's in a way the Tile IR may not show (alignment the launcher proved, a view staged through shared memory).

The numbers come from the run being judged; nothing here is tuned to one op.
"""

from __future__ import annotations

import math

MILD = 1.10  # reports.BANDS: above the gate up to 1.10 is mild; a writer's automatic edit waits for more
REGISTER_FILE = 65536  # 32-bit registers per SM (sm_80, sm_86, sm_89, sm_90, sm_100)
MAX_BLOCKS = 32  # resident blocks per SM


def blocks_per_sm(registers: int, threads: int) -> int | None:
    """Blocks one SM can hold by registers alone, or None when the attributes are missing."""
    if not registers or not threads:
        return None
    return max(0, min(MAX_BLOCKS, REGISTER_FILE // (int(registers) * int(threads))))


def _threads(attrs: dict) -> int:
    block = attrs.get("block") or []
    return math.prod(int(b) for b in block) if block else 0


def _first(side: list[dict] | None) -> dict:
    return (side or [{}])[0] or {}


def _occupancy_hint(row: dict, gate: float, arch: str) -> dict | None:
    """The occupancy hint a slow, register-bound row asks for: {kernel, arch, occupancy, config, ratio} and the
    launch it was read from (registers, threads, blocks_per_sm)."""
    ratio = row.get("ratio")
    if ratio is None or ratio <= gate or row.get("tiny"):
        return None
    port = _first((row.get("launch") or {}).get("port"))
    regs, threads = port.get("registers_per_thread"), _threads(port)
    blocks = blocks_per_sm(regs, threads)
    if blocks is None or blocks > 2 or not port.get("kernel"):
        return None
    return {"kernel": port["kernel"], "arch": arch, "occupancy": min(8, 4 * max(1, blocks)),
            "config": row.get("config"), "ratio": round(ratio, 3), "registers": regs, "threads": threads,
            "blocks_per_sm": blocks}


def occupancy_hints(rows: list[dict], gate: float, arch: str = "sm_90") -> list[dict]:
    """One hint per port kernel (the largest any of its slow rows asks for), for a writer to apply without asking:
    only rows beyond the mild band (max(gate, MILD)) count, since a hint can also make a kernel slower (fewer
    registers, spills) and a mild row is not worth that risk unreviewed; the findings still name mild rows."""
    best: dict[str, dict] = {}
    for r in rows:
        h = _occupancy_hint(r, max(gate, MILD), arch) if isinstance(r, dict) else None
        if h and h["occupancy"] > best.get(h["kernel"], {}).get("occupancy", 0):
            best[h["kernel"]] = h
    return list(best.values())


def row_advice(row: dict, gate: float, arch: str = "sm_90") -> list[str]:
    """Findings for one perf row (a stage E row as stored: config, ratio, launch{ref,port}) slower than `gate`."""
    ratio = row.get("ratio")
    if ratio is None or ratio <= gate or row.get("tiny"):
        return []
    launch = row.get("launch") or {}
    port, ref = _first(launch.get("port")), _first(launch.get("ref"))
    out = []
    where = f"{row.get('config')} ({ratio:.3f}x)"
    ir = row.get("ir_diff")
    if isinstance(ir, dict) and ir:  # what the two JITs compiled for this configuration, through one IR gate
        from tileport.validators.gpu.bytecode import summary

        out.append(f"{where}: the IR each side's JIT compiled for it on the GPU: {summary(ir)}")
    if not port:
        return out
    hint = _occupancy_hint(row, gate, arch)
    if hint:
        out.append(f"{where}: the port's kernel {hint['kernel']} holds {hint['registers']} registers x "
                   f"{hint['threads']} threads, so an SM holds {hint['blocks_per_sm']} block(s) of it; ask tileiras "
                   f"for more with "
                   f"`#[cutile::entry(optimization_hints = ({arch} = (occupancy = {hint['occupancy']},),))]` "
                   f"(fewer registers per thread; it can spill, the next measurement decides)")
    diffs = []
    for key, label in (("registers_per_thread", "registers per thread"), ("shared_memory_bytes", "shared memory (B)"),
                       ("block", "block")):
        if ref.get(key) is not None and port.get(key) is not None and ref.get(key) != port.get(key):
            diffs.append(f"{label} {port.get(key)} vs the reference's {ref.get(key)}")
    if diffs:
        out.append(f"{where}: the two sides launched differently: " + "; ".join(diffs)
                   + " (code the Tile IR comparison may not show: alignment the launcher proved, a view staged "
                     "through shared memory)")
    return out


def advice(rows: list[dict], gate: float, limit: int = 8, arch: str = "sm_90") -> list[str]:
    """Findings for the slowest rows first, at most `limit`."""
    slow = sorted((r for r in rows if isinstance(r, dict)), key=lambda r: -(r.get("ratio") or 0))
    found: list[str] = []
    for r in slow:
        found.extend(row_advice(r, gate, arch))
        if len(found) >= limit:
            break
    return found[:limit]
