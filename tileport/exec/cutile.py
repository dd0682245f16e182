"""The cutile release every conversion crate pins, and whether cargo can build it without the network.

These are toolchain facts (like tileiras' version), read by the crate generator (`validators.rust`) and by the
doctor alike, so they live on this floor: the doctor never imports a validator to learn them.
"""

from __future__ import annotations

import os
from pathlib import Path

from tileport.exec import offline

# Version pinned for every conversion crate. 0.5.0 is the newest cutile on crates.io (November 2026) and builds
# here with the pip CUDA 13.4 headers; its KernelCompiler has spec_args/scalar_hints/grid, which the IR dump
# needs to reproduce the `assume div_by` facts cuTile Python's JIT emits. Changing it means regenerating the
# crate template's cargo-lock.toml (see tileport.validators.rust.crate.regenerate_lock_note).
CUTILE_VERSION = "0.5.0"
PINNED_CRATES = ("cutile", "cutile-compiler", "cutile-macro", "cutile-ir")
# The lock every conversion crate is built with, as data (the crate generator renders it; the doctor and the
# offline bundle check the vendored sources against it).
LOCK_FILE = Path(__file__).resolve().parents[1] / "validators" / "rust" / "crate_template" / "cargo-lock.toml"


def pinned_lock() -> str:
    return LOCK_FILE.read_text(encoding="utf-8")


def dependencies_cached() -> bool:
    """True when the pinned cutile crates are in ~/.cargo/registry/cache, so `cargo build --offline` works.

    (The lock also lists target-specific crates, e.g. windows-sys, that cargo never downloads on Linux, so only
    the pinned roots are checked; a missing transitive crate still shows up as TP-DEPS-MISSING.)"""
    if offline.cargo_config() is not None:  # installed from an offline bundle: the vendored sources
        return True
    home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    caches = [p for p in (home / "registry" / "cache").glob("*") if p.is_dir()]
    return all(any((c / f"{name}-{CUTILE_VERSION}.crate").is_file() for c in caches) for name in PINNED_CRATES)
