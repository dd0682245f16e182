"""`tileport run OP.py... | --resume ID`: convert ops end to end (A -> B -> D -> E, routed by verdicts, capped).

Each conversion gets its own branch `tileport/<op>-<id>` and git worktree in the repository (`--repo`, default
the current one); every stage attempt is a commit with Tileport-* trailers and a stage run in the store.
Prints each verdict as it happens. Exit status: 0 when every gate passed, 1 when a gate failed (or a cap was
reached), 3 when a conversion stopped at BLOCKED (the environment), 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tileport.cli._common import config_from, int_in
from tileport.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="convert cuTile Python ops to cutile-rs end to end (stages, routing, worktrees)",
                       description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("ops", nargs="*", metavar="OP.py|DIR",
                   help="the cuTile Python op modules to convert, or one library directory: every op file in it "
                        "(modules defining @ct.kernel), each converted with its own tests, then a summary table")
    p.add_argument("--json", action="store_true", help="with DIR: the end-of-run summary as one JSON document")
    p.add_argument("--kernel", metavar="NAME", help="only this kernel of the op(s)")
    p.add_argument("--repo", metavar="DIR", default=".", help="the git repository to branch from (default: .)")
    p.add_argument("--model", metavar="URL|scripted:TRANSCRIPT|none",
                   help="who writes the kernel: a vLLM URL, a scripted transcript, or none (the draft translator); "
                        "default: [model] base_url of tileport.toml")
    p.add_argument("--jobs", type=int_in(1, 256), default=1, metavar="N", help="conversions at once (default 1)")
    p.add_argument("--model-jobs", type=int_in(1, 256), default=2, metavar="N", help="model calls at once (default 2)")
    p.add_argument("--cargo-jobs", type=int_in(1, 256), default=1, metavar="N", help="cargo builds at once (default 1)")
    p.add_argument("--gpu-jobs", type=int_in(1, 256), default=1, metavar="N", help="GPU gates at once (default 1)")
    p.add_argument("--triton", metavar="TRITON_OP.py",
                   help="the op's Triton twin (one OP): analysed beside it; the faster side per variant is the reference "
                        "once timed on a GPU (default: a twin found by name, e.g. ops/triton/<op>.py)")
    p.add_argument("--resume", type=int_in(1, (1 << 63) - 1), metavar="ID", help="continue a stopped conversion from the store")
    p.add_argument("--tests", action="append", metavar="PATH",
                   help="the op's own pytest file/directory or benchmark script; stage A captures launches, shapes, "
                        "dtypes and tolerances from it (repeatable; also [analysis] tests in tileport.toml)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tileport import service

    for name in ("jobs", "model_jobs", "cargo_jobs", "gpu_jobs"):
        if getattr(args, name) < 1:
            raise UserError(f"--{name.replace('_', '-')} must be at least 1")
    if args.resume is not None and args.ops:
        raise UserError("--resume ID continues one conversion; drop the OP arguments")
    if args.resume is None and not args.ops:
        raise UserError("nothing to run: pass OP.py (e.g. tileport run examples/vector_add.py) or --resume ID")
    config = service.with_tests(config_from(args), args.tests)
    runner = service.runner(config, repo=args.repo, model=args.model,
                            limits=service.Limits.of(model=args.model_jobs, cargo=args.cargo_jobs, gpu=args.gpu_jobs),
                            out=lambda line: print(line, flush=True, file=sys.stderr if args.json else sys.stdout))
    if args.resume is not None:
        finished = [service.resume(runner, args.resume)]
    else:
        if args.triton and len(args.ops) != 1:
            raise UserError("--triton pairs one op: tileport run CUTILE_OP.py --triton TRITON_OP.py")
        library = None
        if len(args.ops) == 1 and Path(args.ops[0]).is_dir():
            if args.kernel or args.triton:
                raise UserError("--kernel and --triton name one op; with a directory every op file is converted")
            library = service.find_library(args.ops[0])
            cids = service.library_conversions(runner, library, repo=args.repo)
        else:
            cids = service.start(runner, args.ops, repo=args.repo, kernel=args.kernel, triton=args.triton)
        with runner.store() as store:
            for cid in cids:
                c = store.conversion(cid)
                print(f"#{cid} {c['op_path']}: branch {c['branch']} at {c['base_branch']}@{c['base_commit'][:10]}, "
                      f"worktree {c['worktree']}, model {c['model']}", flush=True,
                      file=sys.stderr if args.json else sys.stdout)
        t0 = time.perf_counter()
        finished = runner.drive_many(cids, jobs=args.jobs)
        if library is not None:
            from tileport.cli._library import print_rows

            for f in finished:
                print(f"#{f.conversion_id}: {f.status.upper()}" + (f" ({f.reason})" if f.reason else ""), flush=True,
                      file=sys.stderr if args.json else sys.stdout)
            rows = service.library_rows(config, library, repo=args.repo)
            print_rows(rows, library.root, time.perf_counter() - t0, args.jobs, as_json=args.json)
            return service.exit_code(finished)
    for f in finished:
        print(f"#{f.conversion_id}: {f.status.upper()}" + (f" ({f.reason})" if f.reason else ""), flush=True)
    return service.exit_code(finished)
