"""The analysis record (`analysis.json`): what stage A learned about one cuTile Python op.

Versioned (`schema_version`); later stages read it instead of re-reading the source. Artifact
paths are relative to the output directory, so the directory can be moved or archived whole.

Vocabulary:
* a *kernel* is one `@ct.kernel` function;
* a *variant* is one assignment of values to its `ct.Constant` parameters (a constant branch or
  a wrapper dispatch that changes the kernel body makes a different variant, and needs its own
  Rust entry);
* an *instance* is a variant bound to one element dtype (the Rust side makes dtypes generics);
* each instance is compiled for every target: Tile IR bytecode, its text, and an sm cubin.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from tileport.records import ArtifactRecord, CommandRecord, utcnow
from tileport.analysis.triton.schema import ReferenceChoice, TritonInfo

SCHEMA_VERSION = 1

ConstantValue = bool | int | float


class ParamInfo(BaseModel):
    """One kernel parameter, in declaration order."""

    name: str
    kind: Literal["array", "scalar", "constant"]
    annotation: str | None = None  # source text of the annotation, if any
    ndim: int | None = None  # arrays
    index_dtype: str | None = None  # arrays: int32 unless annotated ct.IndexedWithInt64
    dtype: str | None = None  # scalars: its dtype; arrays: a fixed dtype (None = the op dtype)
    constant_type: str | None = None  # constants: "int", "bool", "float" or None (any)


class ConstantBranch(BaseModel):
    """A branch in the kernel body decided by `ct.Constant` parameters: a structural variant point."""

    line: int
    condition: str
    constants: list[str]


class MemoryOp(BaseModel):
    """A load/store the kernel performs, as written in the source."""

    line: int
    op: str  # e.g. "ct.load", "ct.gather", "view.load", "view.store"
    array: str | None  # the kernel parameter it reads or writes, when traceable
    access: Literal["view", "pointer"]
    tile_shape: str | None = None  # source text
    padding: str | None = None  # source text of padding_mode / padding_value
    masked: bool = False


class KernelInfo(BaseModel):
    name: str
    line: int
    params: list[ParamInfo]
    compiler_options: dict[str, Any] = Field(default_factory=dict)  # occupancy, num_ctas, ... when set
    constant_branches: list[ConstantBranch] = Field(default_factory=list)
    memory_ops: list[MemoryOp] = Field(default_factory=list)
    math_ops: list[str] = Field(default_factory=list)  # notable ct.* calls: mma, exp2, rsqrt, ...
    loops: int = 0  # `for` loops in the body


class LaunchInfo(BaseModel):
    """A `ct.launch` in a host function, on one path through it (a wrapper dispatch gives several)."""

    function: str
    line: int
    kernel: str | None  # None when the kernel argument is not a plain name
    grid: str
    args: list[str] | None  # source text per argument; None when not a literal tuple
    constants: dict[str, ConstantValue | None]  # Constant parameter -> value (None: computed at run time)
    constant_exprs: dict[str, str]  # Constant parameter -> source text
    guards: list[str] = Field(default_factory=list)  # conditions of the path that reaches it
    captured: bool = False  # recorded by launch capture (grid and constants are the values it saw)
    entry: str | None = None  # capture: the call that reached it, e.g. "softmax(float16[128x128])"


class IRSummary(BaseModel):
    """What the reference Tile IR contains, counted from the `tileirdisasm` text."""

    ops: dict[str, int]  # op name -> count
    memory: list[str]  # one line per load/store: "load_view_tko tile<1x1024xf16> padding=neg_inf"
    features: list[str]  # notable attributes: "rounding<approx>", "flush_to_zero", "padding=neg_inf", ...


class TargetBuild(BaseModel):
    """One instance compiled for one GPU target."""

    target: str
    bytecode: ArtifactRecord
    text: ArtifactRecord | None = None
    cubin: ArtifactRecord | None = None  # None only when the backend run was skipped
    export_seconds: float
    disasm_seconds: float | None = None
    tileiras_seconds: float | None = None
    ir: IRSummary | None = None


class Instance(BaseModel):
    """A variant bound to one element dtype: one kernel entry."""

    dtype: str
    param_dtypes: dict[str, str]  # every array and scalar parameter -> its dtype
    symbol: str  # the mangled entry name (cuda-tile's own mangling of the signature)
    signature: list[dict[str, Any]]  # one constraint per parameter, as exported
    builds: list[TargetBuild]


class Variant(BaseModel):
    kernel: str
    name: str  # "TILE_N=1024,FUSE_SCALE=true"; "" for a kernel without constants
    constants: dict[str, ConstantValue]
    sources: list[str]  # why it exists: "launch softmax:71", "declared", "enumerated FUSE_SCALE"
    instances: list[Instance]


class Timings(BaseModel):
    total_s: float = 0.0
    static_s: float = 0.0  # AST inspection in this process
    child_s: float = 0.0  # the child process: import, introspection, export (wall)
    child_cpu_s: float = 0.0  # its CPU time (user + system), which machine load does not inflate much
    export_s: float = 0.0  # sum of export_kernel calls inside the child
    disasm_s: float = 0.0  # sum of tileirdisasm runs
    tileiras_s: float = 0.0  # sum of tileiras runs (they run in parallel, so wall time is less)
    backend_s: float = 0.0  # wall time of the tileirdisasm + tileiras phase
    capture_s: float = 0.0  # launch capture inside the child (torch import + running the wrapper); 0 when not run


class SourceInfo(BaseModel):
    path: str
    sha256: str
    bytes: int
    kind: Literal["cutile", "triton"] = "cutile"  # which language the op is written in


class ToolInfo(BaseModel):
    python: str
    cuda_tile: str | None = None
    tileiras: str | None = None
    tileirdisasm: str | None = None


class ToleranceSpec(BaseModel):
    """Absolute and relative tolerance: finite, non-negative (1e999 or nan would pass anything)."""

    atol: float = Field(ge=0, le=1e6, allow_inf_nan=False)
    rtol: float = Field(ge=0, le=1e6, allow_inf_nan=False)


class UnresolvedKernel(BaseModel):
    """A kernel of the op that could not be analysed, with what was tried; the others still are."""

    kernel: str
    message: str


class CapturedConfig(BaseModel):
    """One distinct launch capture saw: the kernel, its grid and arguments, and the code path that made it."""

    kernel: str
    source: Literal["test", "main", "bench", "guess"]  # the op's tests, its __main__ block, a script, built inputs
    origin: str  # the test id, script or call that made it
    dtype: str  # the op dtype: the first array argument's
    grid: str
    args: list[str]  # per kernel argument: dtype[shape] for arrays, the value for scalars and constants
    hints: dict[str, int] = Field(default_factory=dict)  # num_ctas / occupancy of the launched kernel object


class TestTolerance(BaseModel):
    """A tolerance one of the op's tests passes to an output comparison (assert_close, allclose...)."""

    dtype: str
    rtol: float
    atol: float
    where: str  # file:line of the comparison
    test: str  # the test id that made it


