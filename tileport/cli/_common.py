"""Helpers shared by subcommands: the config the user asked for and the store it names."""

from __future__ import annotations

import argparse
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from tileport.config import Config, load_config

if TYPE_CHECKING:
    from tileport.service import Store


def config_from(args: argparse.Namespace) -> Config:
    return load_config(getattr(args, "config", None))


def open_store(config: Config, repo: str | Path | None = None) -> "Store":
    """The repository's store by the one rule (`tileport.service.store_path`)."""
    from tileport import service

    return service.open_store(config, repo)


@contextmanager
def config_and_store(args: argparse.Namespace) -> Iterator[tuple[Config, "Store"]]:
    """A subcommand's opening: the config the user asked for and the store it names (closed at the end)."""
    config = config_from(args)
    with open_store(config) as store:
        yield config, store


def record_in_store(config: Config, op_path: str, kernel: str | None, result: Any) -> None:
    """A one-stage subcommand's verdict (`analyze`, `build-rust`) into the store, through the same path as
    `tileport run` (`service.record`), so `tileport status` and the dashboard show it."""
    from tileport import service

    service.record(config, op_path, kernel, result)


def int_in(lo: int, hi: int):
    """An argparse type: an integer in [lo, hi], else argparse's one-line usage error (exit 2)."""
    def parse(text: str) -> int:
        try:
            v = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{text[:40]} is out of range ({lo}..{hi})")
        return v
    parse.__name__ = "integer"
    return parse


def seconds(lo: float, hi: float):
    """An argparse type: a finite number of seconds in (lo, hi]."""
    import math

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number of seconds") from None
        if not math.isfinite(v) or not lo < v <= hi:
            raise argparse.ArgumentTypeError(f"{text[:40]} is out of range (more than {lo:g}, at most {hi:g} s)")
        return v
    parse.__name__ = "seconds"
    return parse
