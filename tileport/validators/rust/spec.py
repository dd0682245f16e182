"""The IR-dump spec tileport writes for a conversion: which entries, variants and targets to compile to Tile IR.

Stored as `tileport-spec.json` in the conversion crate (TOML is accepted on input too). Each variant says what
the host would tell the JIT at launch: generic arguments (dtypes, tile sizes), static strides, per-tensor
specialisation (shape/stride divisibility and base alignment, as cuTile Python's `ArrayConstraint` does), scalar
divisibility hints and an optional constant grid. The IR-dump program tileport generates from it writes one
`.tileirbc` per entry x variant x target.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tileport import limits
from tileport.errors import UserError

SPEC_FILENAME = "tileport-spec.json"

_IDENT = r"^[A-Za-z_][A-Za-z0-9_]*$"
_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$"
_TARGET = r"^sm_[0-9]{2,3}[a-z]?$"
# A generic argument as the host passes it: a dtype name, an integer, or a bracketed shape like "[128, 64]".
_GENERIC = re.compile(r"^(-?[0-9]+|[A-Za-z_][A-Za-z0-9_]*|\[\s*-?[0-9]+(\s*,\s*-?[0-9]+)*\s*\])$")

Ident = Annotated[str, Field(pattern=_IDENT, max_length=64)]


def rust_ident(name: str) -> str:
    """`name` as a Rust identifier: every other character an underscore, `k_` before a leading digit."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return name if re.match(r"[A-Za-z_]", name) else f"k_{name}"


