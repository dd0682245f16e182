"""Launch capture on the GPU host through `[gpu] command_prefix` (e.g. "ssh gpu-box"), when capture on this CPU
machine recorded no launch of a kernel.

The op's project (its nearest ancestor with a project marker, as test discovery bounds it; without `.git`,
`.tileport`, caches) and tileport's analysis package travel to `<[gpu] remote_dir>/capture-<op>` through the prefix
(`tar | PREFIX 'tar -x'`, as `validators.gpu.hostpack.run_remote` sends a pack); there `[gpu] python` runs
`tileport.analysis.hostcapture` on the op with its tests, with real arrays and real launches. Its launches come back
as JSON and the analysis child here replays them (`hostcapture.replayed`), so the variants, exports and
configurations are made as for a capture made here. Every step is a recorded command.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import tileport
from tileport.analysis.testfind import SKIP_PARTS, search_roots
from tileport.exec.proc import CommandResult, run_command, send_tree

MAX_PROJECT_BYTES = 256 << 20  # the op's project sent to the GPU host
EXCLUDE = sorted(SKIP_PARTS | {".tileport", ".tileport-build", "out", ".pytest_cache", ".mypy_cache"})


def project_of(op: Path, tests: list[Path]) -> Path:
    """The directory sent: the op's project root (search_roots), widened to hold every test path."""
    root = search_roots(op)[-1]
    for t in tests:
        while root != root.parent and not str(t.resolve()).startswith(str(root) + os.sep):
            root = root.parent
    return root


def _size(root: Path) -> int:
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in EXCLUDE]
        for f in filenames:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                continue
    return total


def _send(src: Path, prefix: list[str], dest: str, *, files: list[str] | None = None) -> CommandResult:
    return send_tree(src, files or ["."], prefix, dest, replace=dest, excludes=EXCLUDE)


def host_capture(op: Path, tests: list[Path], *, prefix: str, remote_dir: str, python: str, dtypes: list[str],
                 ranks: dict[str, dict[str, int | None]], run_main: bool, tests_timeout_s: float,
                 tests_budget_s: float, import_timeout: float, timeout: float) -> tuple[dict[str, Any],
                                                                                      list[CommandResult]]:
    """({ok, launches, ...} as hostcapture answers, or {ok: False, error: one line}, the commands run)."""
    op = op.resolve()
    root = project_of(op, tests)
    size = _size(root)
    if size > MAX_PROJECT_BYTES:
        return {"ok": False, "error": f"the op's project {root} is {size >> 20} MiB, over the "
                                      f"{MAX_PROJECT_BYTES >> 20} MiB sent for capture"}, []
    pre = shlex.split(prefix)
    rdir = f"{remote_dir.rstrip('/')}/capture-{op.stem}"
    cmds = []
    pkg = Path(tileport.__file__).resolve().parent
    for src, dest, files in ((root, f"{rdir}/project", None),
                             (pkg.parent, f"{rdir}/tp", ["tileport/__init__.py", "tileport/errors.py",
                                                         "tileport/limits.py", "tileport/analysis"])):
        sent = _send(src, pre, dest, files=files)
        cmds.append(sent)
        if not sent.ok:
            return {"ok": False, "error": f"copying {src} to the GPU host failed (rc {sent.returncode}): "
                                          f"{sent.stderr.strip()[-200:]}; check [gpu] command_prefix"}, cmds
    there = {"path": f"{rdir}/project/{op.relative_to(root).as_posix()}",
             "tests": [f"{rdir}/project/{t.resolve().relative_to(root).as_posix()}" for t in tests],
             "run_main": run_main, "dtypes": dtypes, "ranks": ranks, "tests_timeout_s": tests_timeout_s,
             "tests_budget_s": tests_budget_s, "import_timeout": import_timeout}
    remote = (f"cd {shlex.quote(rdir + '/project')} && unset CUDA_HOME CUDA_PATH && "
              f"PYTHONPATH={shlex.quote(rdir + '/tp')} PYTHONDONTWRITEBYTECODE=1 "
              f"{shlex.quote(python)} -m tileport.analysis.hostcapture")
    ran = run_command(pre + [remote], timeout=timeout, input=json.dumps(there).encode())
    cmds.append(ran)
    try:
        reply = json.loads(ran.stdout)
    except json.JSONDecodeError:
        tail = (ran.stderr.strip().splitlines() or [""])[-1][:200]
        why = "timed out" if ran.timed_out else f"exit status {ran.returncode}"
        reply = {"ok": False, "error": f"the capture on the GPU host gave no answer ({why}): {tail}".rstrip(": ")}
    if not isinstance(reply, dict):
        reply = {"ok": False, "error": "the capture on the GPU host answered something else than a JSON object"}
    return reply, cmds


__all__ = ["host_capture", "project_of"]
