"""A whole library (`tileport analyze DIR`, `tileport run DIR`): its op files, stage A on every one (recorded as
`tileport analyze OP` records it), a conversion per cuTile op, and the summary table's rows."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tileport.config import Config
from tileport.errors import UserError
from tileport.service.conversions import open_store, start_or_reuse, store_path
from tileport.store import queries

if TYPE_CHECKING:
    from tileport.pipeline.runner import ConversionRunner

__all__ = ["find_library", "analyze_library", "GATE_ORDER", "library_rows", "library_conversions"]


def find_library(root: str | Path):
    """The library's op files (modules defining @ct.kernel / @triton.jit kernels; see analysis.library)."""
    from tileport.analysis.library import find_library as find

    return find(root)


def analyze_library(config: Config, lib, *, out_root: str | Path, parallel: int = 1, on_done=None, **kw):
    """Stage A on every op of the library, `parallel` at a time, each recorded in the store as `tileport analyze OP`
    records it; returns the library.OpResult per op, in the library's order."""
    from tileport.service.oneshot import record_analysis
    from tileport.analysis.library import analyze_library as analyze

    def done(r) -> None:
        if r.analysis is not None:
            record_analysis(config, r.path, None, r.analysis)
        if on_done is not None:
            on_done(r)

    kw["config"] = config
    return analyze(lib, out_root=Path(out_root), jobs=parallel, on_done=done, **kw)


GATE_ORDER = ("A", "B", "D", "E")


def library_rows(config: Config, lib, results=None, *, repo: str | Path | None = None, draft: bool = True) -> list[dict]:
    """Per op of the library: analysed (and why not), whether the deterministic draft is complete, and from the
    repository's store the newest conversion of that op: B's verdict (compiled + IR self-check) and the merge gates
    passed. A plain dict per op, as `--json` writes it."""
    from tileport.records import GATE_PASSES, Stage

    by_path = {Path(r.path).resolve(): r for r in results or []}
    newest: dict[Path, object] = {}
    gates_of: dict[int, dict[str, bool]] = {}
    store_file = store_path(config, repo)
    if store_file.exists():
        with open_store(config, repo) as s:
            for c in queries.conversion_summaries(s):
                p = Path(c.op_path).resolve()
                if p not in newest or c.id > newest[p].id:
                    newest[p] = c
            for c in newest.values():
                if c.repo and c.head_commit:  # a conversion branch: its gates as merge judges them (IR check too)
                    gates_of[c.id] = _gates_at_head(s, c)
    rows = []
    for f in lib.ops:
        p = f.path.resolve()
        r = by_path.get(p)
        row: dict = {"op": str(f.path.relative_to(lib.root)), "kind": f.kind, "kernels": f.kernels,
                     "analysed": None, "why": None, "tests": [], "configurations": None, "seconds": None,
                     "draft": None, "conversion": None, "compiled": None, "gates": None}
        if r is not None:
            row["seconds"] = round(r.seconds, 2)
            if r.analysis is None:
                row["analysed"], row["why"] = "no", r.error
            else:
                a = r.analysis
                missing = [u.kernel for u in getattr(a, "unresolved", []) or []]
                row["analysed"] = "partial" if missing else "yes"
                row["why"] = ("not analysed: " + ", ".join(missing)) if missing else None
                row["tests"] = [str(t) for t in getattr(a, "tests", []) or []]
                cap = getattr(a, "capture", None)
                row["configurations"] = len([c for c in cap.configurations if c.source != "guess"]) if cap else 0
                if draft and f.kind == "cutile":
                    row["draft"] = _draft_state(a)
        c = newest.get(p)
        if c is not None and row["analysed"] is None and c.stages.get("A"):  # `run DIR`: stage A's verdict
            row["analysed"] = "yes" if c.stages["A"] in GATE_PASSES[Stage.ANALYZE] else "no"
            row["why"] = None if row["analysed"] == "yes" else (c.summary or c.error or "")[:300]
        if c is not None and r is None and row["analysed"] == "yes":  # `run DIR`: its stage A's own analysis
            a = _conversion_analysis(c)
            if a is not None:
                cap = getattr(a, "capture", None)
                row["configurations"] = len([x for x in cap.configurations if x.source != "guess"]) if cap else 0
                row["tests"] = [str(t) for t in getattr(a, "tests", []) or []]
                if draft and f.kind == "cutile":
                    row["draft"] = _draft_state(a)
        if c is not None:
            row["conversion"] = c.id
            row["compiled"] = c.stages.get("B")
            row["gates"] = gates_of.get(c.id) or {g: (c.stages.get(g) in GATE_PASSES[Stage(g)]) for g in GATE_ORDER}
        rows.append(row)
    return rows


def _gates_at_head(store, c) -> dict[str, bool]:
    """Required gate -> satisfied on the conversion branch's HEAD (B includes its IR self-check); {} when git cannot
    say (the stage verdicts stand in then)."""
    from tileport.records import GateStatus
    from tileport.worktrees.gates import evaluate_gates

    try:
        records = evaluate_gates(store, c.repo, c.id, c.head_commit, base=c.base_commit)
    except Exception:  # a moved or deleted repository: the table still prints, from the verdicts
        return {}
    return {r.name: r.status is GateStatus.SATISFIED for r in records}


def _conversion_analysis(c):
    """The stage-A analysis a conversion committed with its port (`ports/<op>/.tileport/reference/analysis.json` in
    its worktree), or None when it cannot be read."""
    from tileport.analysis.schema import Analysis
    from tileport.pipeline.context import ConversionPaths

    if not c.worktree:
        return None
    p = ConversionPaths(worktree=Path(c.worktree), op=Path(c.op_path).stem).reference / "analysis.json"
    try:
        return Analysis.model_validate_json(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _draft_state(analysis) -> str:
    """"complete", "N holes" or "no: why" for the deterministic draft of an analysis (nothing written)."""
    from tileport.draft.port import draft_port

    try:
        d = draft_port(analysis)
    except UserError as e:
        return "no: " + " ".join(str(e).split())[:160]
    except Exception as e:  # the translator's own bug on this op: said, not raised
        return f"no: {type(e).__name__}: {' '.join(str(e).split())[:140]}"
    return "complete" if not d.holes else f"{len(d.holes)} hole{'s' * (len(d.holes) != 1)}"


def library_conversions(run: "ConversionRunner", lib, *, repo: str | Path = ".") -> list[int]:
    """A conversion per cuTile op of the library (the existing one of an op when there is one): queued for
    `drive_many`. Triton ops are analysed, not converted (convert their cuTile twin)."""
    ops = [f.path for f in lib.ops if f.kind == "cutile"]
    if not ops:
        raise UserError(f"{lib.root}: no cuTile Python op to convert (only Triton kernels); tileport analyze "
                        f"{lib.root} analyses them")
    return start_or_reuse(run, ops, repo=repo)
