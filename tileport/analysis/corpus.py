"""The bundled example corpus: `examples/*.py`, what `tileport analyze` does with no argument."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import tileport
from tileport.analysis.pipeline import analyze_op
from tileport.analysis.schema import Analysis
from tileport.errors import UserError


def examples_dir() -> Path:
    """`./examples` when the working directory has one, else the one beside the tileport package."""
    here = Path("examples")
    if here.is_dir() and any(here.glob("*.py")):
        return here
    bundled = Path(tileport.__file__).resolve().parent.parent / "examples"
    if bundled.is_dir():
        return bundled
    raise UserError("no examples/ directory here or beside the tileport package; pass an op: tileport analyze OP.py")


def find_examples(directory: Path | None = None) -> list[Path]:
    d = directory or examples_dir()
    ops = sorted(p for p in d.glob("*.py") if not p.name.startswith("_"))
    if not ops:
        raise UserError(f"{d}: no .py ops in it; pass an op: tileport analyze OP.py")
    return ops


@dataclass
class OpOutcome:
    path: Path
    analysis: Analysis | None
    error: str | None
    seconds: float


def analyze_examples(paths: list[Path] | None = None, *, out_root: Path | None = None,
                     on_done: Callable[[OpOutcome], None] | None = None, **kwargs) -> list[OpOutcome]:
    """Analyse each op (default: every example) into `<out_root>/<op>/`; one op's failure does not stop the rest."""
    outcomes = []
    for path in paths if paths is not None else find_examples():
        outcomes.append(o := _one(path, out_root, kwargs))
        if on_done:
            on_done(o)
    return outcomes


def _one(path: Path, out_root: Path | None, kwargs: dict) -> OpOutcome:
    t0 = time.perf_counter()
    out_dir = (out_root / path.stem) if out_root is not None else None
    kwargs.setdefault("warm", True)
    try:
        a = analyze_op(path, out_dir=out_dir, **kwargs)
        return OpOutcome(path, a, None, time.perf_counter() - t0)
    except UserError as e:
        return OpOutcome(path, None, str(e), time.perf_counter() - t0)
