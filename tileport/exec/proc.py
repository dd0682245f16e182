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
        )
    except FileNotFoundError:
        return CommandResult(args, 127, "", f"{args[0]}: not found", time.monotonic() - start,
                             cwd=str(cwd) if cwd else None)
    timed_out = False
    try:
        out, err = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
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
