"""Stage A, deterministic: analyse one cuTile Python op and dump its reference Tile IR.

`analyze_op` reads the source (AST only), runs the child process that imports the module and
exports every kernel instance for every target, disassembles each bytecode (`tileirdisasm`),
compiles it with `tileiras`, and writes `analysis.json` plus the artifacts into the output
directory — built beside it and renamed into place, so a failure leaves nothing behind.

Output layout (`out/<op>/` by default):
    analysis.json
    <target>/<kernel>__<CONST>-<value>...__<dtype>.tileirbc   reference bytecode
    <target>/<...>.tileir                                     its text (tileirdisasm)
    <target>/<...>.cubin                                      tileiras -O3 output
"""

from __future__ import annotations

import ast
import functools
import os
import resource
import shutil
import sys
import time
from pathlib import Path

from pydantic import ValidationError

from tileport.analysis import testfind
from tileport.analysis.backend import BackendJob, run_backend, summarize_ir
from tileport.analysis.declaration import read_declaration
from tileport.analysis.loader import Confinement, checkout_root, run_child, shared_warm_child
from tileport.analysis.outdir import check_output_dir, staged_dir
from tileport.analysis.plan import Plan
from tileport.analysis.schema import (Analysis, CaptureInfo, Instance, SourceInfo, TargetBuild, Timings,
                                                 ToleranceSpec, ToolInfo, UnresolvedKernel, Variant)
from tileport.analysis.static import inspect_source
from tileport import limits
from tileport.config import Config, check_target
from tileport.errors import EnvironmentBlocked, UserError
from tileport.exec import tileir
from tileport.exec.proc import run_command
from tileport.exec.sandbox import status as sandbox_status
from tileport.records import ArtifactRecord, CommandRecord, sha256_file
from tileport.exec.toolchain import Toolchain, from_config

DEFAULT_OUT_ROOT = Path("out")


def default_out_dir(op_path: str | Path) -> Path:
    return DEFAULT_OUT_ROOT / Path(op_path).stem


def read_source(path: Path) -> tuple[str, ast.Module]:
    """The module's text and AST, or a one-line error saying what is wrong with the file."""
    if path.suffix != ".py" and not path.is_dir():
        raise UserError(f"{path}: not a Python file (expected a .py module with @ct.kernel functions)")
    what = "one cuTile Python .py module (or no argument to analyse examples/)"
    data = limits.read_bytes(path, what, limits.SOURCE_BYTES)
    if path.suffix != ".py":
        raise UserError(f"{path}: not a Python file (expected a .py module with @ct.kernel functions)")
    if b"\x00" in data:
        raise UserError(f"{path}: not Python source (binary content); pass a .py module")
    try:
        text = data.decode("utf-8-sig")  # Python itself accepts a UTF-8 BOM
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text (byte {e.start}); save the module as UTF-8") from None
    limits.check_depth(text, str(path))
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as e:
        raise UserError(f"{path}:{e.lineno}: syntax error: {e.msg}; fix the module and rerun") from None
    except (RecursionError, MemoryError):
        raise UserError(f"{path}: nested too deeply for the parser ({limits.DEPTH.describe()}); simplify it") from None
    return text, tree


def check_targets(targets: list[str]) -> list[str]:
    out = []
    for t in targets:
        try:
            out.append(check_target(t))
        except ValueError as e:
            raise UserError(str(e)) from None
    if not out:
        raise UserError("no targets; pass --target sm_90 (or set targets in tileport.toml)")
    return list(dict.fromkeys(out))


def toolchain_for(config: Config) -> Toolchain:
    return from_config(config)


@functools.lru_cache(maxsize=8)
def tool_version(tool: str) -> str | None:
    res = run_command([tool, "--version"], timeout=30)
    for line in res.stdout.splitlines():
        if "release" in line:
            return line.split("tools,", 1)[-1].strip()
    return None


def _require_tools(toolchain: Toolchain, need_tileiras: bool) -> None:
    if toolchain.tileirdisasm is None:
        raise EnvironmentBlocked("tileirdisasm not found; pip install 'cuda-tile[tileiras]' (13.4 or newer) or set "
                                 "[toolchain] tileirdisasm in tileport.toml (tileport doctor checks this)")
    if need_tileiras and toolchain.tileiras is None:
        raise EnvironmentBlocked("tileiras not found; pip install 'cuda-tile[tileiras]' or set CUTILE_TILEIRAS_PATH "
                                 "or [toolchain] tileiras in tileport.toml (tileport doctor checks this)")


