"""`tileport gate pack ID|DIR`, `gate run DIR`, `gate ingest results.json`: stages D and E on a GPU elsewhere.

pack builds the port's cdylib and writes a self-contained gate directory (cdylib, the reference op, inputs spec,
a runner that needs only Python, torch and cuda.tile); run executes it on the GPU host in a child process with
a time limit and writes results.json; ingest records the results in the store — only when they were made for
the conversion's current head commit.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tileport.cli._common import config_from, open_store
from tileport.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gate", help="stages D and E: pack a port for a GPU host, run it there, ingest the results",
                       description="Correctness and performance of a port against its cuTile Python reference on a GPU.")
    gs = p.add_subparsers(dest="gate_command", metavar="STEP")
    pk = gs.add_parser("pack", help="build the port's cdylib and write a gate directory")
    pk.add_argument("target", help="a conversion ID from the store, or a port dir (kernel.rs + spec.json) / crate dir")
    pk.add_argument("--op", help="the cuTile Python op file (default: the conversion's op, or examples/<dir name>.py)")
    pk.add_argument("--out", help="gate directory to write (default: gates/<op>)")
    pk.add_argument("--commit", help="commit the gate is for (default: the conversion's head commit)")
    pk.set_defaults(func=run_pack)
    rn = gs.add_parser("run", help="run a gate directory on this (GPU) host; writes DIR/results.json")
    rn.add_argument("dir")
    rn.add_argument("--no-perf", action="store_true", help="correctness only (stage D)")
    rn.add_argument("--timeout", type=float, help="seconds for the whole run (default [gpu] timeout_s)")
    rn.add_argument("--json", action="store_true")
    rn.set_defaults(func=run_run)
    ig = gs.add_parser("ingest", help="record a results.json for its conversion (refused if the commit moved)")
    ig.add_argument("results")
    ig.set_defaults(func=run_ingest)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def run_pack(args: argparse.Namespace) -> int:
    from tileport.validators.gpu import gate
    from tileport.validators.rust.build import prepare_crate

    config = config_from(args)
    conversion_id, commit, op_path = None, args.commit, args.op
    target = args.target
    if target.isdigit():
        store = open_store(config)
        try:
            conv = store.conversion(int(target))
        finally:
            store.close()
        conversion_id = conv["id"]
        commit = commit or conv.get("head_commit")
        worktree = Path(conv.get("worktree") or ".")
        if not op_path:
            op_path = conv["op_path"]
            if not Path(op_path).is_file() and (worktree / op_path).is_file():
                op_path = str(worktree / op_path)
        port_dir = worktree / "ports" / Path(conv["op_path"]).stem
        if not port_dir.is_dir():
            raise UserError(f"conversion {conversion_id}: no port at {port_dir}; pass the port dir instead of the ID")
        target = str(port_dir)
    op_path = op_path or str(Path("examples") / f"{Path(target).resolve().name}.py")
    op = gate.op_info(op_path=op_path)
    layout = prepare_crate(target)
    out = Path(args.out or Path("gates") / op.op)
    perf = {"warmup": config.perf.warmup, "repetitions": config.perf.repetitions, "flush_l2": config.perf.flush_l2}
    from tileport.validators.rust.build import BuildOptions
    opts = BuildOptions.of(config, cubins=False, disasm=False)
    dest, built = gate.pack(layout, op, out, commit=commit, conversion_id=conversion_id, perf=perf, build_opts=opts)
    if not built.ok:
        print("\n".join(built.errors[:20]))
        raise UserError(f"the port's cdylib did not build ({len(built.errors)} error(s)); fix kernel.rs and pack again")
    size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())
    print(f"gate {dest}: {op.op}, {len(op.dtypes)} dtype(s) x {len(op.shapes)} shape(s), "
          f"{len(built.bindings['entries'])} entr(y/ies), {size / 1e6:.1f} MB; run it with `tileport gate run {dest}`")
    return 0


def run_run(args: argparse.Namespace) -> int:
    from tileport.validators.gpu import gate
    from tileport.validators.gpu.reports import correctness_from_results, perf_from_results

    config = config_from(args)
    results, cmd = gate.run_local(Path(args.dir), timeout=args.timeout or config.gpu.timeout_s, perf=not args.no_perf)
    if args.json:
        print(json.dumps(results, indent=1, default=str))
    corr = correctness_from_results(results)
    perf = perf_from_results(results)
    if corr.env_missing:
        print(f"BLOCKED(env): {corr.env_missing}")
        return 3
    passed = sum(c.status == "PASS" for c in corr.cases)
    if not args.json:
        for c in corr.cases:
            print(f"{c.status} {c.name}" + ("" if c.status == "PASS" else f" [{c.fail_class}]: {c.message[:200]}"))
        for r in perf.rows:
            ratio = f"{r.ratio:.3f}" if r.ratio else "-"
            gap = (f" [idle before kernel: ref {r.idle_gap_us.get('ref')} us, port {r.idle_gap_us.get('port')} us]"
                   if r.idle_gap_us else "")
            print(f"PERF {r.config}: ref {r.ref_ms} ms, port {r.port_ms} ms, ratio {ratio} {' '.join(r.flags)}{gap}")
    gm = perf.geomean_measured
    print(f"{passed}/{len(corr.cases)} cases pass" + (f"; geomean port/ref {gm:.3f} ({perf.band})" if gm else "")
          + ("" if perf.complete or not perf.rows else "; INCOMPLETE: a configuration was not measured or the L2 "
             "flush was not verified (the gate fails)")
          + f"; results in {Path(args.dir) / gate.RESULTS_FILE}")
    return 0 if corr.all_pass else 1


def run_ingest(args: argparse.Namespace) -> int:
    from tileport.validators.gpu import gate

    config = config_from(args)
    path = Path(args.results)
    results = gate.load_results(path)
    meta = results.get("gate") or {}
    cid, commit = meta.get("conversion_id"), meta.get("commit")
    if cid is None:
        raise UserError(f"{path}: the gate was packed without a conversion ID; pack it with `tileport gate pack ID`")
    store = open_store(config)
    try:
        conv = store.conversion(int(cid))
        head = conv.get("head_commit")
        if conv.get("branch"):  # the branch itself, not the store's last note of it: a commit since moves it
            from tileport.worktrees.approval import branch_head, conversion_repo

            _, repo, branch = conversion_repo(store, int(cid))
            head = branch_head(repo, int(cid), branch)
        if not commit or commit != head:
            raise UserError(f"{path}: results are for commit {str(commit)[:12] or '(none)'}, conversion {cid} is at "
                            f"{str(head)[:12] or '(none)'}; pack and run the gate again for the current commit")
        ids = _record(store, int(cid), commit, results, path, config)
    finally:
        store.close()
    print(f"conversion {cid} @ {commit[:12]}: recorded stage run(s) {', '.join(map(str, ids))}")
    return 0


def _record(store, cid: int, commit: str, results: dict, path: Path, config) -> list[int]:
    """Store the D run with one row per case, and the E run with every sample when the results have perf rows,
    through the stages' own rules (`agents.stages.host_correctness` / `performance.result_from_report`): env ->
    BLOCKED, all pass -> ALL_PASS; E DONE only when every configuration was measured, the flush verified, the
    geomean within [perf] geomean_max and no configuration above [perf] config_max."""
    from tileport.agents.stages import host_correctness
    from tileport.records import ArtifactRecord, utcnow
    from tileport.validators.gpu.reports import correctness_from_results, perf_from_results

    from tileport.store import record_run

    corr = correctness_from_results(results)
    art = [ArtifactRecord.of("gate_results", path)]
    # attempts are numbered by record_run inside the run's own transaction (with its cases / perf rows)
    d = host_correctness.result_from_report(corr, attempt=1, started_at=utcnow())
    d = d.model_copy(update={"artifacts": art, "details": {
        **d.details, "passed": sum(c.status == "PASS" for c in corr.cases), "env_missing": corr.env_missing,
        "host_error": corr.host_error, "source": "gate ingest"}})
    ids = [record_run(store, cid, d, commit=commit, cases=corr.cases).run_id]
    if d.verdict == "ALL_PASS" and (results.get("perf") or {}).get("rows"):  # E only after D passed
        from tileport.agents.stages.performance import result_from_report

        perf = perf_from_results(results)
        e = result_from_report(perf, attempt=1, started_at=utcnow(),
                               geomean_max=config.perf.geomean_max, config_max=config.perf.config_max)
        e = e.model_copy(update={"artifacts": art, "details": {**e.details, "source": "gate ingest"}})
        ids.append(record_run(store, cid, e, commit=commit, perf_rows=perf.rows).run_id)
    return ids
