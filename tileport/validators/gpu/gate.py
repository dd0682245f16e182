"""Gate directories: pack a port for a GPU host, run it there (in a child process with a time limit), ingest.

A gate directory is self-contained: `gate.json` (conversion, commit, op, dtypes, shapes, tolerances, perf
settings, bindings), `op/<op>.py` (the cuTile Python reference op), `lib/libport.so.xz` (the port's cdylib,
stripped and compressed), `runner.py` and `tp_correctness.py` (stdlib + torch + cuda.tile only). Running it
writes `results.json` beside them.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tileport import __version__
from tileport.errors import UserError
from tileport.exec.proc import CommandResult, run_command
from tileport.records import ArtifactRecord
from tileport.validators import correctness as corr
from tileport.validators.gpu import runner as runner_mod
from tileport.validators.gpu.cdylib import build_cdylib, pack_library
from tileport.validators.gpu.ffi import ABI_VERSION
from tileport.validators.rust.crate import CrateLayout

GATE_FILE = "gate.json"
RESULTS_FILE = "results.json"
LIB_PATH = "lib/libport.so.xz"


@dataclass
class OpInfo:
    """What the gate needs of stage A: the op source, dtypes, shapes and tolerances."""

    op: str
    path: Path
    dtypes: list[str]
    shapes: list[dict]
    tolerances: dict[str, tuple[float, float]]


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
    else:
        if op_path is None:
            raise UserError("no op: pass the analysis or the op file")
        path = Path(op_path)
        if not path.is_file():
            raise UserError(f"{path}: op file not found")
        decl = corr.read_declaration(path)
        tol = {d: corr.tolerance_for(decl, d) for d in decl["dtypes"]}
        info = OpInfo(path.stem, path, decl["dtypes"], decl["shapes"], tol)
    if not info.shapes:
        raise UserError(f"{info.path}: the op declares no shapes (TILEPORT['shapes']); the gate has nothing to run")
    defaults = corr.default_tolerances()
    for d in info.dtypes:
        info.tolerances.setdefault(d, defaults.get(d, (1e-2, 1e-2)))
    for d, t in (tolerances or {}).items():
        info.tolerances[d] = t
    return info


def pack(layout: CrateLayout, op: OpInfo, dest: Path, *, commit: str | None, conversion_id: int | None,
         perf: dict, strip: str | None = None, build_opts=None) -> tuple[Path, "CdylibResult"]:
    """Build the cdylib and write a gate directory at dest (replaced atomically)."""
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
    shutil.copyfile(runner_mod.__file__, stage / "runner.py")
    shutil.copyfile(corr.__file__, stage / "tp_correctness.py")
    gate = {
        "format": 1, "abi": ABI_VERSION, "tileport": __version__, "conversion_id": conversion_id, "commit": commit,
        "op": op.op, "op_file": f"op/{op.op}.py", "library": LIB_PATH, "dtypes": op.dtypes, "shapes": op.shapes,
        "tolerances": {k: list(v) for k, v in op.tolerances.items()}, "perf": perf, "bindings": built.bindings,
        "created_at": datetime.now(timezone.utc).isoformat(),
    }
    (stage / GATE_FILE).write_text(json.dumps(gate, indent=1) + "\n")
    if dest.exists():
        shutil.rmtree(dest)
    stage.rename(dest)
    return dest, built


def read_gate(gate_dir: Path) -> dict:
    f = Path(gate_dir) / GATE_FILE
    if not f.is_file():
        raise UserError(f"{gate_dir} is not a gate directory (no {GATE_FILE}); make one with `tileport gate pack`")
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


def run_local(gate_dir: Path, *, timeout: float, python: str | None = None, perf: bool = True) -> tuple[dict, CommandResult]:
    """Run the gate here in a child process: a crash or a hang fails this conversion only."""
    gate_dir = Path(gate_dir).resolve()
    read_gate(gate_dir)
    results = gate_dir / RESULTS_FILE
    if results.exists():
        results.unlink()
    argv = [python or sys.executable, str(gate_dir / "runner.py"), str(gate_dir)] + ([] if perf else ["--no-perf"])
    cmd = run_command(argv, cwd=gate_dir, env=runner_env(), timeout=timeout)
    return _finish(results, cmd, timeout), cmd


def run_remote(gate_dir: Path, prefix: str, *, remote_dir: str, timeout: float, python: str = "python3",
               perf: bool = True) -> tuple[dict, list[CommandResult]]:
    """pack -> copy -> run -> copy back through `prefix` (e.g. "ssh gpu-box"): each step is `prefix CMD`."""
    gate_dir = Path(gate_dir).resolve()
    read_gate(gate_dir)
    pre = shlex.split(prefix)
    rdir = f"{remote_dir.rstrip('/')}/{gate_dir.name}"
    cmds = []
    copy = run_command(["sh", "-c", f"tar -C {shlex.quote(str(gate_dir.parent))} -cf - --exclude {RESULTS_FILE} "
                        f"{shlex.quote(gate_dir.name)} | {' '.join(shlex.quote(p) for p in pre)} "
                        + shlex.quote(f"rm -rf {shlex.quote(rdir)} && mkdir -p {shlex.quote(remote_dir)} && "
                                      f"tar -C {shlex.quote(remote_dir)} -xf -")], timeout=600)
    cmds.append(copy)
    if not copy.ok:
        return {"env_missing": f"copying the gate to the GPU host failed (rc {copy.returncode}): "
                               f"{copy.stderr.strip()[:300]}; check [gpu] command_prefix"}, cmds
    remote = (f"cd {shlex.quote(rdir)} && unset CUDA_HOME CUDA_PATH && "
              f"{shlex.quote(python)} runner.py . {'' if perf else '--no-perf'}")
    run = run_command(pre + [remote], timeout=timeout)
    cmds.append(run)
    back = run_command(pre + [f"cat {shlex.quote(rdir)}/{RESULTS_FILE}"], timeout=300, output_cap=1 << 28)
    cmds.append(back)
    local = gate_dir / RESULTS_FILE
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
        raise UserError(f"{p}: no results file; run `tileport gate run DIR` on the GPU host first")
    return _json_file(p, "run the gate again")


def _json_file(path: Path, redo: str) -> dict:
    """A gate's JSON file, or one line naming it and what to do when it is not valid JSON."""
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: not valid JSON ({e}); {redo}") from None


def results_artifacts(gate_dir: Path) -> list[ArtifactRecord]:
    out = []
    for rel, kind in ((RESULTS_FILE, "gate_results"), (LIB_PATH, "cdylib_xz"), (GATE_FILE, "gate_manifest")):
        p = Path(gate_dir) / rel
        if p.is_file():
            out.append(ArtifactRecord.of(kind, p))
    return out


__all__ = ["OpInfo", "op_info", "pack", "read_gate", "run_local", "run_remote", "load_results", "runner_env",
           "results_artifacts", "GATE_FILE", "RESULTS_FILE"]