class CaptureInfo(BaseModel):
    """What launch capture did: how it ran, the calls it made, the launches it saw."""

    mode: str  # "fake tensors (CPU)" | "gpu"
    calls: int
    launches: int
    seconds: float
    errors: list[str] = Field(default_factory=list)  # first failures of calls that launched nothing
    sources: list[str] = Field(default_factory=list)  # the tests / scripts / __main__ block that were run
    configurations: list[CapturedConfig] = Field(default_factory=list)
    tolerances: list[TestTolerance] = Field(default_factory=list)


class Analysis(BaseModel):
    schema_version: Literal[1] = SCHEMA_VERSION
    op: str
    source: SourceInfo
    out_dir: str
    created_at: datetime = Field(default_factory=utcnow)
    targets: list[str]
    bytecode_version: str
    tools: ToolInfo
    declared: bool  # the module has a TILEPORT dict
    dtypes: list[str]
    shapes: list[dict[str, Any]]
    tolerances: dict[str, ToleranceSpec]
    # dtype -> where its tolerance came from: "TILEPORT declaration", "tileport.toml", or "tests: file:line (test id)"
    tolerance_sources: dict[str, str] = Field(default_factory=dict)
    tests: list[str] = Field(default_factory=list)  # the op's tests / scripts given or found (capture ran them)
    assumptions: list[str] = Field(default_factory=list)  # what the exported signatures assume of the arguments
    kernels: list[KernelInfo]
    launches: list[LaunchInfo]
    variants: list[Variant]
    commands: list[CommandRecord]
    timings: Timings
    notes: list[str] = Field(default_factory=list)
    unresolved: list[UnresolvedKernel] = Field(default_factory=list)
    capture: CaptureInfo | None = None
    triton: TritonInfo | None = None  # a Triton op: autotune configs, heuristics, the Tile IR backend
    reference: ReferenceChoice | None = None  # a cuTile Python op with a Triton twin: the per-variant reference

    def configurations(self, source: str | None = None) -> list[CapturedConfig]:
        """The distinct launches capture recorded (those of one source kind: "test", "main", "bench", "guess")."""
        found = self.capture.configurations if self.capture is not None else []
        return [c for c in found if source is None or c.source == source]

    # ---- views for later stages -------------------------------------------------------------

    def instances(self, kernel: str | None = None):
        """Yield (variant, instance) pairs, optionally for one kernel."""
        for v in self.variants:
            if kernel is None or v.kernel == kernel:
                for inst in v.instances:
                    yield v, inst

    def artifacts(self) -> list[ArtifactRecord]:
        """Every file this analysis produced (paths relative to `out_dir`), analysis.json excluded."""
        out: list[ArtifactRecord] = []
        for _, inst in self.instances():
            for b in inst.builds:
                out.extend(a for a in (b.bytecode, b.text, b.cubin) if a is not None)
        return out


ANALYSIS_FILE = "analysis.json"


def load_analysis(path: str | Path) -> Analysis:
    """Read an analysis back (later stages start here): the directory `tileport analyze` wrote (out/<op>) or its
    analysis.json. Missing, unreadable or not one tileport wrote: one line saying what to run."""
    from pydantic import ValidationError

    from tileport import limits
    from tileport.errors import UserError

    p = Path(path)
    p = p / ANALYSIS_FILE if p.is_dir() else p
    if not p.exists() and not p.is_symlink():
        raise UserError(f"{p}: no such file: no analysis here; run `tileport analyze OP.py` first")
    data = limits.read_json(p, "the analysis.json that `tileport analyze` wrote")
    try:
        return Analysis.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = f"{'.'.join(str(x) for x in err['loc']) or 'top level'}: {err['msg']}"[:200]
        raise UserError(f"{p}: not an analysis tileport wrote ({where}); rerun `tileport analyze`") from None
