"""Test helper: a `tileport run`-style conversion of examples/vector_add.py in a real git worktree, ready for a
person's edit: the real stage-A reference analysis (sm_90, no cubins) committed as A, the hand-written port's
kernel.rs + spec.json committed as B, A/B/D/E runs recorded on their commits (every gate passed on HEAD), so a
human edit's gates build against the real cutile crates (the shared cargo target warms them once per machine)."""

from __future__ import annotations

import shutil
from pathlib import Path

from gitconv import Conv

from tileport.store import Store
from tileport.analysis import analyze_op

REPO = Path(__file__).resolve().parent.parent
OP = "vector_add"
REFERENCE_PORT = REPO / "ports" / OP
# what breaks the kernel for rustc: a name that does not exist
BROKEN = ("z.store(tx + ty);", "z.store(tx + no_such_tile);")
# what a careful person might add: a comment (same Tile IR, so the IR self-check still passes)
GOOD = ("z.store(tx + ty);", "z.store(tx + ty); // checked by hand against the reference")


def make(root: Path, store_path: Path) -> Conv:
    store = Store(store_path)
    c = Conv(root, store, op=OP)
    port = c.wt / "ports" / OP
    analyze_op(REPO / "examples" / f"{OP}.py", targets=["sm_90"], out_dir=port / ".tileport" / "reference",
               run_tileiras=False, warm=True)
    c.run("A", commit=c.stage_commit("A", path=f"ports/{OP}/.tileport/runs/001-A-1.json"))
    for name in ("kernel.rs", "spec.json"):
        shutil.copy(REFERENCE_PORT / name, port / name)
    c.run("B", commit=c.stage_commit("B", path=f"ports/{OP}/.tileport/runs/002-B-1.json"))
    c.run("D")
    c.run("E")
    store.update_conversion(c.cid, status="done")
    return c


def kernel_rs(c: Conv) -> Path:
    return c.wt / "ports" / OP / "kernel.rs"


def edit(c: Conv, change: tuple[str, str]) -> None:
    k = kernel_rs(c)
    text = k.read_text()
    assert change[0] in text
    k.write_text(text.replace(change[0], change[1], 1))
