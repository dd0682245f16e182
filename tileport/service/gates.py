"""Gates on a GPU elsewhere (`tileport gate pack|ingest`, the dashboard's `g` / `i`): open the store by the one
rule and call `tileport.pipeline.gate_service`, which returns typed results (PackedGate, IngestedResults) for the
caller to print or render. The faces reach the gate service only through here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tileport.pipeline import gate_service
from tileport.config import Config
from tileport.exec.proc import ToolScope, tool_scope  # a pack's tools (cargo), killed as one (the dashboard)
from tileport.service.conversions import open_store
from tileport.store import Store

BuildFailed, PackedGate = gate_service.BuildFailed, gate_service.PackedGate
IngestedResults = gate_service.IngestedResults


def pack_gate(config: Config, target: str, *, repo: str | Path | None = None, store: str | Path | None = None,
              op_path: str | None = None, out: str | Path | None = None, commit: str | None = None,
              root: str | Path | None = None, log=None) -> PackedGate:
    """`tileport gate pack TARGET`: a conversion ID (read from the repository's store) or a port / crate dir."""
    if not target.isdigit():
        return gate_service.pack(config, target, store=None, op_path=op_path, out=out, commit=commit, root=root,
                                 log=log)
    with open_store(config, repo, store) as s:
        return gate_service.pack(config, target, store=s, op_path=op_path, out=out, commit=commit, root=root, log=log)


def ingest_results(config: Config, path: str | Path, *, repo: str | Path | None = None,
                   store: str | Path | None = None, conversion_id: int | None = None) -> IngestedResults:
    """`tileport gate ingest results.json`: record D (and E) for the conversion the gate names, only for its
    current head commit (else a one-line UserError and nothing recorded)."""
    with open_store(config, repo, store) as s:
        return gate_service.ingest(s, config, path, conversion_id=conversion_id)


def gate_busy(store: Store, conversion_id: int) -> str | None:
    """Why no gate can be packed or ingested for the conversion now (a stage runs), or None."""
    return gate_service.busy(store, conversion_id)


def likely_results(store: Store, conversion_id: int, roots=()) -> Path:
    """The results.json to offer for ingesting (the newest pack's gate dir, else gates/<op>/ under `roots`)."""
    return gate_service.likely_results(store, conversion_id, roots)


@dataclass(frozen=True)
class GateRun:
    """`tileport gate run DIR` on this machine (a GPU host): the results, read as D's cases and E's rows."""

    results: dict[str, Any]
    correctness: Any  # validators.gpu.reports: the cases, env_missing, all_pass
    perf: Any  # validators.gpu.reports: the rows, geomean, band, complete
    results_file: Path


def run_here(config: Config, gate_dir: str | Path, *, timeout: float | None = None, perf: bool = True,
             project: str | None = None) -> GateRun:
    """Run a packed gate on this machine (`tileport gate run DIR`); nothing recorded (ingest does that). `project`:
    the op's project checked out here, run instead of the pack's copy."""
    from tileport.validators.gpu import gate
    from tileport.validators.gpu.reports import correctness_from_results, perf_from_results

    results, _cmd = gate.run_local(Path(gate_dir), timeout=timeout or config.gpu.timeout_s, perf=perf, project=project)
    return GateRun(results, correctness_from_results(results), perf_from_results(results),
                   Path(gate_dir) / gate.RESULTS_FILE)
