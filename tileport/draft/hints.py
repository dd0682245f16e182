"""Apply stage F's structured optimisation hints to a kernel.rs: the draft writer's one performance edit.

A hint names the kernel the GPU ran (cutile names an entry `fn NAME`'s kernel `NAME_entry`), the architecture it was
measured on and the occupancy to ask for. The edit only rewrites the `#[cutile::entry]` attribute of that entry; an
entry whose attribute already carries `optimization_hints` is left alone and reported, never merged by guesswork.
"""

from __future__ import annotations

import re

_ENTRY = re.compile(r"#\[cutile::entry(?:\((?P<args>[^\]]*)\))?\]\s*\n(?P<indent>\s*)(?:pub\s+)?(?:unsafe\s+)?fn\s+"
                    r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)")
_ARCH = re.compile(r"^sm_\d{2,3}[a-z]?$")


def entry_of(kernel: str) -> str:
    """The entry fn name of a kernel name as the GPU reports it (`softmax_row_entry` -> `softmax_row`)."""
    return kernel[: -len("_entry")] if kernel.endswith("_entry") else kernel


def apply_hints(src: str, hints: list[dict]) -> tuple[str, list[str], list[str]]:
    """(new source, what was applied, what was skipped and why)."""
    want = {}
    for h in hints or []:
        name, arch, occ = entry_of(str(h.get("kernel", ""))), str(h.get("arch", "")), h.get("occupancy")
        if not name or not _ARCH.match(arch) or not isinstance(occ, int) or not 1 <= occ <= 32:
            continue
        want[name] = (arch, occ)
    applied, skipped = [], []

    def edit(m: re.Match) -> str:
        name = m.group("name")
        if name not in want:
            return m.group(0)
        arch, occ = want.pop(name)
        args = (m.group("args") or "").strip()
        if args:
            skipped.append(f"{name}: its entry attribute already has arguments ({args[:60]}); left as written")
            return m.group(0)
        applied.append(f"{name}: occupancy {occ} on {arch}")
        return (f"#[cutile::entry(optimization_hints = ({arch} = (occupancy = {occ},),))]\n"
                f"{m.group(0)[m.group(0).index(chr(10)) + 1:]}")

    out = _ENTRY.sub(edit, src)
    skipped.extend(f"{name}: no entry of that name in kernel.rs" for name in want)
    return out, applied, skipped
