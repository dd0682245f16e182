"""Write a directory all at once: build it beside the destination, then rename it into place.

A failed or interrupted analysis leaves nothing at the destination (and no new empty parents);
a successful one replaces an older result in one rename.
"""

from __future__ import annotations

import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def staged_dir(dest: Path) -> Iterator[Path]:
    dest = Path(dest).absolute()
    created: list[Path] = []
    parent = dest.parent
    while not parent.exists():
        created.append(parent)
        parent = parent.parent
    dest.parent.mkdir(parents=True, exist_ok=True)
    tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    stage = dest.parent / f".{dest.name}.tmp-{tag}"
    stage.mkdir()
    try:
        yield stage
        old = None
        if dest.exists() or dest.is_symlink():
            old = dest.parent / f".{dest.name}.old-{tag}"
            os.replace(dest, old)
        os.replace(stage, dest)
        if old is not None:
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.unlink(missing_ok=True)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        for d in created:  # innermost first: only the ones this call made, and only if still empty
            try:
                d.rmdir()
            except OSError:
                break
        raise
