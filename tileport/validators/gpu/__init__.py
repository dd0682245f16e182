"""Stages D (host + correctness) and E (performance) on a real GPU.

Parts: `signature` (entry signatures of kernel.rs), `ffi` (generated C-ABI launchers + bindings), `cdylib` (the
shared-library crate and its build), `runner` (what travels to the GPU host: stdlib + torch + cuda.tile only,
with `PortLibrary`, the ctypes wrapper), `gate` (pack / run locally or through `[gpu] command_prefix` / results),
`reports` (the domain results below).

Interface for the stage modules (tileport/pipeline/stages/), which turn these into StageResults:

    report = host_and_correctness(crate_dir, analysis, spec, config)  -> CorrectnessReport
        .env_missing: str | None    set -> D BLOCKED(env); names the missing part and its fix
        .cases: list[Case]          name, dtype, shape, status PASS|FAIL, max_abs_err, fail_class host|kernel|env, message
        .fail_class                 env > host > kernel over the failing cases (None when all pass)
        .all_pass                   every case passed (and there was at least one)
        .host_error                 the port could not be built / loaded / mapped (a host fault before any case)
        .commands, .artifacts       cargo build, the GPU run; cdylib, gate manifest, results.json (sha256)
    perf = performance(crate_dir, analysis, spec, config)  -> PerfReport
        .env_missing; .rows: list[PerfRow] (config, ref_ms, port_ms, ratio, ref_samples, port_samples, flags, hw,
        tiny, failed); .geomean (tiny and failed rows left out); .worst; .band ("ok"|"mild"|"moderate"|"large");
        .complete (every row measured and the L2 flush verified: a missing measurement is a failure);
        .hw (measured copy GB/s, GEMM TFLOP/s, flush check; each row's .hw has both sides' % of them)

`analysis` is stage A's Analysis (object, dict or analysis.json path; its source path, dtypes, shapes,
tolerances are used); `spec` a DumpSpec or None (the crate's own); `config` a tileport Config. Both functions
build the cdylib, pack a pack directory under the crate (`<crate>-gate`), and run it here or through
`[gpu] command_prefix`; `performance` re-runs correctness on the timed calls. Nothing here imports torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tileport.validators.gpu.reports import (Case, CorrectnessReport, PerfReport, PerfRow, band,
                                             correctness_from_results, perf_from_results)

__all__ = ["host_and_correctness", "performance", "Case", "CorrectnessReport", "PerfRow", "PerfReport", "band",
           "run_pack_for_crate", "pack_crate"]


def pack_crate(crate_dir: str | Path, analysis: Any, spec: Any, config: Any, *, commit: str | None = None,
               conversion_id: int | None = None):
    """Build the crate's cdylib and pack its gate beside the crate (`<crate>-gate`); returns (pack dir, build
    result) or raises EnvironmentBlocked / UserError (a refusal naming what is missing)."""
    from tileport.validators.gpu import hostpack
    from tileport.validators.rust.build import BuildOptions
    from tileport.validators.rust.crate import CrateLayout, open_crate

    layout = open_crate(crate_dir)
    if spec is not None:
        layout = CrateLayout(layout.root, spec)
    op = hostpack.op_info(analysis)
    dest = layout.root.parent / f"{layout.root.name}-gate"
    perf_cfg = {"warmup": config.perf.warmup, "repetitions": config.perf.repetitions,
                "flush_l2": config.perf.flush_l2}
    opts = BuildOptions.of(config, cubins=False, disasm=False)
    return hostpack.pack(layout, op, dest, commit=commit, conversion_id=conversion_id, perf=perf_cfg, build_opts=opts,
                     test_timeout_s=config.gpu.test_timeout_s)


def run_pack_for_crate(crate_dir: str | Path, analysis: Any, spec: Any, config: Any, *, perf: bool,
                       commit: str | None = None, conversion_id: int | None = None):
    """Build + pack + run; returns (results dict, commands, artifacts, host_error, env_missing)."""
    from tileport.errors import EnvironmentBlocked, UserError
    from tileport.validators.gpu import hostpack

    try:
        dest, built = pack_crate(crate_dir, analysis, spec, config, commit=commit, conversion_id=conversion_id)
    except EnvironmentBlocked as e:
        return {}, [], [], None, str(e)
    except UserError as e:  # the pack refused (a test file gone, a helper missing): the host side's to fix
        return {}, [], [], str(e), None
    commands, artifacts = list(built.commands), list(built.artifacts)
    if not built.ok:
        return {}, commands, artifacts, "the port's cdylib did not build: " + "; ".join(built.errors[:3]), None
    if config.gpu.command_prefix:
        results, cmds = hostpack.run_remote(dest, config.gpu.command_prefix, remote_dir=config.gpu.remote_dir,
                                        timeout=config.gpu.timeout_s, python=config.gpu.python, perf=perf,
                                        checkout=config.gpu.remote_checkout or None)
        commands += [c.record for c in cmds]
    else:
        results, cmd = hostpack.run_local(dest, timeout=config.gpu.timeout_s, perf=perf)
        commands.append(cmd.record)
    artifacts += hostpack.results_artifacts(dest)
    return results, commands, artifacts, None, results.get("env_missing")


def host_and_correctness(crate_dir, analysis, spec, config) -> CorrectnessReport:
    results, commands, artifacts, host_error, env_missing = run_pack_for_crate(crate_dir, analysis, spec, config,
                                                                               perf=False)
    report = correctness_from_results(results) if results else CorrectnessReport()
    report.env_missing = env_missing or report.env_missing
    report.host_error = host_error or report.host_error
    report.commands, report.artifacts = commands, artifacts
    return report


def performance(crate_dir, analysis, spec, config) -> PerfReport:
    results, commands, artifacts, host_error, env_missing = run_pack_for_crate(crate_dir, analysis, spec, config,
                                                                               perf=True)
    report = perf_from_results(results) if results else PerfReport()
    report.env_missing = env_missing or report.env_missing
    report.host_error = host_error
    report.commands, report.artifacts = commands, artifacts
    return report