def _first_error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln[:300]
    return (lines[0][:300] if lines else "no output")


def _relocate(rec: CommandRecord, stage: Path, final: Path) -> CommandRecord:
    """Commands ran in the staging directory; record them with the paths the files now have."""
    s, f = str(stage), str(final)
    return rec.model_copy(update={"argv": [a.replace(s, f) for a in rec.argv],
                                  "cwd": rec.cwd.replace(s, f) if rec.cwd else None})


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def confinement(op: Path, final: Path, stage: Path) -> tuple[Confinement, bool]:
    """The op's checkout read-only for its own code, tileport's output under it writable; and whether a warm server
    (its mounts made once, for every op it forks) can serve it: not when only this op's staging directory could be
    left writable (an output directory right at the top of the checkout)."""
    root = checkout_root(op)
    if root is None:
        return Confinement(), True
    out_root = Path(os.path.realpath(final.parent))
    if out_root == root or out_root in root.parents:
        return Confinement((root,), (Path(os.path.realpath(stage)),)), False
    return Confinement((root,), (out_root,) if root in out_root.parents else ()), True


def _artifact(kind: str, root: Path, rel: Path) -> ArtifactRecord:
    p = root / rel
    return ArtifactRecord(kind=kind, path=rel.as_posix(), sha256=sha256_file(p), bytes=p.stat().st_size)


