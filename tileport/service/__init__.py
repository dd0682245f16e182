"""The verbs the CLI and the dashboard call: the one door from the faces (cli/, tui/) to the pipeline. Entry points
parse and render; the decisions are here, once. A lazy face: `from tileport import service` imports nothing else,
and `service.X` loads the module that holds X the first time it is asked for.

- `conversions`  where a repository's store is, start / reuse / resume / rerun / stop, the exit code, `why_not`
- `edits`        a person's edit of a port: what changed, commit it, stage B's gates on it
- `gpu_runs`     stages D and E on a GPU elsewhere: pack, run here, ingest
- `decisions`    approve / override / reject / merge / rebase, and their refusals
- `oneshot`      `tileport analyze` / `build-rust` as one-stage runs through the stages themselves; `ir-diff`
- `environment`  the doctor's checks, the offline bundle, a local model server
- `library`      a whole library: its op files, stage A on each, a conversion per op, the summary rows
"""

from __future__ import annotations

from importlib import import_module

_MODULES = ("conversions", "edits", "gpu_runs", "decisions", "oneshot", "environment", "library")
_WHERE = {
    "conversions": ("Store", "Limits", "StopOutcome", "ConversionRunner", "EditJudged", "Finished", "READONLY", "WRITES",
                    "store_path", "configured", "open_store", "exit_code", "runner", "reusable", "start_or_reuse",
                    "start", "resume", "rerun", "stop", "stop_conversion", "conversion_holder", "live_file",
                    "worked_examples", "with_tests", "why_not", "read_git", "examples_repo", "list_worktrees", "prune",
                    "recover"),
    "edits": ("edited_files", "why_not_edit", "commit_human_edit", "ungated_head", "judge_edit"),
    "gpu_runs": ("BuildFailed", "PackedGate", "IngestedResults", "pack_gate", "ingest_results", "gate_busy",
                 "likely_results", "ToolScope", "tool_scope", "GateRun", "run_here"),
    "decisions": ("PAST", "ApprovalRefused", "approve", "check_approval", "override", "reject", "check_merge",
                  "merge", "rebase", "refusal"),
    "oneshot": ("record", "analyze", "analyze_op", "analyze_examples", "find_examples", "check_targets", "record_analysis",
                "is_triton_op", "check_triton_op", "read_bench", "analyze_triton", "build_options", "build_rust",
                "BuildRust", "init_spec", "load_analysis", "draft", "draft_triton", "LiftIncomplete", "RustBuildResult",
                "ir_diff"),
}
_WHERE["library"] = ("find_library", "analyze_library", "GATE_ORDER", "library_rows", "library_conversions")
_OWNER = {name: module for module, names in _WHERE.items() for name in names}
__all__ = sorted([*_OWNER, *_MODULES])


def __getattr__(name: str):
    if name in _MODULES:
        return import_module(f"{__name__}.{name}")
    module = _OWNER.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # asked once: a plain attribute from then on (monkeypatch.setattr works on it)
    return value


def __dir__() -> list[str]:
    return __all__
