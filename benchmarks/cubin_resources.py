"""Print what each cubin asks of an SM: registers per thread, stack frame, static shared memory, threads per block,
code size and exit count, per kernel. Run it on a port's cubins and its reference's (both assembled here by the
same tileiras, no GPU) to see whether a slow configuration has a static cause before spending device time; the
gate's launch attributes (benchmarks/gpu_gate_table.py) show what the driver then launched.

    python benchmarks/cubin_resources.py A.cubin [B.cubin ...]

Sections are read with pyelftools; the per-kernel values are NVIDIA's `.nv.info` attributes (EIATTR records:
a format byte, an attribute byte, a 16-bit size or value, then the payload for format 4).
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

EIFMT_SVAL = 4
EIATTR_REQNTID = 0x10
EIATTR_FRAME_SIZE = 0x11
EIATTR_MIN_STACK_SIZE = 0x12
EIATTR_EXIT_INSTR_OFFSETS = 0x1C
EIATTR_REGCOUNT = 0x2F


def _records(raw: bytes):
    """(attribute, payload bytes or None) of an .nv.info blob, up to the first truncated record."""
    pos = 0
    while pos + 4 <= len(raw):
        fmt, attr, size = raw[pos], raw[pos + 1], struct.unpack_from("<H", raw, pos + 2)[0]
        if fmt != EIFMT_SVAL:
            yield attr, None
            pos += 4
            continue
        if pos + 4 + size > len(raw):
            return
        yield attr, raw[pos + 4:pos + 4 + size]
        pos += 4 + size


def resources(path: str | Path) -> list[dict]:
    """One dict per kernel (`.text.<name>` section) of the cubin."""
    with open(path, "rb") as f:
        elf = ELFFile(f)
        sections = {s.name: s for s in elf.iter_sections()}
        symtab = sections.get(".symtab")
        sym_names = [s.name for s in symtab.iter_symbols()] if symtab is not None else []
        per_symbol: dict[str, dict] = {}
        info = sections.get(".nv.info")
        for attr, data in _records(info.data() if info is not None else b""):
            if data is None or len(data) < 8:
                continue
            sym, value = struct.unpack_from("<II", data)
            name = sym_names[sym] if sym < len(sym_names) else f"symbol#{sym}"
            key = {EIATTR_REGCOUNT: "registers", EIATTR_FRAME_SIZE: "frame_bytes",
                   EIATTR_MIN_STACK_SIZE: "min_stack_bytes"}.get(attr)
            if key:
                per_symbol.setdefault(name, {})[key] = value
        kernels = []
        for sname, sec in sections.items():
            if not sname.startswith(".text."):
                continue
            kernel = sname[len(".text."):]
            row = {"kernel": kernel, "code_bytes": sec.data_size, **per_symbol.get(kernel, {})}
            shared = sections.get(f".nv.shared.{kernel}")
            row["static_smem_bytes"] = shared.data_size if shared is not None else 0
            kinfo = sections.get(f".nv.info.{kernel}")
            for attr, data in _records(kinfo.data() if kinfo is not None else b""):
                if attr == EIATTR_REQNTID and data and len(data) >= 12:
                    row["threads"] = list(struct.unpack_from("<III", data))
                elif attr == EIATTR_EXIT_INSTR_OFFSETS and data:
                    row["exits"] = len(data) // 4
            kernels.append(row)
    return kernels


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cubins", nargs="+")
    args = ap.parse_args(argv)
    table = []
    for path in args.cubins:
        try:
            table += [(path, r) for r in resources(path)]
        except (OSError, ELFError, ValueError, struct.error) as e:
            print(f"{path}: not a readable cubin ({e})", file=sys.stderr)
            return 2
    print("| cubin | kernel | registers | stack frame B | static smem B | threads | code B | exits |")
    print("|---|---|---|---|---|---|---|---|")
    for path, r in table:
        threads = "x".join(str(t) for t in r.get("threads", [])) or "-"
        print(f"| {Path(path).name} | {r['kernel'][:48]} | {r.get('registers', '-')} | {r.get('frame_bytes', '-')} | "
              f"{r['static_smem_bytes']} | {threads} | {r['code_bytes']} | {r.get('exits', '-')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
