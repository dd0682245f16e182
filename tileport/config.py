"""`tileport.toml`: targets, stage caps, perf gate, tolerances, model endpoint, toolchain paths.

Every field has a default, so no file is needed. An unknown key or a bad value is one clear
error naming the key and the file (pydantic `extra="forbid"`), never a silent default.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tileport import limits
from tileport.errors import UserError

CONFIG_NAME = "tileport.toml"
KNOWN_TARGETS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_103", "sm_110", "sm_120", "sm_121")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False, strict=True)


# Element dtypes a tolerance can be given for (cuda.tile's names).
DTYPE_NAMES = ("float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2", "int8", "int16", "int32",
               "int64", "uint8", "uint16", "uint32", "uint64", "bool_")


def check_url(v: str) -> str:
    """An http(s) URL with a host and a port in 1..65535, or ValueError saying what is wrong."""
    from urllib.parse import urlsplit

    if not isinstance(v, str) or not re.match(r"^https?://", v):
        raise ValueError("must start with http:// or https://")
    if len(v) > 2048 or any(ord(c) < 33 for c in v):
        raise ValueError("must be a URL without spaces or control characters, at most 2048 characters")
    try:
        parts = urlsplit(v)
        port = parts.port
    except ValueError as e:
        raise ValueError(f"is not a valid URL ({e})") from None
    if not parts.hostname:
        raise ValueError("has no host; e.g. http://127.0.0.1:8000/v1")
    if port is not None and not 1 <= port <= 65535:
        raise ValueError("port must be in 1..65535")
    return v.rstrip("/")


def check_target(target: str) -> str:
    if target not in KNOWN_TARGETS:
        raise ValueError(f"unknown target {target!r}; use one of {', '.join(KNOWN_TARGETS)}")
    return target


class StageCaps(_Section):
    """Attempts per stage per run (the anchor's caps)."""

    A: int = Field(1, ge=1, le=10)
    B: int = Field(2, ge=1, le=10)
    C: int = Field(1, ge=1, le=10)
    D: int = Field(2, ge=1, le=10)
    E: int = Field(2, ge=1, le=10)
    F: int = Field(1, ge=1, le=10)


class PerfGate(_Section):
    """Port/reference device-time gate: the geomean of the ratios must not exceed `geomean_max`, and no single
    timed configuration may exceed `config_max` (a gate that averages a slow shape away would pass it)."""

    geomean_max: float = Field(1.05, gt=0, le=1000)
    config_max: float = Field(1.10, gt=0, le=1000)
    warmup: int = Field(10, ge=0, le=1_000_000)
    repetitions: int = Field(50, ge=1, le=1_000_000)
    flush_l2: bool = Field(True, strict=True)


class Tolerance(_Section):
    atol: float = Field(ge=0, le=1e6, strict=True)
    rtol: float = Field(ge=0, le=1e6, strict=True)


def _default_tolerances() -> dict[str, Tolerance]:
    return {
        "float16": Tolerance(atol=1e-2, rtol=1e-2),
        "bfloat16": Tolerance(atol=2e-2, rtol=2e-2),
        "float32": Tolerance(atol=1e-4, rtol=1e-4),
        "float64": Tolerance(atol=1e-8, rtol=1e-8),
    }


class ModelEndpoint(_Section):
    """The OpenAI-compatible server (vLLM) the agents talk to."""

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "tileport-coder"
    api_key: str = "EMPTY"
    # one request's total deadline: a CPU server prefills a 7 K-token prompt in 800-970 s (measured); a request that
    # runs past it is not resent (the server may still be serving it)
    timeout_s: float = Field(1800.0, gt=0, le=86400)
    max_retries: int = Field(2, ge=0, le=10)
    schema_retries: int = Field(2, ge=0, le=10)
    vllm_python: str | None = None  # python of the venv with vllm, for `tileport model serve`

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        return check_url(v)


class ToolchainPaths(_Section):
    """Explicit tool locations; empty means "find it" (see tileport.exec.toolchain)."""

    tileiras: str | None = None
    tileirdisasm: str | None = None
    cuda_toolkit: str | None = None
    libclang_dir: str | None = None
    bytecode_version: str = "13.4"

    @field_validator("bytecode_version")
    @classmethod
    def _bcv(cls, v: str) -> str:
        if not re.fullmatch(r"\d+\.\d+", v):
            raise ValueError("must look like 13.4")
        return v


class ApprovalSettings(_Section):
    """Who approves, and what the merge rule may let through."""

    name: str | None = None  # the approver's name; empty means the OS user
    allow_override: bool = False  # overrides of unsatisfied gates: off unless enabled here, and need a reason
    # Paths whose changes on the target branch since the conversion's base do not invalidate its gates
    # (gitignore-style globs); any other change on the target means rebase and re-run the gates.
    base_ignore: list[str] = Field(default_factory=lambda: ["*.md", "docs/**"])


class AnalysisSettings(_Section):
    """Stage A: the interpreter that imports the op (one with torch, for ops that import it at the top)."""

    python: str | None = None  # empty: tileport's own interpreter
    # The op's own tests / benchmark scripts to capture launches from (pytest files or directories, scripts),
    # besides `--tests` and the automatically found tests/**/test_<op>.py; relative to the working directory.
    tests: list[str] = Field(default_factory=list)
    discover_tests: bool = True  # look for tests/**/test_<op>.py in the op's project
    tests_timeout_s: float = Field(default=120.0, gt=0, le=3600)  # per test run / script, inside the child's limit
    # past this many seconds of a test session, only tests of a new launch signature run (at most a quarter of
    # tests_timeout_s; see analysis/testrun.signature_key)
    tests_budget_s: float = Field(default=30.0, ge=0, le=3600)


class SandboxSection(_Section):
    """Model-written code (cargo builds of ports, binaries built from them) runs in a sandbox
    (tileport.exec.sandbox). require = false lets it run unconfined where none can be made: loudly recorded."""

    require: bool = True


class GpuSection(_Section):
    """Where stages D and E run: here (empty prefix) or on a GPU host reached through `command_prefix`
    (e.g. "ssh gpu-box": the pack directory is copied there, run, and its results.json copied back)."""

    command_prefix: str = ""
    remote_dir: str = "/tmp/tileport-gates"
    python: str = "python3"  # the GPU host's Python (torch + cuda.tile)
    timeout_s: float = Field(1800.0, gt=0)  # one conversion's GPU run, in a child process
    test_timeout_s: float = Field(300.0, gt=0)  # one of the op's own tests on the GPU host (killed past it: it fails)
    # The op's project checked out on the GPU host (with command_prefix): the op's tests run there, in place,
    # instead of from the copy the pack carries (the pack then travels without its project/ tree).
    remote_checkout: str = ""


class Config(_Section):
    targets: list[str] = Field(default_factory=lambda: ["sm_90", "sm_100"], min_length=1)
    caps: StageCaps = Field(default_factory=StageCaps)
    perf: PerfGate = Field(default_factory=PerfGate)
    tolerances: dict[str, Tolerance] = Field(default_factory=_default_tolerances)
    model: ModelEndpoint = Field(default_factory=ModelEndpoint)
    toolchain: ToolchainPaths = Field(default_factory=ToolchainPaths)
    approval: ApprovalSettings = Field(default_factory=ApprovalSettings)
    sandbox: SandboxSection = Field(default_factory=SandboxSection)
    gpu: GpuSection = Field(default_factory=GpuSection)
    store: str = Field(".tileport/tileport.db", min_length=1, max_length=1024)
    analysis: AnalysisSettings = Field(default_factory=AnalysisSettings)

    @field_validator("targets")
    @classmethod
    def _targets(cls, v: list[str]) -> list[str]:
        return [check_target(t) for t in v]

    @field_validator("store")
    @classmethod
    def _store(cls, v: str) -> str:
        if "\0" in v:
            raise ValueError("must not contain a NUL character")
        return v

    @field_validator("tolerances")
    @classmethod
    def _dtypes(cls, v: dict[str, Tolerance]) -> dict[str, Tolerance]:
        for name in v:
            if name not in DTYPE_NAMES:
                raise ValueError(f"unknown dtype {name!r} in [tolerances.{name[:40]}]; use one of "
                                 f"{', '.join(DTYPE_NAMES)}")
        merged = _default_tolerances()
        merged.update(v)
        return merged


def _describe(err: ValidationError, path: Path) -> str:
    first = err.errors()[0]
    key = ".".join(str(p) for p in first["loc"]) or "(top level)"
    if first["type"] == "extra_forbidden":
        return f"{path}: unknown key '{key}'; remove it or check the spelling (see README, Configuration)"
    msg = first["msg"].removeprefix("Value error, ")
    return f"{path}: bad value for '{key}': {msg}"


def load_config(path: str | Path | None = None, *, search_from: Path | None = None) -> Config:
    """Load an explicit file, else `tileport.toml` in the working directory, else defaults."""
    if path is None:
        cand = (search_from or Path.cwd()) / CONFIG_NAME
        if not cand.is_file():
            return Config()
        path = cand
    p = Path(path)
    if not os.path.lexists(p):
        raise UserError(f"{p}: config file not found; create it or drop --config")
    raw = limits.loads_toml(limits.read_text(p, "a tileport.toml", limits.CONFIG_BYTES), str(p))
    try:
        return Config.model_validate(raw)
    except ValidationError as e:
        raise UserError(_describe(e, p)) from None
