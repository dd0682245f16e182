"""The names a generated kernel's locals must not take: the free functions `use cutile::core::*` brings in, read
from the installed cutile crate's own source (skips where the crate has not been fetched)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tileport.draft.core_names import CORE_FUNCTIONS, core_functions
from tileport.draft.syntax import rust_name
from tileport.exec.cutile import CUTILE_VERSION


def _core_rs() -> Path | None:
    found = sorted(Path.home().glob(f".cargo/registry/src/*/cutile-{CUTILE_VERSION}/src/_core.rs"))
    return found[-1] if found else None


def test_the_list_is_the_crates_own():
    path = _core_rs()
    if path is None:
        pytest.skip(f"cutile {CUTILE_VERSION} source not fetched (scripts/setup.sh fetches it)")
    assert core_functions(path.read_text(encoding="utf-8")) == set(CORE_FUNCTIONS)


def test_a_local_named_like_a_core_function_is_renamed_and_others_are_not():
    # `num_tiles = num_bid_m * num_bid_n` then `ct.num_tiles(X, ...)`: the local would shadow cutile's num_tiles()
    assert rust_name("num_tiles") == "num_tiles_" and rust_name("exp") == "exp_"
    assert rust_name("num_bid_m") == "num_bid_m" and rust_name("acc") == "acc"
