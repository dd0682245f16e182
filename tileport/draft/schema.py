"""What a draft is: the kernel text, its spec, the host contract, and the holes it leaves."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from tileport.validators.rust.spec import DumpSpec

HOST_CONTRACT_FILE = "host_contract.json"


class Hole(BaseModel):
    """One construct the translator left for a writer (model or human): never silently wrong code."""

    model_config = ConfigDict(frozen=True)

    what: str  # "ct.gather", "`if` on a run-time value", ...
    file: str  # the op's file name, as a user reads it
    line: int
    col: int  # 1-based
    kernel: str
    entry: str  # the Rust entry the hole sits in
    detail: str = ""
    id: str = ""  # "h1", "h2", ... in order of appearance in kernel.rs (its TILEPORT-HOLE region)
    gap: bool = False  # a named cutile-rs gap ("cutile-rs 0.5 has no X"), not a translator shortcoming

    def __str__(self) -> str:
        text = f"unsupported: {self.what} at {self.file}:{self.line}:{self.col}"
        return f"{text} ({self.detail})" if self.detail else text


class HostParam(BaseModel):
    name: str
    kind: str  # "tensor" | "scalar"
    rust_type: str  # as written in the entry signature
    dtype: str  # element / scalar dtype (cuTile Python name), "op" for the op dtype generic E
    ndim: int | None = None
    output: bool = False  # written by the kernel (`&mut Tensor`): passed whole, or as a partition (below)
    partition: list[str] | None = None  # an output's static tile shape: the host passes tensor.partition(shape)
    # an output of rank > 3 (cutile-rs 0.5 takes no `&mut Tensor` above rank 3): declared `&Tensor` and written through
    # an unsafe PartitionMut of it; the launcher passes the reference's tensor as it passes an input, written in place
    shared_output: bool = False


class HostVariant(BaseModel):
    """One launchable specialisation: the generic arguments in order, and the reference's launch facts."""

    name: str  # the spec variant name
    dtype: str
    generics: list[str]
    constants: dict[str, bool | int | float]


class HostEntry(BaseModel):
    name: str  # Rust entry
    kernel: str  # cuTile Python kernel it ports
    generics: list[str]  # generic parameter names in order ("E" first when the op dtype is generic)
    params: list[HostParam]
    folded: dict[str, str] = Field(default_factory=dict)  # branch condition -> "true"/"false" this entry fixes
    grid: list[str] = Field(default_factory=list)  # the reference launch grid(s), source text
    launches: list[str] = Field(default_factory=list)  # "function:line" of the reference ct.launch calls
    variants: list[HostVariant] = Field(default_factory=list)


class HostContract(BaseModel):
    """What the Host stage needs to launch the draft exactly as the reference launches its kernels."""

    module: str
    op: str
    entries: list[HostEntry]
    assumptions: list[str] = Field(default_factory=list)  # the reference's launch assumptions (alignment, strides)
    notes: list[str] = Field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2) + "\n"


class Draft(BaseModel):
    """A deterministic first draft of a port (see tileport.draft)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    op: str
    kernel_rs: str
    spec: DumpSpec
    host_contract: HostContract
    holes: list[Hole] = Field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.holes

    def write(self, directory: str | Path) -> list[Path]:
        """Write kernel.rs, spec.json and host_contract.json into `directory` (created); returns the paths."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        out = []
        for name, text in (("kernel.rs", self.kernel_rs), ("spec.json", self.spec.to_json()),
                           (HOST_CONTRACT_FILE, self.host_contract.to_json())):
            path = d / name
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
            out.append(path)
        return out
