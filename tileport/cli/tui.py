"""`tileport tui [--repo DIR] [--readonly]`: the dashboard on a repository's store.

It renders what the store says (a second dashboard on the same store sees the first one's runs live)
and sends actions to the same runner and approval functions the CLI uses.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tileport.cli._common import config_from
from tileport.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tui", help="open the dashboard: conversions, live stages, IR diffs, perf, approval",
                       description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--repo", metavar="DIR", help="the git repository whose conversions to show and drive "
                                                 "(default: the current directory)")
    p.add_argument("--store", metavar="DB", help="store to open (default: the config's store)")
    p.add_argument("--readonly", action="store_true", help="watch only: every action that writes is refused")
    p.add_argument("--no-doctor", action="store_true", help="skip the toolchain check in the header")
    p.add_argument("--model", metavar="URL|scripted:TRANSCRIPT|none",
                   help="who writes kernels for conversions started here (c): as `tileport run --model`")
    p.set_defaults(func=run)


def store_path(args: argparse.Namespace, config) -> Path:
    from tileport import service

    return service.store_path(config, getattr(args, "repo", None), getattr(args, "store", None))


def run(args: argparse.Namespace) -> int:
    config = config_from(args)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UserError("the dashboard needs a terminal; use `tileport status` or `tileport run` when piping")
    if args.repo and not Path(args.repo).is_dir():
        raise UserError(f"{args.repo}: no such directory; pass the git repository to watch with --repo")
    from tileport.tui import TileportApp

    app = TileportApp(store_path(args, config), config, repo=args.repo, readonly=args.readonly,
                      doctor=not args.no_doctor, model=args.model)
    app.run()
    return after_exit(app)


def after_exit(app) -> int:
    """Once the screen is gone nothing may keep converting unseen: whatever quitting could not stop in time is
    waited for here, and ctrl+c stops it at once (no traceback)."""
    import time

    left = app.actions.running_here()
    if left:
        print(f"tileport: waiting for {' '.join(f'#{c}' for c in left)} to record the interrupted step "
              "(ctrl+c: stop now)", flush=True)
        app.actions.closing = True
        try:
            while app.actions.running_here():
                time.sleep(0.1)
        except KeyboardInterrupt:
            runner = app.actions._runner
            for cid in app.actions.running_here():
                if runner is not None:
                    runner.stop(cid)
            deadline = time.monotonic() + 10
            while app.actions.running_here() and time.monotonic() < deadline:
                try:
                    time.sleep(0.1)
                except KeyboardInterrupt:
                    break
            print("tileport: stopped", flush=True)
    return int(app.return_code or 0)


SCRATCH = Path(".tileport") / "examples-repo"


def run_default(argv_config: str | None = None) -> int:
    """`tileport` with no arguments: the bundled examples, converted live in a scratch repository with the
    embedded defaults (no model: the deterministic draft writer; no GPU: D stops at BLOCKED(env))."""
    from tileport import service
    from tileport.config import load_config

    config = load_config(argv_config)
    root, ops = service.examples_repo(SCRATCH)
    store = root / ".tileport" / "tileport.db"
    config = config.model_copy(update={"store": str(store)})
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        # no terminal (piped, CI): the same conversions, headless, one line per verdict
        print(f"tileport: no terminal for the dashboard; converting {len(ops)} examples headless in {root} "
              f"(store {store}; `tileport tui --repo {root}` to watch)")
        runner = service.runner(config, repo=root, model="none")
        cids = service.start_or_reuse(runner, ops, repo=root)
        finished = runner.drive_many(cids, jobs=2)
        for f in finished:
            print(f"#{f.conversion_id}: {f.status}" + (f" ({f.reason})" if f.reason else ""))
        return service.exit_code(finished)
    from tileport.tui import TileportApp

    app = TileportApp(store, config, repo=root, autostart=[str(op) for op in ops], model="none")
    app.run()
    return after_exit(app)
