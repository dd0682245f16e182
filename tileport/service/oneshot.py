"""One-stage runs outside a conversion, through the stages themselves: `tileport analyze OP` is stage A's analysis
(`pipeline.stages.analyze.analyze`), `tileport build-rust DIR` is stage B's judge (`pipeline.stages.write_kernel.
build_and_check`); each verdict is recorded in the store as `tileport run` records a stage's (`record`), so
`tileport status` and the dashboard show it. Also the one-shot tools around them: `tileport draft` (the
deterministic translator), `tileport ir-diff`, a Triton op analysed on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tileport.config import Config
from tileport.errors import EnvironmentBlocked, UserError
from tileport.records import StageResult, utcnow

__all__ = ["record", "analyze", "analyze_op", "analyze_examples", "find_examples", "check_targets", "record_analysis",
           "is_triton_op", "check_triton_op", "read_bench", "analyze_triton", "build_options", "build_rust",
           "BuildRust", "init_spec", "load_analysis", "draft", "draft_triton", "LiftIncomplete", "RustBuildResult",
           "ir_diff"]


def record(config: Config, op_path: str, kernel: str | None, result: StageResult) -> None:
    """A one-stage run's verdict into the repository's store, through the same path as `tileport run`'s."""
    from tileport.service.conversions import open_store
    from tileport.store import runs

    with open_store(config) as store:
        runs.record_standalone(store, op_path, kernel, result)


# --- stage A: `tileport analyze` ----------------------------------------------------------------------------------
def check_targets(targets: list[str]) -> list[str]:
    from tileport.analysis.pipeline import check_targets as checked

    return checked(targets)


def find_examples() -> list[Path]:
    from tileport.analysis.corpus import find_examples as found

    return found()


def is_triton_op(path: str | Path) -> bool:
    """Whether the file is a Triton op (a module with a @triton.jit kernel)."""
    from tileport.analysis.triton.pairing import _is_triton_file

    p = Path(path)
    return p.is_file() and p.suffix == ".py" and _is_triton_file(p)


def check_triton_op(path: str | Path) -> Path:
    """`--triton PATH`: a Python file with a @triton.jit kernel, else a one-line UserError."""
    from tileport.analysis.triton.pairing import check_triton_op as checked

    return checked(path)


def read_bench(path: str | Path) -> dict:
    """`--reference-timings BENCH.json`: the pair benchmark's results, else a one-line UserError."""
    from tileport.analysis.triton.pairing import read_bench as read

    return read(path)


def record_analysis(config: Config, op_path: str | Path, kernel: str | None, analysis,
                    started_at=None) -> StageResult:
    """An analysis as stage A's verdict, recorded in the store; the StageResult."""
    from tileport.pipeline.stages.analyze import result_from_analysis

    result = result_from_analysis(analysis, started_at=started_at)
    record(config, str(Path(op_path).resolve()), kernel, result)
    return result


def analyze(config: Config, op: str | Path, *, out_dir: str | Path | None = None, kernel: str | None = None,
            triton: str | Path | None = None, bench: dict | None = None, python: str | None = None,
            started_at=None, **kw: Any):
    """`tileport analyze OP`: stage A's analysis of the op (and its Triton twin: `triton` given, else by name; the
    reference choice measured from `bench` when given), recorded as stage A's verdict; the Analysis. Bad input
    raises before anything is written, the store included."""
    from tileport.pipeline.stages.analyze import analyze as stage_a
    from tileport.analysis.triton.pairing import find_twin

    started = started_at or utcnow()
    if bench is not None and not triton and find_twin(op) is None:
        raise UserError("--reference-timings: this op has no Triton twin; pass it with --triton TRITON_OP.py")
    a = stage_a(op, out_dir=out_dir, kernel=kernel, config=config, python=python, triton=triton, bench=bench, **kw)
    record_analysis(config, op, kernel, a, started_at=started)
    return a


def analyze_op(config: Config, op: str | Path, *, out_dir: str | Path, kernel: str | None = None):
    """The op's analysis alone (no Triton twin, nothing recorded): what `tileport draft OP` drafts from when there
    is no current analysis."""
    from tileport.analysis.pipeline import analyze_op as analysed

    return analysed(str(op), out_dir=str(out_dir), kernel=kernel, targets=list(config.targets), config=config,
                    run_tileiras=True, workers=None)


def analyze_examples(paths: list[Path], *, out_root: Path, on_done=None, **kw) -> list:
    """Stage A's analysis of each op (`tileport analyze` with no OP: the bundled examples), one op's failure not
    stopping the rest; `on_done(outcome)` after each."""
    from tileport.analysis.corpus import analyze_examples as each

    return each(paths, out_root=out_root, on_done=on_done, **kw)


def analyze_triton(config: Config, op: str | Path, *, out_dir: str | Path | None = None, kernel: str | None = None,
                   python: str | None = None, started_at=None, record: bool = True):
    """`tileport analyze TRITON_OP.py`: the Triton op's analysis (source.kind triton), recorded as stage A's
    (`record`; `tileport draft TRITON_OP.py` records nothing); `out_dir` default: out/<op>.triton/."""
    from tileport.analysis.triton.pipeline import analyze_triton_op

    a = analyze_triton_op(op, out_dir=out_dir, kernel=kernel, config=config, python=python)
    if record:
        record_analysis(config, op, kernel, a, started_at=started_at)
    return a


# --- stage B's judge: `tileport build-rust DIR` -------------------------------------------------------------------
def build_options(config: Config, **overrides):
    """The build options the config implies, with what the caller decides (cubins, disasm, timeouts, artifacts)."""
    from tileport.validators.rust.build import BuildOptions, shared_target_dir

    overrides.setdefault("target_dir", shared_target_dir())
    return BuildOptions.of(config, **overrides)


