"""The `tileport` command. Each subcommand lives in its own module with `register(subparsers)`.

A `UserError` anywhere becomes one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import NoReturn

from tileport import __version__
from tileport.errors import UserError

# Subcommand modules, in the order `tileport --help` lists them. Each defines register(subparsers).
COMMANDS = ("run", "analyze", "draft", "build_rust", "ir_diff", "gpu", "model", "status", "approve", "reject", "merge",
            "worktrees", "doctor", "offline", "tui", "stop")


class _Parser(argparse.ArgumentParser):
    """argparse with tileport's error shape: one line naming the problem and where help is, exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see `{self.prog} --help`\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tileport",
        description="Port cuTile Python kernels to cuTile Rust; compilers, Tile IR, tests and device time judge.",
    )
    parser.add_argument("--version", action="version", version=f"tileport {__version__}")
    parser.add_argument("--config", metavar="FILE", help="tileport.toml to use (default: ./tileport.toml if present)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"tileport.cli.{name}").register(sub)
    return parser




def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        # `tileport` alone: the dashboard converting the bundled examples (headless without a terminal)
        from tileport.cli.tui import run_default

        args.func = lambda a: run_default(a.config)
    try:
        return int(args.func(args) or 0)
    except UserError as e:
        print(f"tileport: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("tileport: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `tileport ... | head` closed the pipe: stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
