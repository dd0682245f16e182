"""Rust side of a conversion: the generated cutile crate, the untrusted-code policy, building, and compiler
diagnostics as data.

- `spec`        — the IR-dump spec (entries x variants x targets) tileport writes per conversion
- `crate`       — generate / verify the conversion crate (cutile pinned at CUTILE_VERSION)
- `policy`      — refuse model-written sources that could act on the build machine
- `diagnostics` — rustc / cutile JIT / tileiras output parsed into one `Diagnostic` list
- `build`       — cargo build (shared target dir) -> IR dump -> tileirdisasm -> tileiras
- `reference`   — specs derived from a stage-A analysis, so port and reference compile under one set of assumptions
- `selfcheck`   — stage B's IR self-check: each port variant diffed against its reference instance
"""

from tileport.validators.rust.crate import CUTILE_VERSION

__all__ = ["CUTILE_VERSION"]
