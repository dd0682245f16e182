"""Run external commands and keep what a gate must record: argv, exit code, time, capped output.

Every tool tileport drives (tileiras, tileirdisasm, cargo, git, python children) goes through
`run_command`, so a stage record can list the exact commands it ran with their exit codes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from tileport.records import CommandRecord

DEFAULT_OUTPUT_CAP = 1 << 20  # 1 MiB per stream: a runaway compiler must not fill memory or the store

_PR_SET_PDEATHSIG = 1
try:  # bound once, before any fork: the pre-exec hook must not load libraries in the child
    import ctypes

    _prctl = ctypes.CDLL(None, use_errno=True).prctl
    _prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
except (OSError, AttributeError):  # not Linux: no parent-death signal, the process-group kill still applies
    _prctl = None


def die_with_parent(parent: int | None = None) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux PR_SET_PDEATHSIG).

    Called in every child tileport starts, between fork and exec (and by tileport's own Python children at
    start-up), so `kill -9 tileport` does not leave compilers, IR-dump binaries or the analysis child running
    in their own sessions. If the parent died before the call, exit at once.
    """
    if _prctl is None:
        return
    parent = os.getppid() if parent is None else parent
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(137)


def _die_with(parent: int):
    return lambda: die_with_parent(parent)


def kill_group(pid: int) -> None:
    """SIGKILL what is left of a child's process group (its own children that outlived it)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class CommandResult:
    """What a finished command produced; `record` is the store-ready summary."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    truncated: bool = False
    cwd: str | None = None
    record: CommandRecord = field(init=False)

    def __post_init__(self) -> None:
        self.record = CommandRecord(
            argv=list(self.argv),
            cwd=self.cwd,
            exit_code=self.returncode,
            seconds=round(self.seconds, 4),
            timed_out=self.timed_out,
            output_truncated=self.truncated,
        )

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def _cap(data: bytes, cap: int) -> tuple[str, bool]:
    if len(data) <= cap:
        return data.decode("utf-8", "replace"), False
    head = data[: cap // 2].decode("utf-8", "replace")
    tail = data[-cap // 2 :].decode("utf-8", "replace")
    return f"{head}\n... [{len(data) - cap} bytes cut by tileport] ...\n{tail}", True


def run_command(
    argv: Sequence[str | os.PathLike],
    *,
    cwd: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    input: bytes | None = None,
    output_cap: int = DEFAULT_OUTPUT_CAP,
) -> CommandResult:
    """Run argv (no shell), kill its whole process group on timeout, cap each output stream."""
    args = [str(a) for a in argv]
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            args,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_die_with(os.getpid()),
        )
    except FileNotFoundError:
        return CommandResult(args, 127, "", f"{args[0]}: not found", time.monotonic() - start,
                             cwd=str(cwd) if cwd else None)
    timed_out = False
    try:
        out, err = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc.pid)
        out, err = proc.communicate()
    except BaseException:  # KeyboardInterrupt, a cancelled worker: the child's group goes with us
        kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        kill_group(proc.pid)  # grandchildren left in the group after a normal exit
    seconds = time.monotonic() - start
    out_s, t1 = _cap(out or b"", output_cap)
    err_s, t2 = _cap(err or b"", output_cap)
    if timed_out:
        err_s += f"\n[tileport: killed after {timeout:g} s time limit]"
    return CommandResult(
        args,
        proc.returncode if not timed_out else 124,
        out_s,
        err_s,
        seconds,
        timed_out=timed_out,
        truncated=t1 or t2,
        cwd=str(Path(cwd)) if cwd else None,
    )
