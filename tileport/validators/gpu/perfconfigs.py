"""Which captured launches stage E times: stage A's `capture.configurations` (kernel, grid, argument dtypes/shapes,
constants, the test that made it), merged and bounded.

Identical configurations (same kernel, grid and arguments) are one, with every test that made them. Launches built
by capture's own guessed inputs count only when the op's tests, scripts and `__main__` block made none. At most
`limit` (32) are timed: one per kernel x dtype x size class first (the largest of each), then more of each class in
turn, largest first; the rest are listed as left out with the reason. Kernels no port entry serves are left out too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

LIMIT = 32
ELEM_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1, "int16": 2,
              "int32": 4, "int64": 8, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1}
# total argument bytes -> size class: small < 64 KiB <= medium < 4 MiB <= large < 256 MiB <= huge
SIZE_CLASSES = ((64 << 10, "small"), (4 << 20, "medium"), (256 << 20, "large"))
_TENSOR = re.compile(r"^([A-Za-z0-9_]+)\[([0-9x]*)\]$")


def parse_arg(text: str) -> dict:
    """An argument as capture wrote it: `float16[512x8192]` (a tensor), `4096`, `1.5`, `True`, `none`."""
    m = _TENSOR.match(text)
    if m:
        shape = [int(x) for x in m.group(2).split("x")] if m.group(2) else []
        return {"kind": "tensor", "dtype": m.group(1), "shape": shape}
    if text in ("True", "False"):
        return {"kind": "bool", "value": text == "True"}
    try:
        return {"kind": "int", "value": int(text)}
    except ValueError:
        pass
    try:
        return {"kind": "float", "value": float(text)}
    except ValueError:
        return {"kind": "none" if text == "none" else "other", "type": text}


def nbytes(args: list[str]) -> int:
    total = 0
    for a in args:
        p = parse_arg(a)
        if p["kind"] == "tensor":
            n = 1
            for d in p["shape"]:
                n *= d
            total += n * ELEM_BYTES.get(p["dtype"], 4)
    return total


def size_class(b: int) -> str:
    return next((name for limit, name in SIZE_CLASSES if b < limit), "huge")


@dataclass
class PerfConfig:
    kernel: str
    grid: str
    args: list[str]
    dtype: str
    origins: list[str] = field(default_factory=list)
    source: str = "test"
    hints: dict = field(default_factory=dict)  # num_ctas / occupancy the launched kernel object carried

    @property
    def bytes(self) -> int:
        return nbytes(self.args)

    @property
    def size_class(self) -> str:
        return size_class(self.bytes)

    @property
    def key(self) -> tuple:
        return (self.kernel, self.grid, tuple(self.args), tuple(sorted(self.hints.items())))

    def label(self) -> str:
        hinted = f" [{', '.join(f'{k}={v}' for k, v in sorted(self.hints.items()))}]" if self.hints else ""
        return f"{self.kernel}{hinted} {self.dtype} grid{self.grid} ({', '.join(self.args)})"

    def as_dict(self, i: int) -> dict:
        return {"id": i, "kernel": self.kernel, "grid": self.grid, "args": self.args, "dtype": self.dtype,
                "origins": self.origins[:8], "source": self.source, "bytes": self.bytes,
                "size_class": self.size_class, "config": self.label(), **({"hints": self.hints} if self.hints else {})}


def _get(c, k):
    return c.get(k) if isinstance(c, dict) else getattr(c, k)


def select(configurations: list, kernels: set[str] | None = None, limit: int = LIMIT) -> tuple[list[dict], list[dict]]:
    """(configurations to time as dicts with an `id`, those left out as {config, why})."""
    merged: dict[tuple, PerfConfig] = {}
    for c in configurations:
        pc = PerfConfig(_get(c, "kernel"), _get(c, "grid"), list(_get(c, "args")), _get(c, "dtype"),
                        [_get(c, "origin")], _get(c, "source"), dict(_get(c, "hints") or {}))
        have = merged.get(pc.key)
        if have is None:
            merged[pc.key] = pc
        elif pc.origins[0] not in have.origins:
            have.origins.append(pc.origins[0])
    left: list[dict] = []
    own = [c for c in merged.values() if c.source != "guess"]
    pool = own or list(merged.values())
    if own:
        left += [{"config": c.label(), "why": "made by capture's guessed inputs; the op's own tests launched others"}
                 for c in merged.values() if c.source == "guess"]
    if kernels is not None:
        left += [{"config": c.label(), "why": f"kernel {c.kernel} is not under conversion (no port entry serves it)"}
                 for c in pool if c.kernel not in kernels]
        pool = [c for c in pool if c.kernel in kernels]
    groups: dict[tuple, list[PerfConfig]] = {}
    for c in pool:
        groups.setdefault((c.kernel, c.dtype, c.size_class), []).append(c)
    for g in groups.values():
        g.sort(key=lambda c: -c.bytes)
    chosen: list[PerfConfig] = []
    order = sorted(groups)
    depth = 0
    while len(chosen) < limit and any(len(groups[k]) > depth for k in order):
        for k in order:
            if len(groups[k]) > depth and len(chosen) < limit:
                chosen.append(groups[k][depth])
        depth += 1
    picked = {c.key for c in chosen}
    left += [{"config": c.label(), "why": f"over the bound of {limit} timed configurations (its kernel x dtype x "
                                          f"size class {c.size_class} is covered)"
              if any(x.key in picked for x in groups[(c.kernel, c.dtype, c.size_class)])
              else f"over the bound of {limit} timed configurations"}
             for c in pool if c.key not in picked]
    return [c.as_dict(i) for i, c in enumerate(chosen)], left


__all__ = ["select", "parse_arg", "nbytes", "size_class", "LIMIT"]
