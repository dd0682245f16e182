"""Gate directories: pack a port for a GPU host, run it there (in a child process with a time limit), ingest.

A pack directory is self-contained: `gate.json` (conversion, commit, op, dtypes, shapes, tolerances, perf
settings, bindings), `op/<op>.py` (the cuTile Python reference op), `lib/libport.so.xz` (the port's cdylib,
stripped and compressed), `runner.py` and `tp_correctness.py` (stdlib + torch + cuda.tile only). Running it
writes `results.json` beside them.

An op with tests (stage A's `tests`, or its `__main__` block) or captured launches packs in format 2: its project
under `project/` (the op's package, the tests, their conftest files and helpers, the pytest config; see `carry`),
the kernels under conversion, the configurations stage E replays (`perfconfigs`), and the runner's test parts
(`tp_hosttests.py`, `tp_testchild.py`, `tp_replay.py`: stdlib + torch + cuda.tile + pytest). No TILEPORT declaration
is needed; the examples' make_inputs/reference harness runs beside the tests when the op has it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tileport import __version__
from tileport.errors import UserError
from tileport.exec.proc import CommandResult, run_command, send_tree
from tileport.records import ArtifactRecord
from tileport.validators import correctness as corr
from tileport.validators.gpu import hostrun
from tileport.validators.gpu.cdylib import build_cdylib, pack_library
from tileport.validators.gpu.ffi import ABI_VERSION
from tileport.validators.rust.crate import CrateLayout

MANIFEST_FILE = "gate.json"
RESULTS_FILE = "results.json"
LIB_PATH = "lib/libport.so.xz"


@dataclass
class OpInfo:
    """What the pack needs of stage A: the op source, dtypes, shapes and tolerances; for an op with tests, what to
    carry for them and the captured configurations."""

    op: str
    path: Path
    dtypes: list[str]
    shapes: list[dict]
    tolerances: dict[str, tuple[float, float]]
    carry: Any = None  # carry.Carry when the op has tests to run
    configurations: list = field(default_factory=list)  # stage A's capture.configurations
    harness: bool = False  # the op module has make_inputs/reference and declares shapes

    @property
    def sources(self) -> str:
        bits = []
        if self.harness:
            bits.append(f"{len(self.dtypes)} dtype(s) x {len(self.shapes)} shape(s)")
        if self.carry is not None:
            kinds = [s.kind for s in self.carry.sources]
            bits.append(", ".join(f"{kinds.count(k)} {k}" for k in dict.fromkeys(kinds)) + " test source(s)")
        return " + ".join(bits) or "nothing to run"


def _has_harness(path: Path) -> bool:
    """The module defines make_inputs and reference (the examples' harness)."""
    import ast

    try:
        tree = ast.parse(path.read_text(encoding="utf-8-sig"))
    except (OSError, SyntaxError, ValueError):
        return False
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return {"make_inputs", "reference"} <= names


def op_info(analysis: Any = None, op_path: str | Path | None = None, tolerances: dict | None = None) -> OpInfo:
    """From an Analysis (object, dict or analysis.json path) or from the op file's TILEPORT declaration."""
    if analysis is not None:
        if isinstance(analysis, (str, Path)):
            analysis = json.loads(Path(analysis).read_text())
        get = (lambda k: analysis.get(k)) if isinstance(analysis, dict) else (lambda k: getattr(analysis, k, None))
        source = get("source")
        path = Path(source["path"] if isinstance(source, dict) else source.path)
        tol = {k: ((v["atol"], v["rtol"]) if isinstance(v, dict) else (v.atol, v.rtol))
               for k, v in (get("tolerances") or {}).items()}
        info = OpInfo(get("op"), path, list(get("dtypes")), [dict(s) for s in get("shapes")], tol)
        capture = get("capture")
        if capture is not None:
            info.configurations = list(capture.get("configurations") if isinstance(capture, dict)
                                       else capture.configurations)
        info.harness = bool(info.shapes) and _has_harness(path)
        from tileport.validators.gpu.carry import has_sources, plan

        if has_sources(analysis):
            info.carry = plan(analysis)
            refusal = info.carry.refusal()
            if refusal:
                raise UserError(f"{path}: {refusal}")
    else:
        if op_path is None:
            raise UserError("no op: pass the analysis or the op file")
        path = Path(op_path)
        if not path.is_file():
            raise UserError(f"{path}: op file not found")
        decl = corr.read_declaration(path)
        tol = {d: corr.tolerance_for(decl, d) for d in decl["dtypes"]}
        info = OpInfo(path.stem, path, decl["dtypes"], decl["shapes"], tol, harness=bool(decl["shapes"]))
    if not info.shapes and info.carry is None:
        raise UserError(f"{info.path}: nothing to run on the GPU: stage A found none of the op's tests (pass --tests "
                        "PATH to `tileport analyze`/`run`) and the op declares no shapes (TILEPORT['shapes'])")
    defaults = corr.default_tolerances()
    for d in info.dtypes:
        info.tolerances.setdefault(d, defaults.get(d, (1e-2, 1e-2)))
    for d, t in (tolerances or {}).items():
        info.tolerances[d] = t
    return info


# the test runner's parts that travel to the GPU host (standard library, torch, cuda.tile, pytest): module -> file
TRAVELLING = (("tileport.validators.gpu.hosttests", "tp_hosttests.py"),
              ("tileport.validators.gpu.testchild", "tp_testchild.py"),
              ("tileport.validators.gpu.replay", "tp_replay.py"),
              ("tileport.validators.gpu.perfconfigs", "tp_perfconfigs.py"),
              ("tileport.analysis.mainblock", "tp_mainblock.py"))
PROJECT_DIR = "project"


def kernels_under_conversion(bindings: dict) -> list[str]:
    """The reference kernels some port entry serves (the launches the port takes over)."""
    return sorted({k for e in bindings.get("entries", []) for k in e.get("reference_kernels", [])})


def tests_part(op: OpInfo, bindings: dict, stage: Path, test_timeout_s: float) -> dict:
    """gate.json's format-2 fields, and the project tree and test runner parts written under stage."""
    import importlib

    from tileport.validators.gpu import perfconfigs
    from tileport.validators.gpu.carry import copy_into

    for mod, name in TRAVELLING:
        shutil.copyfile(importlib.import_module(mod).__file__, stage / name)
    kernels = kernels_under_conversion(bindings)
    chosen, left = perfconfigs.select(op.configurations, set(kernels))
    part: dict = {"format": 2, "harness": op.harness, "kernels": kernels, "perf_configs": chosen,
                  "perf_left_out": left}
    copy_into(op.carry, stage / PROJECT_DIR)
    part["tests"] = {**op.carry.manifest(), "timeout_s": test_timeout_s}
    return part


def pack(layout: CrateLayout, op: OpInfo, dest: Path, *, commit: str | None, conversion_id: int | None,
         perf: dict, strip: str | None = None, build_opts=None,
         test_timeout_s: float = 300.0) -> tuple[Path, "CdylibResult"]:
    """Build the cdylib and write a pack directory at dest (replaced atomically)."""
    from tileport.validators.gpu.cdylib import CdylibResult  # noqa: F401

    built = build_cdylib(layout, op.dtypes, build_opts)
    if not built.ok:
        return dest, built
    stage = dest.parent / f".{dest.name}.staging"
    if stage.exists():
        shutil.rmtree(stage)
    (stage / "op").mkdir(parents=True)
    pack_library(built.library, stage / LIB_PATH, strip=strip or shutil.which("strip"))
    shutil.copyfile(op.path, stage / "op" / f"{op.op}.py")
    shutil.copyfile(hostrun.__file__, stage / "runner.py")
    shutil.copyfile(corr.__file__, stage / "tp_correctness.py")
    gate = {
        "format": 1, "abi": ABI_VERSION, "tileport": __version__, "conversion_id": conversion_id, "commit": commit,
        "op": op.op, "op_file": f"op/{op.op}.py", "library": LIB_PATH, "dtypes": op.dtypes, "shapes": op.shapes,
        "tolerances": {k: list(v) for k, v in op.tolerances.items()}, "perf": perf, "bindings": built.bindings,
        "created_at": datetime.now(timezone.utc).isoformat(),
    }
    if op.carry is not None:
        gate.update(tests_part(op, built.bindings, stage, test_timeout_s))
    (stage / MANIFEST_FILE).write_text(json.dumps(gate, indent=1) + "\n")
    if dest.exists():
        shutil.rmtree(dest)
    stage.rename(dest)
    return dest, built


def read_manifest(pack_dir: Path) -> dict:
    f = Path(pack_dir) / MANIFEST_FILE
    if not f.is_file():
        raise UserError(f"{pack_dir} is not a pack directory (no {MANIFEST_FILE}); make one with `tileport gpu pack`")
    return _json_file(f, "pack it again")


def runner_env(base: dict | None = None) -> dict[str, str]:
    """The runner's environment: CUDA_HOME/CUDA_PATH removed (an older CUDA there makes tileiras fail, rc 5),
    CUTILE_TILEIRAS_PATH from PATH when unset."""
    env = dict(os.environ if base is None else base)
    env.pop("CUDA_HOME", None)
    env.pop("CUDA_PATH", None)
    if not env.get("CUTILE_TILEIRAS_PATH"):
        found = shutil.which("tileiras", path=env.get("PATH"))
        if found:
            env["CUTILE_TILEIRAS_PATH"] = found
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_local(pack_dir: Path, *, timeout: float, python: str | None = None, perf: bool = True,
              project: str | None = None) -> tuple[dict, CommandResult]:
    """Run the pack here in a child process: a crash or a hang fails this conversion only. `project`: the op's
    project checked out here, instead of the pack's copy."""
    pack_dir = Path(pack_dir).resolve()
    manifest = read_manifest(pack_dir)
    if project is not None:
        if not manifest.get("tests"):
            raise UserError(f"{pack_dir}: --project is for a pack of an op with tests; this one has none")
        if not Path(project).is_dir():
            raise UserError(f"--project {project}: no such directory; pass the op's project checked out here")
        project = str(Path(project).resolve())
    results = pack_dir / RESULTS_FILE
    if results.exists():
        results.unlink()
    argv = [python or sys.executable, str(pack_dir / "runner.py"), str(pack_dir)] + ([] if perf else ["--no-perf"]) \
        + (["--project", str(project)] if project else [])
    cmd = run_command(argv, cwd=pack_dir, env=runner_env(), timeout=timeout)
    return _finish(results, cmd, timeout), cmd


def run_remote(pack_dir: Path, prefix: str, *, remote_dir: str, timeout: float, python: str = "python3",
               perf: bool = True, checkout: str | None = None) -> tuple[dict, list[CommandResult]]:
    """pack -> copy -> run -> copy back through `prefix` (e.g. "ssh gpu-box"): each step is `prefix CMD`. With
    `checkout` (the op's project checked out on the GPU host) the op's tests run there in place and the pack's
    project/ copy stays here."""
    pack_dir = Path(pack_dir).resolve()
    read_manifest(pack_dir)
    pre = shlex.split(prefix)
    rdir = f"{remote_dir.rstrip('/')}/{pack_dir.name}"
    cmds = []
    skip = [RESULTS_FILE] + ([f"{pack_dir.name}/{PROJECT_DIR}"] if checkout else [])
    copy = send_tree(pack_dir.parent, [pack_dir.name], pre, remote_dir, replace=rdir, excludes=skip)
    cmds.append(copy)
    if not copy.ok:
        return {"env_missing": f"copying the pack to the GPU host failed (rc {copy.returncode}): "
                               f"{copy.stderr.strip()[:300]}; check [gpu] command_prefix"}, cmds
    remote = (f"cd {shlex.quote(rdir)} && unset CUDA_HOME CUDA_PATH && "
              f"{shlex.quote(python)} runner.py . {'' if perf else '--no-perf'}"
              + (f" --project {shlex.quote(checkout)}" if checkout else ""))
    run = run_command(pre + [remote], timeout=timeout)
    cmds.append(run)
    back = run_command(pre + [f"cat {shlex.quote(rdir)}/{RESULTS_FILE}"], timeout=300, output_cap=1 << 28)
    cmds.append(back)
    local = pack_dir / RESULTS_FILE
    if back.ok and back.stdout.strip():
        local.write_text(back.stdout)
    elif local.exists():
        local.unlink()
    return _finish(local, run, timeout), cmds


def _finish(results: Path, cmd: CommandResult, timeout: float) -> dict:
    data: dict = {}
    if results.is_file():
        try:
            data = json.loads(results.read_text())
        except json.JSONDecodeError:
            data = {}
    if cmd.timed_out or cmd.returncode not in (0, 1, 3):
        why = (f"the GPU run was killed after {timeout:g} s" if cmd.timed_out
               else f"the GPU run died with status {cmd.returncode}: {cmd.stderr.strip()[-400:]}")
        data.setdefault("cases", [])
        data["crashed"] = why
        # the case in flight when it died is a failure of this conversion, never a pass
        data["cases"].append({"name": "(run aborted)", "dtype": "", "shape": {}, "status": "FAIL",
                              "fail_class": "kernel", "message": why})
    if not data:
        data = {"env_missing": f"the runner wrote no results (rc {cmd.returncode}): {cmd.stderr.strip()[-300:]}"}
    results.write_text(json.dumps(data, indent=1, default=str))
    return data


def load_results(path: Path) -> dict:
    p = Path(path)
    if p.is_dir():
        p = p / RESULTS_FILE
    if not p.is_file():
        raise UserError(f"{p}: no results file; run `tileport gpu run DIR` on the GPU host first")
    return _json_file(p, "run the pack again")


def _json_file(path: Path, redo: str) -> dict:
    """A pack's JSON file, or one line naming it and what to do when it is not valid JSON."""
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: not valid JSON ({e}); {redo}") from None


def results_artifacts(pack_dir: Path) -> list[ArtifactRecord]:
    out = []
    for rel, kind in ((RESULTS_FILE, "gate_results"), (LIB_PATH, "cdylib_xz"), (MANIFEST_FILE, "gate_manifest")):
        p = Path(pack_dir) / rel
        if p.is_file():
            out.append(ArtifactRecord.of(kind, p))
    return out


__all__ = ["OpInfo", "op_info", "pack", "read_manifest", "run_local", "run_remote", "load_results", "runner_env",
           "results_artifacts", "MANIFEST_FILE", "RESULTS_FILE"]
