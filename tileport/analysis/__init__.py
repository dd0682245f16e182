"""Stage A: analyse a cuTile Python op (kernels, constants, launches, variants) and dump its reference Tile IR.

Deterministic, no model. Entry points:
* `analyze_op(path, targets=..., out_dir=...) -> Analysis` — one op; writes `analysis.json` + artifacts;
* `load_analysis(out_dir)` — read a previous result back;
* `analyze_examples(...)` — every op under `examples/` (what `tileport analyze` does with no argument).

Modules, one job each: `static` (AST inspection of kernels and host launches), `declaration`
(the optional TILEPORT dict), `plan` (parameter classes and variants), `child` / `loader`
(import and export in a child process), `capture` / `capture_plan` (run the op's wrapper with
`ct.launch` intercepted, child only, needs torch; captured launches as plan variants), `signature` (JIT-equivalent signatures, child only),
`backend` (tileirdisasm, tileiras), `outdir` (atomic output), `schema` (analysis.json),
`pipeline` (one op), `corpus` (the bundled examples), `library` (a whole library's op files: `analyze DIR`),
`testfind` / `testrun` (the op's own tests and scripts: found by name and import, run in the child), `harness`
(timing harnesses stubbed), `fakecuda` / `fakearrays` / `fakegrad` (the CPU fakes of a CUDA device, of CuPy /
cuda.core / array-interface objects, of autograd Functions' backward).

Attributes load lazily so the child process can import `plan` without the parent-side modules.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "analyze_op": "tileport.analysis.pipeline",
    "default_out_dir": "tileport.analysis.pipeline",
    "load_analysis": "tileport.analysis.schema",
    "analyze_examples": "tileport.analysis.corpus",
    "find_examples": "tileport.analysis.corpus",
    "Analysis": "tileport.analysis.schema",
    "SCHEMA_VERSION": "tileport.analysis.schema",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'tileport.analysis' has no attribute {name!r}")
