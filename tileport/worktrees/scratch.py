"""A scratch git repository holding the bundled examples: what `tileport` with no arguments converts.

Made once (a fresh `git init`, the examples copied in and committed) and reused after, so a second
`tileport` picks up the same conversions from the same store instead of starting over. It never
touches the user's own repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tileport.errors import UserError
from tileport.worktrees import _gitcli as g
from tileport.worktrees.git import identity_env

MARKER = ".tileport-scratch"


def examples_repo(root: Path, examples: list[Path]) -> tuple[Path, list[Path]]:
    """The scratch repo at `root` with every example committed; returns (root, op paths inside it)."""
    root = Path(root).absolute()
    if root.exists() and not (root / MARKER).is_file():
        raise UserError(f"{root} exists and was not made by tileport; move it aside or pass --repo DIR")
    if not root.exists():
        root.mkdir(parents=True)
        (root / MARKER).write_text("made by `tileport` for the bundled examples; safe to delete\n", encoding="utf-8")
        (root / ".gitignore").write_text(".tileport/\nout/\n", encoding="utf-8")
        g.git(root, "init", "-q", "--initial-branch=main")
    elif g.git(root, "rev-parse", "--show-toplevel", check=False).stdout.strip() != str(root.resolve()):
        raise UserError(f"{root} is a broken tileport scratch repository; delete it and run `tileport` again")
    ops_dir = root / "examples"
    ops_dir.mkdir(exist_ok=True)
    ops = []
    for src in examples:
        dst = ops_dir / src.name
        if not dst.exists():
            shutil.copy2(src, dst)
        ops.append(dst)
    g.git(root, "add", "--all")
    staged = not g.git(root, "diff", "--cached", "--quiet", check=False).ok
    if staged or g.rev(root, "HEAD") is None:
        g.git(root, "commit", "-q", "--no-verify", "-m", "examples: the cuTile Python ops tileport converts by default",
              env=identity_env(root))
    return root, ops
