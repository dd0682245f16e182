"""Deterministic judges (no model): compilers, the shared Tile IR, tests and measured time decide.

- `analysis/` — stage A: inspect a cuTile Python op, export the reference Tile IR, prove tileiras accepts it
- `rust/`     — a port's crate, the untrusted-code policy, cargo build, diagnostics as data, IR dump, IR self-check
- `tileir/`   — Tile IR text: parser, canonical structural form, categorized diff, side-by-side report
"""
