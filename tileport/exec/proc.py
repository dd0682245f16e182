"""Run external commands and keep what a gate must record: argv, exit code, time, capped output.

Every tool tileport drives (tileiras, tileirdisasm, cargo, git, python children) goes through
`run_command`, so a stage record can list the exact commands it ran with their exit codes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
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


class Interrupted(Exception):
    """The tool was stopped on request (`tileport stop`, the dashboard's stop): its process group is dead."""


class ToolScope:
    """The tools one stage attempt runs: `cancel()` (any thread) kills their process groups at once, and
    `output` (when set) receives every line they print as it comes, for the dashboard's live view."""

    def __init__(self, output: Path | None = None) -> None:
        self.output = output
        self._lock = threading.Lock()
        self._pids: set[int] = set()
        self.cancelled = False
        self._file = None
        self._file_path: Path | None = None

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            pids = list(self._pids)
        for pid in pids:
            kill_group(pid)

    def _add(self, pid: int) -> bool:
        with self._lock:
            if not self.cancelled:
                self._pids.add(pid)
            return not self.cancelled

    def _drop(self, pid: int) -> None:
        with self._lock:
            self._pids.discard(pid)

    def write(self, data: bytes | str) -> None:
        if self.output is None:
            return
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        with self._lock:
            try:
                if self._file is None or self._file_path != self.output:
                    if self._file is not None:
                        self._file.close()
                    self._file, self._file_path = open(self.output, "ab", buffering=0), self.output
                self._file.write(data if data.endswith(b"\n") else data + b"\n")
            except OSError:
                pass  # the live view is best effort; the record keeps the output

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def note(self, text: str) -> None:
        """A progress line of tileport's own ("compiling crate 3/9"); the dashboard shows the newest as `now`."""
        self.write(f"{NOTE}{text}")


NOTE = "[tileport] "  # prefix of tileport's own lines in a live output file
_SCOPE: ContextVar[ToolScope | None] = ContextVar("tileport_tool_scope", default=None)


@contextmanager
def tool_scope(scope: ToolScope):
    """Run tools under `scope` in this context (threads started with `contextvars.copy_context()` inherit it)."""
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def in_scope(fn):
    """`fn` bound to the calling context's tool scope, for work handed to a thread pool."""
    scope = _SCOPE.get()
    if scope is None:
        return fn

    def bound(*args, **kw):
        with tool_scope(scope):
            return fn(*args, **kw)
    return bound


def _pump(stream, buf: bytearray, scope: ToolScope) -> None:
    for line in iter(stream.readline, b""):
        buf.extend(line)
        scope.write(line)
    stream.close()


def _wait_streaming(proc: subprocess.Popen, input: bytes | None, timeout: float | None,
                    scope: ToolScope) -> tuple[bytes, bytes, bool]:
    """communicate(), but each line also goes to the scope's live output as it is printed; kills the
    process group on timeout. Returns (stdout, stderr, timed out)."""
    out, err = bytearray(), bytearray()
    pumps = [threading.Thread(target=_pump, args=(s, b, scope), daemon=True)
             for s, b in ((proc.stdout, out), (proc.stderr, err))]
    for t in pumps:
        t.start()
    if proc.stdin is not None:
        try:
            if input:
                proc.stdin.write(input)
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc.pid)
        proc.wait()
    for t in pumps:
        t.join()
    return bytes(out), bytes(err), timed_out


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
    scope = _SCOPE.get()
    if scope is not None and scope.cancelled:
        raise Interrupted(f"stopped before `{args[0]}` started")
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
    if scope is not None and not scope._add(proc.pid):
        kill_group(proc.pid)
    if scope is not None and scope.output is not None:
        from tileport.exec.sandbox import tool_argv

        own = tool_argv(args)
        scope.note("$ " + " ".join([Path(own[0]).name, *own[1:]] if own else args)[:400])
    try:
        if scope is not None and scope.output is not None:
            out, err, timed_out = _wait_streaming(proc, input, timeout, scope)
        else:
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
        if scope is not None:
            scope._drop(proc.pid)
    if scope is not None and scope.cancelled:
        from tileport.exec.sandbox import tool_argv  # the tool's own argv, not the sandbox wrapper (a cycle at import)

        raise Interrupted(f"`{' '.join(tool_argv(args))[:120]}` killed by a stop request after "
                          f"{time.monotonic() - start:.1f} s")
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


def send_tree(src: Path, names: Sequence[str], prefix: Sequence[str], dest: str, *, replace: str,
              excludes: Sequence[str] = (), timeout: float = 600) -> CommandResult:
    """Copy `names` under `src` to `dest` on the host behind `prefix` (e.g. "ssh gpu-box"), as one recorded command:
    `tar -C SRC -cf - NAMES | PREFIX 'rm -rf REPLACE && mkdir -p DEST && tar -C DEST -xf -'`."""
    import shlex

    q = shlex.quote
    skip = " ".join(f"--exclude={q(e)}" for e in excludes)
    there = f"rm -rf {q(replace)} && mkdir -p {q(dest)} && tar -C {q(dest)} -xf -"
    return run_command(["sh", "-c", f"tar -C {q(str(src))} {skip} -cf - {' '.join(q(n) for n in names)} | "
                        f"{' '.join(q(p) for p in prefix)} {q(there)}"], timeout=timeout)
