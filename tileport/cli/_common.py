"""Helpers shared by subcommands: the config the user asked for and the store it names."""

from __future__ import annotations

import argparse
from pathlib import Path

from tileport.config import Config, load_config
from tileport.store import Store


def config_from(args: argparse.Namespace) -> Config:
    return load_config(getattr(args, "config", None))


def open_store(config: Config) -> Store:
    """The store named by the config (relative paths are relative to the working directory)."""
    return Store(Path(config.store))
