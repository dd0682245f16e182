"""Run the child process that imports the op module and exports its kernels.

The op module never runs inside tileport's own process: an import-time crash, a `sys.exit`, a
segfault in a native extension or a stray print cannot take tileport down or corrupt its output.

Two ways to get that child:
* `run_child` starts `python -m tileport.analysis.child` for one op (through `run_command`);
* `WarmChild` keeps one `python -m tileport.analysis.child --serve` process that has imported
  cuda-tile (and torch) already and forks a fresh process per op, several side by side: same isolation
  (one op per process, the server never imports an op), without paying those imports for every op of a
  corpus or library run.
  It is a long-lived pipe conversation, so it cannot go through `run_command`; each forked run
  is still returned as a `CommandResult` (argv, exit status, seconds, stderr) for the record.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tileport
from tileport import limits
from tileport.errors import EnvironmentBlocked, UserError
from tileport.exec.proc import CommandResult, die_with_parent, kill_group, run_command
from tileport.exec.sandbox import read_only

CHILD_MODULE = "tileport.analysis.child"
SERVER_START_TIMEOUT_S = 120.0


def child_timeout() -> float:
    """The whole child's time limit: importing the op plus exporting its kernels."""
    return limits.IMPORT_TIMEOUT.value + limits.EXPORT_TIMEOUT.value


def with_limits(request: dict[str, Any]) -> dict[str, Any]:
    """The request as the child gets it: the import time limit travels with it (the child enforces it)."""
    return {**request, "import_timeout": limits.IMPORT_TIMEOUT.value,
            "import_limit": limits.IMPORT_TIMEOUT.describe()}


@dataclass(frozen=True)
class Confinement:
    """What the op's own code may not write while a child runs it: the user's checkout it lies in (read-only), but
    for tileport's output directory beneath it (`exec.sandbox.read_only`). The default confines nothing."""

    readonly: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()

    def argv(self, argv: list[str]) -> list[str]:
        return read_only(argv, self.readonly, self.writable)


