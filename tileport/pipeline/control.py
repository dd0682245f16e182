"""Who is running a conversion now, and how any process asks it to stop: three files beside its worktree.

`<worktree>.lock`  held (flock) by the process driving the conversion; holds that process's pid.
`<worktree>.stop`  a stop request: written by `tileport stop ID` or a dashboard, read by the runner within
                   a quarter second, which then kills the running tool's process group.
`<worktree>.live`  what the running stage's tools print, line by line, and tileport's own progress lines
                   (`[tileport] ...`), for the dashboard's live view; emptied when a stage starts.

Files, not the store, because a stop must reach a runner blocked in a compiler, in another process, at once.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

POLL_S = 0.25


@dataclass(frozen=True)
class RunFiles:
    worktree: Path

    def _sibling(self, suffix: str) -> Path:
        return self.worktree.parent / f"{self.worktree.name}.{suffix}"

    @property
    def lock(self) -> Path:
        return self._sibling("lock")

    @property
    def stop(self) -> Path:
        return self._sibling("stop")

    @property
    def live(self) -> Path:
        return self._sibling("live")


def run_files(worktree: str | os.PathLike) -> RunFiles:
    return RunFiles(Path(worktree))


def conversion_holder(conv: dict) -> int | None:
    """`holder` of a conversion row's worktree; None when it has none (recorded by `tileport analyze`)."""
    return holder(run_files(conv["worktree"])) if conv.get("worktree") else None


def holder(files: RunFiles) -> int | None:
    """The pid of the process driving this conversion now, or None when nobody holds its lock."""
    if not files.lock.is_file():
        return None
    with open(files.lock, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            text = f.read().strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(f, fcntl.LOCK_UN)
        return None


def request_stop(files: RunFiles) -> None:
    files.stop.write_text(f"{os.getpid()} {time.time():.3f}\n", encoding="utf-8")


def clear_stop(files: RunFiles) -> None:
    files.stop.unlink(missing_ok=True)


class StopWatch:
    """Calls `on_stop` once when the stop file appears (polled every POLL_S while the conversion runs)."""

    def __init__(self, files: RunFiles, on_stop: Callable[[], None]) -> None:
        self.files = files
        self.on_stop = on_stop
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"stopwatch-{files.worktree.name}", daemon=True)

    def __enter__(self) -> "StopWatch":
        clear_stop(self.files)  # a request left from an earlier run is not this run's
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join(timeout=2)
        clear_stop(self.files)

    def _watch(self) -> None:
        while not self._done.wait(POLL_S):
            if self.files.stop.exists():
                self.on_stop()
                return


def new_live(files: RunFiles, header: str) -> None:
    """Start the live output of a stage attempt afresh (a new file: a reader sees the new inode)."""
    tmp = files.live.with_name(files.live.name + ".new")
    try:
        tmp.write_text(f"[tileport] {header}\n", encoding="utf-8")
        os.replace(tmp, files.live)
    except OSError:
        pass


def wait_released(files: RunFiles, seconds: float) -> bool:
    """Wait up to `seconds` for the driving process to let go; True when nobody holds the lock any more."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if holder(files) is None:
            return True
        time.sleep(0.1)
    return holder(files) is None


@dataclass(frozen=True)
class StopOutcome:
    """What a stop really did, in one line (`text`) for the CLI and the dashboard."""

    conversion_id: int
    was_running: bool
    stopped: bool
    text: str


def resume_command(store, conversion_id: int) -> str:
    """The command that resumes `conversion_id` from this store (the conversion's repository names the store)."""
    import shlex

    repo = store.conversion(conversion_id).get("repo")
    return f"tileport run --resume {conversion_id}" + (f" --repo {shlex.quote(str(repo))}" if repo else "")


def stop_conversion(store, conversion_id: int, wait_s: float = 10.0, resume_hint: str | None = None) -> StopOutcome:
    """Ask whichever process drives `conversion_id` to stop, wait up to `wait_s` for it to let go, and say
    what happened (read back from the store: the interrupted attempt, or that nothing ran). `resume_hint` replaces
    the resume command in the message (a dashboard says its key)."""
    from tileport.errors import UserError

    conv = store.conversion(conversion_id)
    if not conv.get("worktree"):
        raise UserError(f"conversion {conversion_id} has no worktree (it was recorded by `tileport analyze`); "
                        "nothing runs for it")
    files = run_files(conv["worktree"])
    pid = holder(files)
    if pid is None:
        return StopOutcome(conversion_id, False, False,
                           f"#{conversion_id} is not running (status {conv.get('status') or '?'}); nothing to stop")
    before = max((e["id"] for e in store.events(conversion_id)), default=0)
    request_stop(files)
    if not wait_released(files, wait_s):
        return StopOutcome(conversion_id, True, False,
                           f"#{conversion_id}: stop requested, but process {pid} still drives it after {wait_s:g} s; "
                           "it stops when its current tool returns")
    said = [e for e in store.events(conversion_id, after_id=before) if e["kind"] == "stage.interrupted"]
    if said:
        p = said[-1]["payload"] or {}
        what = f"stage {p.get('stage')} attempt {p.get('attempt')} interrupted after {p.get('seconds')} s"
    else:
        what = "stopped between stages"
    return StopOutcome(conversion_id, True, True,
                       f"#{conversion_id} stopped (process {pid}): {what}; "
                       + (resume_hint or f"resume: {resume_command(store, conversion_id)}"))
