"""Write a directory all at once: build it beside the destination, then rename it into place.

A failed or interrupted analysis leaves nothing at the destination (and no new empty parents);
a successful one replaces an older result in one rename.

Replace only what tileport made: every directory written here carries a `.tileport-output` marker, and an
existing destination is replaced only when it has that marker (or is empty, or is an analysis directory from a
tileport that predates the marker). Anything else (the working directory, a user's folder, a file, a FIFO,
a symlink, /proc) is refused with one line before any work starts. Staging directories left by a killed run
(their pid is gone) are removed by the next run that writes beside them.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from tileport.errors import UserError

MARKER = ".tileport-output"
_STAGING = re.compile(r"^\..*\.(tmp|old)-(\d+)-[0-9a-f]{8}$")
_LEGACY_SUFFIXES = {".tileirbc", ".tileir", ".cubin"}


def _is_legacy_analysis(d: Path) -> bool:
    """An `out/<op>/` written before the marker: analysis.json plus <target>/ dirs of IR files, nothing else."""
    try:
        entries = list(d.iterdir())
    except OSError:
        return False
    if not (d / "analysis.json").is_file():
        return False
    for e in entries:
        if e.name == "analysis.json" and e.is_file() and not e.is_symlink():
            continue
        if e.is_dir() and not e.is_symlink() and re.fullmatch(r"sm_\d+[a-z]?", e.name):
            if all(f.is_file() and not f.is_symlink() and f.suffix in _LEGACY_SUFFIXES for f in e.iterdir()):
                continue
        return False
    return True


def check_output_dir(dest: str | os.PathLike, *, flag: str = "--out") -> Path:
    """The absolute destination if tileport may (re)place a directory there, else one UserError."""
    raw = Path(dest)
    if str(dest) == "":
        raise UserError(f"{flag} is empty; pass a directory name")
    absolute = Path(os.path.abspath(raw))
    if raw.is_symlink():
        raise UserError(f"{raw}: is a symbolic link; tileport replaces only directories it made — pass another {flag}")
    real = Path(os.path.realpath(absolute))
    cwd = Path(os.path.realpath(os.getcwd()))
    if real == Path(real.anchor) or real == cwd or real in cwd.parents:
        raise UserError(f"{raw}: is the working directory or one of its parents; tileport would replace it — "
                        f"pass a new directory to {flag}, e.g. out/")
    if str(real).startswith(("/proc/", "/sys/", "/dev/")) or str(real) in ("/proc", "/sys", "/dev"):
        raise UserError(f"{raw}: is under {str(real).split('/')[1] and '/' + str(real).split('/')[1]}, not a place "
                        f"for files; pass a directory on disk to {flag}")
    if os.path.lexists(absolute):
        if not absolute.is_dir():
            raise UserError(f"{raw}: exists and is not a directory; tileport never replaces it — pass another {flag}")
        try:
            empty = not any(absolute.iterdir())
        except OSError as e:
            raise UserError(f"{raw}: cannot read it ({e.strerror}); pass another {flag}") from None
        if not (empty or (absolute / MARKER).is_file() or _is_legacy_analysis(absolute)):
            raise UserError(f"{raw}: exists and was not made by tileport (no {MARKER} in it); tileport never "
                            f"replaces it — pass a new or empty directory to {flag}, or move it aside")
    parent = absolute.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"{raw}: a parent of it ({parent}) is not a directory; pass another {flag}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{raw}: cannot write in {parent}; pass a writable directory to {flag}")
    return absolute


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_staging(parent: Path) -> list[Path]:
    """Remove `.<name>.tmp-<pid>-<id>` / `.old-` dirs whose run is dead (kill -9, power loss). Returns them."""
    removed = []
    try:
        entries = list(Path(parent).iterdir())
    except OSError:
        return removed
    for e in entries:
        m = _STAGING.match(e.name)
        if not m or int(m.group(2)) == os.getpid() or _pid_alive(int(m.group(2))):
            continue
        if e.is_dir() and not e.is_symlink():
            shutil.rmtree(e, ignore_errors=True)
        else:
            try:
                e.unlink()
            except OSError:
                continue
        removed.append(e)
    return removed


@contextmanager
def staged_dir(dest: Path, *, flag: str = "--out") -> Iterator[Path]:
    dest = check_output_dir(dest, flag=flag)
    created: list[Path] = []
    parent = dest.parent
    while not parent.exists():
        created.append(parent)
        parent = parent.parent
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        clean_stale_staging(dest.parent)
        tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        stage = dest.parent / f".{dest.name}.tmp-{tag}"
        stage.mkdir()
        (stage / MARKER).write_text("made by tileport; a later run may replace this directory\n")
    except OSError as e:
        raise UserError(f"{dest}: cannot create it ({e.strerror}); pass a writable directory to {flag}") from None
    try:
        yield stage
        check_output_dir(dest, flag=flag)  # the user may have put something there meanwhile
        old = None
        if os.path.lexists(dest):
            old = dest.parent / f".{dest.name}.old-{tag}"
            os.replace(dest, old)
        os.replace(stage, dest)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        for d in created:  # innermost first: only the ones this call made, and only if still empty
            try:
                d.rmdir()
            except OSError:
                break
        raise