def analyze_op(path: str | Path, *, targets: list[str] | None = None, out_dir: str | Path | None = None,
               kernel: str | None = None, config: Config | None = None, toolchain: Toolchain | None = None,
               run_tileiras: bool = True, workers: int | None = None, python: str | None = None,
               warm: bool = False, tests: list[str] | None = None, discover_tests: bool | None = None,
               confine: bool = True) -> Analysis:
    """Analyse one op module; returns the Analysis also written to `<out_dir>/analysis.json`.

    Raises UserError (one line, what to do) for bad input and EnvironmentBlocked for missing tools;
    in both cases nothing is left at `out_dir`. The A-stage record is `tileport.pipeline.stages.analyze`'s.
    `warm=True` forks the child from a shared warm server (for analysing many ops in one process).
    `tests`: the op's pytest files/directories or scripts to capture launches from (besides `[analysis] tests` and,
    unless `discover_tests` is False, the tests/**/test_<op>.py found in its project).
    `confine`: the op's own code (its tests, its main block) runs with the git checkout it lies in read-only, so
    nothing it writes beside itself lands in the user's files (`confinement`); a conversion's stage A passes False:
    it analyses the worktree's copy, and puts back what the op changed there (an op outside the repository, which
    has no copy there, runs confined).
    """
    t0 = time.perf_counter()
    config = config or Config()
    targets = check_targets(list(targets) if targets else list(config.targets))
    path = Path(path)
    text, tree = read_source(path)
    decl = read_declaration(tree, path.name)
    static = inspect_source(tree)
    python = python or config.analysis.python
    if not static.kernels and "kernel" not in text:
        raise UserError(f"{path}: no @ct.kernel function found; decorate the device function with @ct.kernel "
                        "(import cuda.tile as ct)")
    find = config.analysis.discover_tests if discover_tests is None else discover_tests
    test_paths = testfind.resolve(path, list(tests or []), list(config.analysis.tests), find)
    t_static = time.perf_counter()
    toolchain = toolchain or toolchain_for(config)
    _require_tools(toolchain, run_tileiras)
    if out_dir is None and path.stem in ("", ".", ".."):
        raise UserError(f"{path}: its name gives no output directory name; rename the op or pass --out DIR")
    final = Path(out_dir if out_dir is not None else default_out_dir(path)).absolute()
    check_output_dir(final)  # refuse before the long part: never replace what tileport did not make
    notes: list[str] = []

    with staged_dir(final) as stage:
        request = {"path": str(path.resolve()), "static": static.model_dump(mode="json"),
                   "declaration": decl.model_dump(mode="json"), "targets": targets,
                   "bytecode_version": config.toolchain.bytecode_version, "out_dir": str(stage), "kernel": kernel,
                   "tests": [str(p) for p in test_paths], "tests_timeout_s": config.analysis.tests_timeout_s,
                   "tests_budget_s": config.analysis.tests_budget_s}
        t_child = time.perf_counter()
        confined, shareable = confinement(path, final, stage) if confine else (Confinement(), True)
        if confined.readonly and not sandbox_status().ok:
            notes.append(f"the op's own code ran with {confined.readonly[0]} writable: {sandbox_status().detail}")
        server = shared_warm_child(python, confined) if warm and shareable else None
        cpu0 = _children_cpu()
        reply, child = (server.run(request, cwd=stage) if server is not None
                        else run_child(request, cwd=stage, python=python, confined=confined))
        host_cmds = []
        if config.gpu.command_prefix and _capture_missed(reply):
            reply, child, host_cmds = _capture_on_gpu_host(config, path, tree, test_paths, static, decl, request,
                                                           reply, child, stage, python, notes, confined)
        child_cpu = server.last_cpu_s if server is not None else _children_cpu() - cpu0
        t_child = time.perf_counter() - t_child
        plan = Plan.model_validate(reply["plan"])
        exports = reply["exports"]
        notes.extend(plan.notes)
        mode = (reply.get("capture") or {}).get("mode")
        plan.failed = {k: _gpu_host_hint(config, m, mode) for k, m in plan.failed.items()}
        if not plan.variants:
            failures = list(plan.failed.values()) or [f"{path.name}: no kernel variant to analyse"]
            raise UserError(failures[0] if len(failures) == 1 else
                            f"{path.name}: no kernel could be analysed: " + " | ".join(failures))

        jobs: list[BackendJob] = []
        where: list[tuple[int, int, str]] = []  # (variant index, instance index, target) per job
        for vi, v in enumerate(plan.variants):
            for ii, inst in enumerate(v.instances):
                for target in targets:
                    rel = Path(exports[inst.stem]["builds"][target]["path"])
                    jobs.append(BackendJob(bytecode=stage / rel, target=target,
                                           text_out=stage / tileir.text_path(rel),
                                           cubin_out=stage / tileir.cubin_path(rel) if run_tileiras else None))
                    where.append((vi, ii, target))
        env = toolchain.cargo_env()  # keeps a system CUDA's ptxas/nvvm away from tileiras
        t_backend = time.perf_counter()
        results = run_backend(jobs, tileirdisasm=toolchain.tileirdisasm, tileiras=toolchain.tileiras,
                              env=env, workers=workers)
        t_backend = time.perf_counter() - t_backend

        commands = [c.record for c in host_cmds] + [_relocate(child.record, stage, final)]
        builds: dict[tuple[int, int], list[TargetBuild]] = {}
        disasm_s = tileiras_s = 0.0
        for (vi, ii, target), r in zip(where, results):
            v, inst = plan.variants[vi], plan.variants[vi].instances[ii]
            label = f"{v.kernel}[{v.name}]" if v.name else v.kernel
            commands.append(_relocate(r.disasm.record, stage, final))
            disasm_s += r.disasm.seconds
            if not r.disasm.ok:
                raise UserError(f"tileirdisasm failed on {label} ({inst.dtype}, {target}) with exit status "
                                f"{r.disasm.returncode}: {_first_error_line(r.disasm.stderr)}; check that tileirdisasm "
                                f"accepts bytecode {config.toolchain.bytecode_version} (tileport doctor)")
            if r.tileiras is not None:
                commands.append(_relocate(r.tileiras.record, stage, final))
                tileiras_s += r.tileiras.seconds
                if not r.tileiras.ok:
                    raise UserError(f"tileiras rejected {label} ({inst.dtype}, {target}) with exit status "
                                    f"{r.tileiras.returncode}: {_first_error_line(r.tileiras.stderr + r.tileiras.stdout)}"
                                    "; the kernel compiles to Tile IR but not for this GPU — fix it or drop the target")
            rel = r.job.bytecode.relative_to(stage)
            export = exports[inst.stem]["builds"][target]
            builds.setdefault((vi, ii), []).append(TargetBuild(
                target=target,
                bytecode=_artifact("tileir_bytecode", stage, rel),
                text=_artifact("tileir_text", stage, tileir.text_path(rel)),
                cubin=_artifact("cubin", stage, tileir.cubin_path(rel)) if r.tileiras is not None else None,
                export_seconds=export["seconds"],
                disasm_seconds=round(r.disasm.seconds, 4),
                tileiras_seconds=round(r.tileiras.seconds, 4) if r.tileiras is not None else None,
                ir=summarize_ir(r.job.text_out.read_text(encoding="utf-8"))))
        if not run_tileiras:
            notes.append("tileiras was skipped: no cubins, so no proof the backend accepts the IR")

        variants = [Variant(kernel=v.kernel, name=v.name, constants=v.constants, sources=v.sources, instances=[
            Instance(dtype=inst.dtype, param_dtypes=inst.param_dtypes, symbol=exports[inst.stem]["symbol"],
                     signature=exports[inst.stem]["signature"], builds=builds[(vi, ii)])
            for ii, inst in enumerate(v.instances)]) for vi, v in enumerate(plan.variants)]
        capture = CaptureInfo.model_validate(reply["capture"]) if reply.get("capture") else None
        if capture is not None and confined.readonly:
            capture.errors = [f"{e} (tileport keeps the op's checkout read-only while the op's own code runs; "
                              "`tileport run` runs it in the conversion's worktree)" if "Errno 30]" in e else e
                              for e in capture.errors]
        own = [c.dtype for c in (capture.configurations if capture else []) if c.source != "guess" and c.dtype != "none"]
        if own and not decl.present:  # the dtypes the op's own tests and scripts run it with
            decl = decl.model_copy(update={"dtypes": list(dict.fromkeys(own))})
        kept = [d for d in decl.dtypes if any(i.dtype == d for v in variants for i in v.instances)]
        if not decl.present and kept and kept != decl.dtypes:  # a guessed dtype cuda-tile rejects is not the op's
            decl = decl.model_copy(update={"dtypes": kept})
        tolerances, tolerance_sources = _tolerances(config, decl, capture)
        if not decl.present and own:
            notes.append(f"no TILEPORT declaration: dtypes {'/'.join(decl.dtypes)} and configurations from the op's "
                         f"own tests/scripts ({len(capture.sources)} run), constants from launches")
        elif not decl.present:
            notes.append("no TILEPORT declaration: dtypes float16/float32, constants from launches, no shapes")
        source = _kernel_source(path, plan, reply.get("kernel_files") or {}, notes)
        analysis = Analysis(
            op=path.stem,
            source=SourceInfo(path=str(source), sha256=sha256_file(source), bytes=source.stat().st_size),
            out_dir=str(final), targets=targets, bytecode_version=config.toolchain.bytecode_version,
            tools=ToolInfo(python=sys.version.split()[0], cuda_tile=reply.get("cuda_tile"),
                           tileiras=tool_version(str(toolchain.tileiras)) if toolchain.tileiras else None,
                           tileirdisasm=str(toolchain.tileirdisasm)),
            declared=decl.present, dtypes=decl.dtypes, shapes=decl.shapes, tolerances=tolerances,
            tolerance_sources=tolerance_sources, tests=[str(p) for p in test_paths],
            assumptions=[reply["assumption"]] if reply.get("assumption") else [], kernels=plan.kernels, launches=plan.launches, variants=variants,
            commands=commands, notes=notes,
            unresolved=[UnresolvedKernel(kernel=k, message=m) for k, m in plan.failed.items()],
            capture=capture,
            timings=Timings(static_s=round(t_static - t0, 4), child_s=round(t_child, 4),
                            capture_s=float(reply.get("seconds", {}).get("capture", 0.0)),
                            child_cpu_s=round(child_cpu, 4),
                            export_s=round(sum(b["seconds"] for e in exports.values() for b in e["builds"].values()), 4),
                            disasm_s=round(disasm_s, 4), tileiras_s=round(tileiras_s, 4),
                            backend_s=round(t_backend, 4)))
        analysis.timings.total_s = round(time.perf_counter() - t0, 4)
        (stage / "analysis.json").write_text(analysis.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return analysis


def _capture_missed(reply: dict) -> bool:
    """Some kernel is unresolved and capture did not run with real arrays here (a CPU machine, or no torch)."""
    return bool((reply.get("plan") or {}).get("failed")) and (reply.get("capture") or {}).get("mode") != "gpu"


def _capture_on_gpu_host(config: Config, path: Path, tree: ast.Module, test_paths: list[Path], static, decl,
                         request: dict, reply: dict, child, stage: Path, python: str | None, notes: list[str],
                         confined: Confinement):
    """Capture again on the GPU host behind `[gpu] command_prefix` (analysis.remote), and when it recorded launches,
    run the child again with them (analysis.hostcapture.replayed); returns (reply, child, the commands run there)."""
    from tileport.analysis import remote
    from tileport.analysis.loader import child_timeout
    from tileport.analysis.mainblock import main_block

    prefix = config.gpu.command_prefix
    host, cmds = remote.host_capture(
        path, test_paths, prefix=prefix, remote_dir=config.gpu.remote_dir, python=config.gpu.python,
        dtypes=list(decl.dtypes), ranks={k.function: k.array_ndim for k in static.kernels},
        run_main=main_block(tree) is not None, tests_timeout_s=config.analysis.tests_timeout_s,
        tests_budget_s=config.analysis.tests_budget_s, import_timeout=limits.IMPORT_TIMEOUT.value,
        timeout=child_timeout())
    if not (host.get("ok") and host.get("launches")):
        why = host.get("error") or f"its code launched no kernel there ({'; '.join(host.get('errors', [])[:1])})"
        said = f"on the GPU host ({prefix}) capture recorded nothing either: {why}"
        notes.append(f"launch capture {said}")
        failed = reply["plan"]["failed"]
        reply["plan"]["failed"] = {k: f"{m}; {said}" for k, m in failed.items()}
        return reply, child, cmds
    for p in stage.iterdir():  # the first child's exports: the second child writes the variants afresh
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    reply, child = run_child({**request, "host_capture": host}, cwd=stage, python=python, confined=confined)
    notes.append(f"launch capture on the GPU host ({prefix}): {len(host['launches'])} launch(es) of "
                 f"{', '.join(host.get('sources') or ['its entry points'])} ({host.get('mode')}), replayed here")
    return reply, child, cmds


def _gpu_host_hint(config: Config, message: str, capture_mode: str | None) -> str:
    """An unresolved kernel capture reached no launch of on fake arrays: say how to capture with real ones."""
    if config.gpu.command_prefix or capture_mode == "gpu" or "capture: no ct.launch" not in message:
        return message
    return (message + "; to capture on a GPU host with real arrays, set [gpu] command_prefix in tileport.toml "
            "(e.g. \"ssh gpu-box\")")


def _kernel_source(path: Path, plan: Plan, kernel_files: dict[str, str], notes: list[str]) -> Path:
    """The op's source: the module itself, or, when it defines none of the kernels it launches (a wrapper: an
    autograd.Function, an nn.Module, a launch helper), the module that defines most of them, so the analysis names
    the source its kernels are read from (the draft translates them from there)."""
    here = str(path.resolve())
    analysed = [k.name for k in plan.kernels if any(v.kernel == k.name for v in plan.variants)]
    files = [kernel_files[k] for k in analysed if k in kernel_files]
    if not files or here in files:
        return path
    best = max(dict.fromkeys(files), key=files.count)
    p = Path(best)
    if not p.is_file():
        return path
    others = sorted({Path(f).name for f in files if f != best})
    notes.append(f"{path.name} defines no kernel it launches: its kernels are read from {best}"
                 + (f" (also launched, from other modules: {', '.join(others)})" if others else ""))
    return p


def _tolerances(config: Config, decl, capture: CaptureInfo | None) -> tuple[dict[str, ToleranceSpec], dict[str, str]]:
    """Per dtype: the op's TILEPORT declaration, else the strictest its own tests pass (the port must pass every
    one of them), else tileport.toml's; with where each came from."""
    tol: dict[str, ToleranceSpec] = {}
    src: dict[str, str] = {}
    for d, t in config.tolerances.items():
        if d in decl.dtypes:
            tol[d], src[d] = ToleranceSpec(atol=t.atol, rtol=t.rtol), "tileport.toml"
    best: dict[str, object] = {}
    for t in capture.tolerances if capture is not None else []:
        cur = best.get(t.dtype)
        if cur is None or (t.atol, t.rtol) < (cur.atol, cur.rtol):
            best[t.dtype] = t
    for d, t in best.items():
        try:
            tol[d] = ToleranceSpec(atol=t.atol, rtol=t.rtol)
        except ValidationError:
            continue
        src[d] = f"tests: {t.where} ({t.test})"
    for d, t in decl.tolerances.items():
        tol[d], src[d] = t, "TILEPORT declaration"
    return tol, src
