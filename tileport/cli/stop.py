"""`tileport stop ID [--wait S]`: stop a running conversion, whichever process drives it (a `tileport run`,
a dashboard): its running tool's process group is killed within a second, the attempt is recorded as
interrupted, and `tileport run --resume ID` runs it again. Exit status 0 when it stopped or was not running,
1 when it still ran after --wait seconds, 2 for bad input."""

from __future__ import annotations

import argparse
from pathlib import Path

from tileport.cli._common import config_from, int_in, seconds
from tileport.store import Store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stop", help="stop a running conversion (its tools are killed, the attempt recorded "
                                    "as interrupted)", description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("id", type=int_in(1, (1 << 63) - 1), help="conversion id (`tileport status` lists them)")
    p.add_argument("--wait", type=seconds(0, 3600), default=10.0, metavar="S",
                   help="seconds to wait for it to stop (default 10)")
    p.add_argument("--store", metavar="DB", help="store to use (default: the config's store)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tileport.agents.control import stop_conversion

    config = config_from(args)
    store = Store(Path(args.store or config.store))
    try:
        outcome = stop_conversion(store, args.id, args.wait)
    finally:
        store.close()
    print(outcome.text)
    return 1 if outcome.was_running and not outcome.stopped else 0
