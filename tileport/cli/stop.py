"""`tileport stop ID [--wait S] [--repo DIR | --store DB]`: stop a running conversion, whichever process drives it (a `tileport run`,
a dashboard): its running tool's process group is killed within a second, the attempt is recorded as
interrupted, and `tileport run --resume ID` runs it again. Exit status 0 when it stopped or was not running,
1 when it still ran after --wait seconds, 2 for bad input."""

from __future__ import annotations

import argparse

from tileport.cli._common import config_from, int_in, seconds
from tileport.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stop", help="stop a running conversion (its tools are killed, the attempt recorded "
                                    "as interrupted)", description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("id", type=int_in(1, (1 << 63) - 1), help="conversion id (`tileport status` lists them)")
    p.add_argument("--wait", type=seconds(0, 3600), default=10.0, metavar="S",
                   help="seconds to wait for it to stop (default 10)")
    p.add_argument("--repo", metavar="DIR", help="the repository whose store to use, as `tileport run --repo` "
                                                 "(default: the current directory)")
    p.add_argument("--store", metavar="DB", help="store to use (default: the config's store, under --repo)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tileport import service

    config = config_from(args)
    path = service.store_path(config, args.repo, args.store)
    if not path.is_file():  # never create an empty store here: the conversion is in another one
        raise UserError(f"no tileport store at {path}; pass the repository the conversion runs in (--repo DIR) or "
                        "its store (--store DB)")
    with service.open_store(config, store=path) as store:
        outcome = service.stop_conversion(store, args.id, args.wait)
    print(outcome.text)
    return 1 if outcome.was_running and not outcome.stopped else 0