class BuildRust:
    """What `tileport build-rust DIR` did: the build, the IR self-check (None without --reference), the stage
    result recorded."""

    def __init__(self, build, report, stage_result: StageResult):
        self.build, self.report, self.stage_result = build, report, stage_result


def build_rust(config: Config, crate_dir: str | Path, opts, *, reference: str | Path | None = None,
               spec: str | Path | None = None, out: str | Path | None = None) -> BuildRust:
    """Stage B's judge on a port directory (build, then the IR self-check against `reference` when given),
    recorded as a stage B verdict of the op; an environment stop is recorded as BLOCKED, then raised."""
    from tileport.pipeline.stages import write_kernel
    from tileport.validators.rust.build import prepare_crate
    from tileport.validators.rust.reference import load_analysis as load

    analysis = load(reference) if reference else None  # bad input before a long build
    layout = prepare_crate(crate_dir, spec_path=spec, out=out)
    op_path = analysis.source.path if analysis is not None else str(Path(crate_dir).resolve())
    started = utcnow()
    try:
        build, report = write_kernel.build_and_check(layout, opts, analysis, analysis_file=reference)
    except EnvironmentBlocked as e:
        record(config, op_path, None, write_kernel.result_from_blocked(e, started_at=started))
        raise
    stage_result = write_kernel.result_from_build(build, report, started_at=started)
    record(config, op_path, None, stage_result)
    return BuildRust(build, report, stage_result)


def init_spec(port_dir: str | Path, analysis_ref: str | Path, *, spec: str | Path | None = None
              ) -> tuple[list[str], int]:
    """`tileport build-rust DIR --init-spec ANALYSIS`: with no spec in DIR write DIR/spec.json from the analysis
    (one variant per Constant set x dtype, the reference's array assumptions, the `reference` key); with one, rewrite
    the array assumptions of every variant that names a reference. (the lines to print, the exit status)"""
    from tileport.validators.rust.reference import (analysis_path, derive_spec, load_analysis as load,
                                                   port_tensor_params, sync_spec)
    from tileport.validators.rust.spec import SPEC_FILENAME, load_spec

    analysis = load(analysis_ref)
    src = Path(port_dir)
    if src.is_file():
        src = src.parent
    existing = Path(spec) if spec else next(
        (src / n for n in ("spec.json", SPEC_FILENAME) if (src / n).is_file()), None)
    kernel_rs = src / "kernel.rs"
    port_params = port_tensor_params(kernel_rs.read_text(encoding="utf-8", errors="replace")) \
        if kernel_rs.is_file() else None
    if existing is None:
        derived = derive_spec(analysis, port_params=port_params)
        target = src / "spec.json"
        target.write_text(derived.to_json(), encoding="utf-8")
        n = sum(len(e.variants) for e in derived.entries)
        return [f"wrote {target}: {len(derived.entries)} entr{'y' if len(derived.entries) == 1 else 'ies'}, {n} "
                f"variant(s) from {analysis_path(analysis_ref)}; rename entries/generics/parameters to the port's"], 0
    if existing.suffix != ".json":
        raise UserError(f"--init-spec rewrites JSON specs only; {existing} is not one")
    synced, changes = sync_spec(load_spec(existing), analysis, port_params)
    if all(v.reference is None for e in synced.entries for v in e.variants):
        return [f"{existing}: no variant names a reference; nothing synced (add \"reference\" keys, or move the "
                "spec away to write a fresh skeleton)"], 1
    existing.write_text(synced.to_json(), encoding="utf-8")
    return [*changes, f"{existing}: {len(changes)} change(s) from {analysis_path(analysis_ref)}"], \
        1 if any("not synced" in c for c in changes) else 0


def load_analysis(path: str | Path):
    """A reference analysis (out/<op> or its analysis.json), else a one-line UserError."""
    from tileport.validators.rust.reference import load_analysis as load

    return load(path)


# --- the deterministic translator: `tileport draft` -----------------------------------------------------------------
def draft(analysis, *, kernel: str | None = None):
    """The deterministic draft of a port from its analysis (no model)."""
    from tileport.draft import draft_port

    return draft_port(analysis, kernel=kernel)


def draft_triton(analysis, lift_dir: Path, *, config: Config, kernel: str | None = None):
    """A Triton op lifted to cuTile Python, then drafted: (draft, the lifted module, notes); LiftIncomplete when the
    lifted kernel has holes it cannot compile without."""
    from tileport.draft.triton_lift import draft_triton as drafted

    return drafted(analysis, lift_dir, config=config, kernel=kernel)


def __getattr__(name: str):
    if name == "LiftIncomplete":
        from tileport.draft.triton_lift import LiftIncomplete

        return LiftIncomplete
    if name == "RustBuildResult":
        from tileport.validators.rust.build import RustBuildResult

        return RustBuildResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def ir_diff(reference: str | Path, port: str | Path, *, config: Config | None = None, target: str | None = None):
    """The Tile IR diff of two modules (text, or bytecode disassembled with the config's tileirdisasm), judged for
    `target` (e.g. sm_90; None: every target either side names), as `tileport ir-diff` reports it."""
    import re

    from tileport.validators.tileir.diff import diff_modules
    from tileport.validators.tileir.report import load_module

    disasm = None
    if config is not None:
        from tileport.exec.toolchain import from_config

        disasm = from_config(config).tileirdisasm
    ref, gen = load_module(reference, disasm), load_module(port, disasm)
    if target and not re.fullmatch(r"sm_[0-9]+[a-z]?", target):
        raise UserError(f"--target {target!r} is not a GPU target: give one like sm_90 or sm_100")
    return diff_modules(ref, gen, target=target)