def limited(name: str, limit: int = 64) -> str:
    """A generated name within `limit` characters (the spec's and the IR dump's): a long one keeps its head and gets
    a hash of the whole, so two long names stay distinct."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:10]
    return f"{name[: limit - len(digest) - 1].rstrip('_')}_{digest}"


def module_ident(op: str, limit: int = 64) -> str:
    """The Rust module name of an op: its file stem as an identifier (`01-vector-add` -> `k_01_vector_add`), a long
    one cut with a hash of the whole. Real projects name files freely."""
    return limited(rust_ident(op), limit)


Name = Annotated[str, Field(pattern=_NAME, max_length=64)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TensorSpec(_Strict):
    """How one tensor argument looks at launch, so the compiler emits the same `assume` facts as the JIT.

    Either give a representative `shape` + `strides` (cutile computes the bits as at run time, with a base
    pointer aligned to `base_align` bytes) or the bits themselves.
    """

    shape: list[int] | None = None
    strides: list[int] | None = None
    base_align: int = Field(16, ge=1, le=1 << 20)
    shape_div: list[int] | None = None
    stride_div: list[int] | None = None
    stride_one: list[bool] | None = None
    elements_disjoint: bool = True

    @model_validator(mode="after")
    def _one_form(self) -> "TensorSpec":
        computed = self.shape is not None or self.strides is not None
        explicit = self.shape_div is not None or self.stride_div is not None or self.stride_one is not None
        if computed == explicit:
            raise ValueError("give either shape+strides or shape_div+stride_div+stride_one")
        if computed:
            if self.shape is None or self.strides is None or len(self.shape) != len(self.strides):
                raise ValueError("shape and strides must both be given, with the same rank")
        else:
            if (self.shape_div is None or self.stride_div is None or self.stride_one is None
                    or not len(self.shape_div) == len(self.stride_div) == len(self.stride_one)):
                raise ValueError("shape_div, stride_div and stride_one must all be given, with the same rank")
            for d in self.shape_div + self.stride_div:
                if d < 1 or d & (d - 1):
                    raise ValueError(f"divisibility {d} is not a power of two")
        return self


class ReferenceKey(_Strict):
    """Which reference instance (from `tileport analyze`'s analysis.json) a port variant must match in the IR
    self-check: the cuTile Python kernel, its Constant values and the dtype. `params` maps port parameter names to
    reference ones where they differ (e.g. {"z": "out"}); the target is the job's."""

    kernel: Annotated[str, Field(pattern=_IDENT, max_length=128)]
    constants: dict[str, int | float | bool | str] = Field(default_factory=dict)
    dtype: Annotated[str, Field(pattern=_IDENT, max_length=32)]
    params: dict[Ident, Ident] = Field(default_factory=dict)
    # a factory kernel's closure values (`make_kernel(tile)` returning a new `k` per call): what tells its
    # instances apart when kernel, constants and dtype are the same; stage A names them in the variant's name
    closure: dict[Ident, int | float | bool | str] = Field(default_factory=dict)
    # compiler hints the reference kernel object was launched with when the op re-wraps it per launch
    # (`ct.kernel(fn._pyfunc, num_ctas=2)`, `kernel.replace_hints(occupancy=4)`): cuTile Python's option names
    # (num_ctas, occupancy); the launcher serves a launch with the entry drafted for its kernel object's hints
    hints: dict[Ident, int] = Field(default_factory=dict)

    def label(self) -> str:
        consts = ",".join(f"{k}={const_text(v)}" for k, v in {**self.constants, **self.closure}.items())
        return f"{self.kernel}[{consts}]/{self.dtype}" if consts else f"{self.kernel}/{self.dtype}"


def const_text(v: object) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


class Variant(_Strict):
    """One specialisation of an entry: what the launch would fix."""

    name: Name
    reference: ReferenceKey | None = None  # what the IR self-check compares this variant with
    generics: list[str] = Field(default_factory=list)
    strides: dict[Ident, list[int]] = Field(default_factory=dict)
    tensors: dict[Ident, TensorSpec] = Field(default_factory=dict)
    scalar_hints: dict[Ident, int] = Field(default_factory=dict)
    grid: tuple[int, int, int] | None = None

    @field_validator("generics")
    @classmethod
    def _generics(cls, value: list[str]) -> list[str]:
        for g in value:
            if not _GENERIC.match(g):
                raise ValueError(f"generic argument {g!r} is not a dtype name, an integer or a [shape]")
        return value


class Extent(_Strict):
    """A tensor parameter's extent on one axis (the host reads it from the tensor it launches with)."""

    param: Ident
    axis: int = Field(ge=0, le=7)


class Entry(_Strict):
    name: Ident
    module: Ident | None = None  # defaults to the spec's module
    variants: list[Variant] = Field(min_length=1)
    # const generic -> the tensor extent a launch binds it to (an output slab spanning that axis); the variants'
    # value for it is a representative the IR dump compiles
    extents: dict[Ident, Extent] = Field(default_factory=dict)


class DumpSpec(_Strict):
    """Everything the generated IR-dump program compiles."""

    module: Ident  # the `#[cutile::module] pub mod <module>` in src/kernel.rs
    entries: list[Entry] = Field(min_length=1)
    targets: list[Annotated[str, Field(pattern=_TARGET)]] = Field(default_factory=lambda: ["sm_90"], min_length=1)
    bytecode_version: Annotated[str, Field(pattern=r"^13\.[0-9]$")] | None = None
    host: bool = False  # src/host.rs present: a `pub fn run() -> Result<(), String>` launcher bin is generated

    @model_validator(mode="after")
    def _unique(self) -> "DumpSpec":
        seen: set[str] = set()
        for entry in self.entries:
            for variant in entry.variants:
                for target in self.targets:
                    stem = job_stem(entry.name, variant.name, target)
                    if stem in seen:
                        raise ValueError(f"duplicate job {stem}")
                    seen.add(stem)
        return self

    def modules(self) -> list[str]:
        return sorted({e.module or self.module for e in self.entries})

    def jobs(self) -> list[tuple[Entry, Variant, str]]:
        return [(e, v, t) for e in self.entries for v in e.variants for t in self.targets]

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json", exclude_none=True), indent=2, sort_keys=False) + "\n"


def job_stem(entry: str, variant: str, target: str) -> str:
    """File stem of one job's artifacts: `<entry>__<variant>__<target>`."""
    return f"{entry}__{variant}__{target}"


def load_spec(path: str | Path) -> DumpSpec:
    """Read a spec from JSON or TOML; a malformed one is bad input (UserError, exit 2)."""
    p = Path(path)
    text = limits.read_text(p, "the port's spec.json", limits.DOC_BYTES)
    data = limits.loads_toml(text, f"spec {p}") if p.suffix == ".toml" else limits.loads_json(text, f"spec {p}")
    try:
        return DumpSpec.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(top level)"
        raise UserError(f"spec {p}: {where}: {first['msg']} ({e.error_count()} problem(s))") from None
