"""Helpers shared by subcommands: loading the config the user asked for."""

from __future__ import annotations

import argparse

from tileport.config import Config, load_config


def config_from(args: argparse.Namespace) -> Config:
    return load_config(getattr(args, "config", None))
