"""`tileport gpu pack ID|DIR`, `gpu run DIR`, `gpu ingest results.json`: stages D and E on a GPU elsewhere
(`tileport gate ...`, the verb's former name, still works).

pack builds the port's cdylib and writes a self-contained pack directory (cdylib, the reference op, inputs spec,
a runner that needs only Python, torch and cuda.tile); run executes it on the GPU host in a child process with
a time limit and writes results.json; ingest records the results in the store — only when they were made for
the conversion's current head commit.
"""

from __future__ import annotations

import argparse
import json

from tileport.cli._common import config_from
from tileport.validators.gpu.reports import host_summary


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gpu", aliases=["gate"],
                       help="stages D and E on a GPU host: pack a port, run the pack there, ingest its results",
                       description="Correctness and performance of a port against its cuTile Python reference on a "
                                   "GPU: pack the port for a GPU host, run the pack there (a GPU run), ingest its "
                                   "results.json. `tileport gate` is the same verb under its former name.")
    gs = p.add_subparsers(dest="gpu_command", metavar="STEP")
    pk = gs.add_parser("pack", help="build the port's cdylib and write a pack directory for a GPU host")
    pk.add_argument("target", help="a conversion ID from the store, or a port dir (kernel.rs + spec.json) / crate dir")
    pk.add_argument("--op", help="the cuTile Python op file (default: the conversion's op, or examples/<dir name>.py)")
    pk.add_argument("--out", help="pack directory to write (default: gates/<op>)")
    pk.add_argument("--commit", help="commit the pack is for (default: the conversion's head commit)")
    pk.set_defaults(func=run_pack)
    rn = gs.add_parser("run", help="a GPU run: run a pack directory on this (GPU) host; writes DIR/results.json")
    rn.add_argument("dir")
    rn.add_argument("--no-perf", action="store_true", help="correctness only (stage D)")
    rn.add_argument("--timeout", type=float, help="seconds for the whole run (default [gpu] timeout_s)")
    rn.add_argument("--project", metavar="DIR", help="the op's project checked out on this host: its tests run there "
                                                     "instead of from the pack's project/ copy")
    rn.add_argument("--json", action="store_true")
    rn.set_defaults(func=run_run)
    ig = gs.add_parser("ingest", help="record a results.json for its conversion (refused if the commit moved)")
    ig.add_argument("results")
    ig.set_defaults(func=run_ingest)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def run_pack(args: argparse.Namespace) -> int:
    from tileport import service

    try:
        packed = service.pack_port(config_from(args), args.target, op_path=args.op, out=args.out, commit=args.commit)
    except service.BuildFailed as e:
        print("\n".join(e.errors[:20]))
        raise
    print(packed.text())
    return 0


def run_run(args: argparse.Namespace) -> int:
    from tileport import service
    from tileport.records.exits import EXIT_BLOCKED

    ran = service.run_here(config_from(args), args.dir, timeout=args.timeout, perf=not args.no_perf,
                           project=args.project)
    results, corr, perf = ran.results, ran.correctness, ran.perf
    if args.json:
        print(json.dumps(results, indent=1, default=str))
    if corr.env_missing:
        print(f"BLOCKED(env): {corr.env_missing}")
        return EXIT_BLOCKED
    if not args.json:
        for c in corr.cases:
            why = "" if c.status == "PASS" else f": {c.message[:200]}" if not c.evaluated else \
                f" [{c.fail_class}]: {c.message[:200]}"
            print(f"{c.status} {c.name}{why}")
        for r in perf.rows:
            ratio = f"{r.ratio:.3f}" if r.ratio else "-"
            gap = (f" [idle before kernel: ref {r.idle_gap_us.get('ref')} us, port {r.idle_gap_us.get('port')} us]"
                   if r.idle_gap_us else "")
            host = "" if not r.host_us else f" [{host_summary(r.host_us)}]"
            print(f"PERF {r.config}: ref {r.ref_ms} ms, port {r.port_ms} ms, ratio {ratio} {' '.join(r.flags)}{gap}"
                  f"{host}")
        for x in perf.left_out:
            print(f"LEFT OUT {x.get('config')}: {x.get('why')}")
    gm = perf.geomean_measured
    print(corr.summary() + (f"; geomean port/ref {gm:.3f} ({perf.band})" if gm else "")
          + ("" if perf.complete or not perf.rows else "; INCOMPLETE: a configuration was not measured or the L2 "
             "flush was not verified (stage E fails)")
          + f"; results in {ran.results_file}")
    return 0 if corr.all_pass else 1


def run_ingest(args: argparse.Namespace) -> int:
    from tileport import service

    print(service.ingest_results(config_from(args), args.results).text())
    return 0