def checkout_root(path: str | os.PathLike) -> Path | None:
    """The git checkout (repository or worktree) holding `path`, or None; never one holding tileport's own caches
    or this interpreter (a checkout at $HOME)."""
    start = Path(os.path.realpath(path))
    for d in [start, *start.parents] if start.is_dir() else start.parents:
        if (d / ".git").exists():
            home = Path(os.path.realpath(Path.home()))
            return None if d == Path(d.anchor) or d == home or d in home.parents else d
    return None


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(tileport.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # analysing an op leaves no __pycache__ beside it
    env.pop("CUDA_TILE_DUMP_BYTECODE", None)
    env.pop("CUDA_TILE_DUMP_TILEIR", None)
    return env


def interpret(reply: Any, res: CommandResult, request: dict[str, Any], timeout: float) -> dict[str, Any]:
    """The child's reply, or a one-line UserError saying what went wrong."""
    name = Path(request["path"]).name
    if res.timed_out:
        raise UserError(f"{name}: importing and exporting took longer than {timeout:g} s (the "
                        f"{limits.IMPORT_TIMEOUT.describe()} plus the {limits.EXPORT_TIMEOUT.describe()}); check "
                        "the module for work at import time")
    if not isinstance(reply, dict):
        why = f"killed by signal {-res.returncode}" if res.returncode < 0 else f"exit status {res.returncode}"
        tail = res.stderr.strip().splitlines()[-1:] or [""]
        raise UserError(f"{name}: the child process that imports it died ({why}) {tail[0][:200]}".rstrip()
                        + f"; run `python {request['path']}` to see why")
    if not reply.get("ok"):
        err = reply.get("error") or {}
        if err.get("kind") == "env":
            raise EnvironmentBlocked(err.get("message", "cuda-tile is missing"))
        if err.get("kind") == "timeout":
            raise UserError(err.get("message", f"{name}: import timed out"))
        if err.get("kind") == "internal":
            raise UserError(f"{name}: tileport's child process failed: {err.get('message')} (a tileport bug; "
                            "please report it with the module)")
        raise UserError(err.get("message") or f"{name}: analysis failed")
    return reply


def run_child(request: dict[str, Any], *, cwd: Path, python: str | None = None, timeout: float | None = None,
              confined: Confinement = Confinement()) -> tuple[dict[str, Any], CommandResult]:
    """One fresh child for one op: send the request, return (reply, command)."""
    timeout = timeout or child_timeout()
    argv = confined.argv([python or sys.executable, "-m", CHILD_MODULE])
    res = run_command(argv, cwd=cwd, env=child_env(), timeout=timeout,
                      input=json.dumps(with_limits(request)).encode())
    try:
        reply = json.loads(res.stdout)
    except json.JSONDecodeError:
        reply = None
    return interpret(reply, res, request, timeout), res


class WarmChild:
    """A warm export server; `run` has the same contract as `run_child` and may be called from several threads at
    once: each call's job runs in its own forked process, side by side with the others."""

    def __init__(self, python: str | None = None, confined: Confinement = Confinement()):
        self.python = python or sys.executable
        self.confined = confined
        self._send = threading.Lock()
        self._replies: dict[int, dict] = {}
        self._done = threading.Condition()
        self._ids = itertools.count(1)
        self._cpu = threading.local()
        self._ended = False  # the server's reply stream ended: no reply comes any more
        argv = confined.argv([self.python, "-m", CHILD_MODULE, "--serve"])
        self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      env=child_env(), start_new_session=True, text=True, bufsize=1,
                                      preexec_fn=lambda parent=os.getpid(): die_with_parent(parent))
        if self._readline(SERVER_START_TIMEOUT_S) is None:
            self.close()
            raise OSError("the warm export server did not start")
        threading.Thread(target=self._read_replies, name="tileport-warm-replies", daemon=True).start()

    def _readline(self, timeout: float) -> dict | None:
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self._proc.stdout.readline()
        try:
            return json.loads(line) if line else None
        except json.JSONDecodeError:
            return None

    def _read_replies(self) -> None:
        """One reader for every caller: each reply goes to the job it names; the end of the stream wakes them all."""
        assert self._proc.stdout is not None
        try:
            for line in self._proc.stdout:
                try:
                    msg = json.loads(line)
                except json.JSONDecodeError:
                    continue
                with self._done:
                    self._replies[msg.get("id")] = msg
                    self._done.notify_all()
        except (OSError, ValueError):  # the stream was closed under us
            pass
        with self._done:
            self._ended = True
            self._done.notify_all()

    def _await(self, job_id: int, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        with self._done:
            while job_id not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or self._ended:
                    return None
                self._done.wait(left)
            return self._replies.pop(job_id)

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    @property
    def last_cpu_s(self) -> float:
        """CPU seconds of this thread's last forked run (it is not this process's child)."""
        return getattr(self._cpu, "seconds", 0.0)

    def run(self, request: dict[str, Any], *, cwd: Path, timeout: float | None = None,
            **_: Any) -> tuple[dict[str, Any], CommandResult]:
        timeout = timeout or child_timeout()
        with tempfile.TemporaryDirectory(prefix="tileport-child-") as tmp:
            job_id = next(self._ids)
            job = {"id": job_id, "request": with_limits(request), "cwd": str(cwd), "timeout": timeout,
                   "reply_file": os.path.join(tmp, "reply.json"), "stderr_file": os.path.join(tmp, "stderr.txt")}
            assert self._proc.stdin is not None
            try:
                with self._send:
                    self._proc.stdin.write(json.dumps(job) + "\n")
                    self._proc.stdin.flush()
            except (OSError, ValueError):
                status = None
            else:
                status = self._await(job_id, timeout + 30)
            if status is None:
                self.close()
                raise UserError(f"{Path(request['path']).name}: the warm export server stopped answering; "
                                "rerun the op on its own: tileport analyze OP.py")
            stderr = Path(job["stderr_file"]).read_text(errors="replace") if os.path.exists(job["stderr_file"]) else ""
            try:
                reply = json.loads(Path(job["reply_file"]).read_text())
            except (OSError, json.JSONDecodeError):
                reply = None
        res = CommandResult([self.python, "-m", CHILD_MODULE, "(forked by the warm server)"],
                            int(status["status"]) if not status["timed_out"] else 124, "", stderr,
                            float(status["seconds"]), timed_out=bool(status["timed_out"]), cwd=str(cwd))
        self._cpu.seconds = float(status.get("cpu_s", 0.0))
        return interpret(reply, res, request, timeout), res

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self._proc.stdin.close()  # type: ignore[union-attr]
                self._proc.wait(timeout=5)
            except Exception:
                self._proc.kill()
                self._proc.wait()
        kill_group(self._proc.pid)  # a forked per-op process that outlived the server
        for stream in (self._proc.stdin, self._proc.stdout):
            try:
                stream.close()  # type: ignore[union-attr]
            except Exception:
                pass

    def __enter__(self) -> "WarmChild":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_shared: dict[tuple[str, Confinement], WarmChild] = {}
_shared_lock = threading.Lock()
SHARED_SERVERS = 3  # each holds cuda-tile and torch imported; the one unused longest goes first


def shared_warm_child(python: str | None = None, confined: Confinement = Confinement()) -> WarmChild | None:
    """The process-wide warm server for this interpreter and confinement (started on first use, once however many
    threads ask), or None where fork is unavailable."""
    if not hasattr(os, "fork"):
        return None
    key = (python or sys.executable, confined)
    with _shared_lock:
        server = _shared.pop(key, None)
        if server is not None and not server.alive:
            server.close()
            server = None
        if server is None:
            try:
                server = WarmChild(python, confined)
            except OSError:
                return None
            atexit.register(server.close)
        _shared[key] = server  # the newest last
        while len(_shared) > SHARED_SERVERS:
            _shared.pop(next(iter(_shared))).close()
        return server
