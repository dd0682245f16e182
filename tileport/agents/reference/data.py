"""The shipped reference data as typed records, and the choice of what a task needs from it."""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from importlib import resources

from pydantic import BaseModel, Field

API_FILE = "cutile_api.json"
PORTS_FILE = "worked_ports.json"
_NOT_OPS = frozenset({"kernel", "launch", "Constant"})  # every op has them: no signal
_IDENT = re.compile(r"\b([a-z_][a-z0-9_]*)\s*(?:::<|\()")


class ApiFn(BaseModel):
    """One function or method of the cutile DSL (`cutile::core`), as its source declares it."""

    name: str
    owner: str = ""  # the type of an inherent method (`Tile`, `Tensor`, `Partition`, ...), "" for a free function
    signature: str  # the declaration, one line, without the body
    doc: str = ""  # the first sentence of its doc comment

    def render(self) -> str:
        return f"{self.signature}" + (f"  // {self.doc}" if self.doc else "")


class ApiReference(BaseModel):
    crate: str
    version: str
    functions: list[ApiFn]
    ct_map: dict[str, list[str]] = Field(default_factory=dict)  # ct.X -> the cutile names the draft writes for it

    def by_name(self) -> dict[str, list[ApiFn]]:
        out: dict[str, list[ApiFn]] = {}
        for f in self.functions:
            out.setdefault(f.name, []).append(f)
        return out

    def names_in(self, text: str) -> list[str]:
        """cutile names called in `text` (Rust source or a diagnostic), in order of first use."""
        known = self.by_name()
        seen: dict[str, None] = {}
        for m in _IDENT.finditer(text):
            if m.group(1) in known:
                seen.setdefault(m.group(1), None)
        return list(seen)


class WorkedPort(BaseModel):
    """A hand-written port that builds and passes its IR self-check: the Python source and its kernel.rs."""

    name: str
    ct_functions: list[str]  # ct.X names its Python source calls
    python: str
    kernel_rs: str


class WorkedPorts(BaseModel):
    ports: list[WorkedPort]


def ct_functions(python: str) -> list[str]:
    """The `ct.X` names a cuTile Python source uses, sorted (empty for a source that does not parse)."""
    try:
        tree = ast.parse(python)
    except SyntaxError:
        return []
    return sorted({n.func.attr for n in ast.walk(tree)
                   if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and isinstance(n.func.value, ast.Name) and n.func.value.id == "ct"
                   and n.func.attr not in _NOT_OPS})


@lru_cache(maxsize=None)
def load_api() -> ApiReference:
    text = resources.files("tileport.agents.reference").joinpath(API_FILE).read_text(encoding="utf-8")
    return ApiReference.model_validate_json(text)


@lru_cache(maxsize=None)
def load_worked_ports() -> tuple[WorkedPort, ...]:
    text = resources.files("tileport.agents.reference").joinpath(PORTS_FILE).read_text(encoding="utf-8")
    return tuple(WorkedPorts.model_validate_json(text).ports)


def similar_ports(python: str, op: str, limit: int = 3) -> list[WorkedPort]:
    """The worked ports sharing the most ct.* functions with `python` (never the op's own port: that would be the
    answer), most similar first; ties go to the shorter port (it costs less context)."""
    want = set(ct_functions(python))
    scored = [(len(want & set(p.ct_functions)), -len(p.kernel_rs), p) for p in load_worked_ports() if p.name != op]
    scored.sort(key=lambda t: (t[0], t[1]), reverse=True)
    return [p for s, _, p in scored[:limit] if s > 0]
