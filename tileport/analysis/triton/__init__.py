"""Triton ops as a second source kind of stage A (beside cuTile Python).

* `static`   — AST reading of `@triton.jit` kernels and `kernel[grid](...)` launches (this process);
* `capture`  — launch capture with the JIT launch intercepted (child process, fake tensors on a CPU);
* `child`    — the child process (`python -m tileport.analysis.triton.child`);
* `pipeline` — `analyze_triton_op`: both together, recorded in the same `Analysis` schema with
               `source.kind == "triton"`;
* `backend`  — whether a Triton-to-Tile-IR backend is there (the IR gate's reference for a Triton side);
* `pairing`  — a cuTile Python op and its Triton twin, and the per-variant reference choice.
"""

from tileport.analysis.triton.detect import is_triton_source

__all__ = ["is_triton_source"]
