"""What a stage is given: the conversion, its worktree paths, config and toolchain, the writer, the limits,
the attempt it is and the runs before it. Stages read it; only the runner builds it."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tileport.config import Config
from tileport.exec.toolchain import Toolchain
from tileport.local_models.protocol import CancelToken
from tileport.store.queries import StageRunRow
from tileport.worktrees.conversion import ConversionWorktree

EVIDENCE_DIR = ".tileport"


@dataclass(frozen=True)
class ConversionPaths:
    """Where a conversion's files live inside its worktree. `port` is committed (the deliverable and its
    evidence); `build` (the generated crate) is not: worktrees share the cargo dependency build, not outputs."""

    worktree: Path
    op: str

    @property
    def port(self) -> Path:
        return self.worktree / "ports" / self.op

    @property
    def evidence(self) -> Path:
        return self.port / EVIDENCE_DIR

    @property
    def reference(self) -> Path:
        return self.evidence / "reference"

    @property
    def runs(self) -> Path:
        return self.evidence / "runs"

    @property
    def kernel_rs(self) -> Path:
        return self.port / "kernel.rs"

    @property
    def spec_json(self) -> Path:
        return self.port / "spec.json"

    @property
    def host_rs(self) -> Path:
        return self.port / "host.rs"

    @property
    def crate(self) -> Path:
        return self.worktree / ".tileport-build" / "crate"

    @property
    def committed(self) -> list[str]:
        return [str(self.port.relative_to(self.worktree))]


@dataclass
class Limits:
    """Separate concurrency limits for model calls, cargo builds and GPU gates (shared by all conversions)."""

    model: threading.BoundedSemaphore = field(default_factory=lambda: threading.BoundedSemaphore(2))
    cargo: threading.BoundedSemaphore = field(default_factory=lambda: threading.BoundedSemaphore(1))
    gpu: threading.BoundedSemaphore = field(default_factory=lambda: threading.BoundedSemaphore(1))

    @classmethod
    def of(cls, model: int = 2, cargo: int = 1, gpu: int = 1) -> "Limits":
        return cls(threading.BoundedSemaphore(model), threading.BoundedSemaphore(cargo),
                   threading.BoundedSemaphore(gpu))


@dataclass
class StageContext:
    conversion_id: int
    op: str
    op_path: Path
    kernel: str | None
    worktree: ConversionWorktree
    paths: ConversionPaths
    config: Config
    toolchain: Toolchain
    writer: Any  # tileport.agents.writers.Writer
    limits: Limits
    attempt: int = 1
    cap: int = 1
    repair: bool = False
    history: list[StageRunRow] = field(default_factory=list)  # earlier stage runs of this conversion, typed
    cancel: CancelToken = field(default_factory=CancelToken)
    log: Callable[[str], None] = lambda _msg: None
    examples_dir: Path | None = None  # the worked ports the writer is shown (tileport.service.worked_examples)
    triton: Path | None = None  # the Triton twin the conversion was started with (`--triton`, saved in the store)

    @property
    def reference_dir(self) -> Path:
        return self.paths.reference

    @property
    def source(self) -> Path:
        """The op as the conversion's worktree holds it (the base commit's copy): what every stage reads and runs, so
        that whatever the op's own code writes beside itself (a results file, a cache) lands in the worktree and never
        in the user's checkout. The op's own path when the worktree has no copy of it (an op outside the repository
        or never committed)."""
        return self.worktree.copy_of(self.op_path) or self.op_path

    def last(self, stage: str) -> StageRunRow | None:
        for run in reversed(self.history):
            if run.stage == stage:
                return run
        return None

    def latest(self) -> StageRunRow | None:
        return self.history[-1] if self.history else None
