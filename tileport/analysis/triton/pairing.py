"""A cuTile Python op and its Triton twin: finding the twin, and the per-variant reference choice.

Pairing by name: in a tree with both kinds (`ops/cutile/<op>.py` beside `ops/triton/<op>.py`, or `examples/<op>.py`
beside `examples/triton/<op>.py`), a cuTile Python op's twin is the Triton module of the same name. An explicit
`--triton PATH` wins over the name rule: `tileport run` saves it with the conversion (the store's `triton`), and
stage A passes it on each run (`find_twin(op, explicit=...)`), so a rerun in another process pairs the same way.

The choice: on a GPU host both sides are timed by `validators/gpu/triton_bench.py` (the perf gate's harness,
paired configurations);
per cuTile Python variant the faster side over the configurations that exercise it is that variant's
correctness and performance reference, recorded with its numbers. Without a GPU, cuTile Python is the reference
of every variant and the record says the choice is pending a GPU. A Triton reference has no Tile IR unless a
Triton-to-Tile-IR backend is there: the record then carries the IR gate's explicit gap.
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

from tileport import limits
from tileport.errors import UserError
from tileport.analysis.schema import Analysis
from tileport.analysis.triton.backend import NO_BACKEND_GAP
from tileport.analysis.triton.detect import is_triton_source
from tileport.analysis.triton.schema import ReferenceChoice, VariantChoice

HARNESS = "the performance gate's harness: CUPTI device time, L2 flushed, paired configurations"
def _candidates(op: Path) -> list[Path]:
    d = op.parent
    out = [d / "triton" / op.name]
    if d.name == "cutile":
        out.insert(0, d.parent / "triton" / op.name)
    return out


def find_twin(op: str | Path, explicit: str | Path | None = None) -> tuple[Path, str] | None:
    """(the Triton twin, how it was paired) of a cuTile Python op, or None; `explicit`: the twin the conversion was
    started with (`--triton`), which wins over the name rule."""
    op = Path(op)
    if explicit:
        return Path(explicit), "option"
    for c in _candidates(op):
        if c.is_file() and c.resolve() != op.resolve() and _is_triton_file(c):
            return c, "name"
    return None


def cutile_twin(triton_op: str | Path) -> Path | None:
    """The cuTile Python op a Triton op (`.../triton/<op>.py`) twins, when the tree has one."""
    t = Path(triton_op)
    if t.parent.name != "triton":
        return None
    root = t.parent.parent
    for c in (root / "cutile" / t.name, root / t.name):
        if c.is_file() and not _is_triton_file(c):
            return c
    return None


def _is_triton_file(path: Path) -> bool:
    try:
        return is_triton_source(ast.parse(limits.read_bytes(path, "a Triton op", limits.SOURCE_BYTES)))
    except (SyntaxError, UserError, ValueError, RecursionError, MemoryError):
        return False


def check_triton_op(path: str | Path) -> Path:
    p = Path(path)
    if not p.is_file() or p.suffix != ".py":
        raise UserError(f"--triton {p}: not a Python file; pass the Triton twin, e.g. ops/triton/rms_norm.py")
    if not _is_triton_file(p):
        raise UserError(f"--triton {p}: no @triton.jit kernel in it; pass the Triton version of the op")
    return p


def _label(kernel: str, name: str) -> str:
    return f"{kernel}[{name}]" if name else kernel


def pending(cutile: Analysis, triton: Analysis, paired_by: str) -> ReferenceChoice:
    return ReferenceChoice(
        cutile=cutile.source.path, triton=triton.source.path, paired_by=paired_by,
        triton_analysis=str(Path(triton.out_dir) / "analysis.json"), status="pending_gpu",
        variants=[VariantChoice(variant=_label(v.kernel, v.name), reference="cutile") for v in cutile.variants],
        timing=HARNESS, tile_ir_gap=triton.triton.tile_ir_gap if triton.triton else NO_BACKEND_GAP,
        note="no GPU here: cuTile Python is the reference of every variant; the choice is pending a GPU "
             "(run the pair benchmark on a GPU host and pass its bench.json with --reference-timings)")


def _geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def choose(cutile: Analysis, triton: Analysis, paired_by: str, bench: dict) -> ReferenceChoice:
    """The measured choice: per cuTile Python variant, the side with the lower geomean device time over the
    configurations (rows of bench.json) whose launches were that variant; variants no row exercised stay cuTile."""
    choice = pending(cutile, triton, paired_by)
    per: dict[str, list[dict]] = {}
    for row in bench.get("rows") or []:
        if not (row.get("cutile_ms") and row.get("triton_ms")):
            continue
        for launch in row.get("cutile_variant") or []:
            got = launch.get("constants", {})
            same = [v for v in cutile.variants if v.kernel == launch.get("kernel")]
            exact = [v for v in same if all(got.get(k) == val for k, val in v.constants.items())]
            # an int constant the wrapper computes from the shape (TILE_N = next_power_of_2(n)) differs per
            # configuration from the value analysed: then the variant is the one whose bool constants match
            loose = [v for v in same if all(got.get(k) == val for k, val in v.constants.items()
                                            if isinstance(val, bool))]
            for v in exact or (loose if len(loose) == 1 else []):
                per.setdefault(_label(v.kernel, v.name), []).append(row)
    variants = []
    for vc in choice.variants:
        rows = per.get(vc.variant, [])
        if not rows:
            variants.append(vc)
            continue
        c_us = _geomean([r["cutile_ms"] * 1000 for r in rows])
        t_us = _geomean([r["triton_ms"] * 1000 for r in rows])
        ratio = _geomean([r["triton_ms"] / r["cutile_ms"] for r in rows])
        variants.append(VariantChoice(variant=vc.variant, reference="triton" if ratio is not None and ratio < 1.0
                                      else "cutile", configs=len(rows), cutile_us=round(c_us, 3),
                                      triton_us=round(t_us, 3), ratio=round(ratio, 4)))
    tri = any(v.reference == "triton" for v in variants)
    return choice.model_copy(update={
        "status": "measured", "variants": variants, "timing": bench.get("timing") or HARNESS,
        "tile_ir_gap": choice.tile_ir_gap if tri else None,
        "note": f"measured on {bench.get('device', 'a GPU')} (triton {bench.get('triton_version', '?')}, "
                f"torch {bench.get('torch', '?')}); per variant the faster side is the reference"
                + (f"; {choice.tile_ir_gap}: the IR gate has no reference IR for the Triton-referenced variants"
                   if tri and choice.tile_ir_gap else "")})


def read_bench(path: str | Path) -> dict:
    data = limits.read_json(Path(path), "the bench.json the pair benchmark wrote")
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise UserError(f"{path}: not a pair benchmark result (no rows); rerun scripts/gpu-bench-triton.sh")
    return data


def attach(cutile: Analysis, choice: ReferenceChoice) -> Analysis:
    """Record the choice in the cuTile Python analysis (rewrites its analysis.json in place, atomically)."""
    updated = cutile.model_copy(update={"reference": choice})
    p = Path(cutile.out_dir) / "analysis.json"
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(updated.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(p)
    return updated


def analyze_twin(cutile: Analysis, *, triton_path: str | Path | None = None, config=None, python: str | None = None,
                 bench: dict | None = None, saved: str | Path | None = None) -> Analysis:
    """Analyse the Triton twin (`triton_path`: given now, its failure raised; else `saved` with the conversion, else
    found by name: a failure to analyse those is noted and cuTile Python stays the reference) into
    `<cutile out>/triton/` and attach the choice; the cuTile analysis unchanged when there is no twin."""
    from tileport.analysis.triton.pipeline import analyze_triton_op

    if triton_path is not None:
        twin, how = check_triton_op(triton_path), "option"
    else:
        found = find_twin(cutile.source.path, saved)
        if found is None:
            return cutile
        twin, how = found
    try:
        t = analyze_triton_op(twin, out_dir=Path(cutile.out_dir) / "triton", config=config, python=python)
    except UserError as e:  # EnvironmentBlocked included: the cuTile Python conversion goes on with its reference
        if triton_path is not None:
            raise
        return attach(cutile, ReferenceChoice(
            cutile=cutile.source.path, triton=str(twin), paired_by=how, status="pending_gpu",
            variants=[VariantChoice(variant=_label(v.kernel, v.name), reference="cutile") for v in cutile.variants],
            timing=HARNESS, tile_ir_gap=NO_BACKEND_GAP,
            note=f"the Triton twin was not analysed ({e}); cuTile Python is the reference of every variant"))
    choice = choose(cutile, t, how, bench) if bench is not None else pending(cutile, t, how)
    return attach(cutile, choice)


def ir_gaps(analysis: Analysis) -> list[str]:
    """The IR gate's explicit gaps: one per variant whose reference is the Triton twin and has no Tile IR (no
    Triton-to-Tile-IR backend). The self-check then compared with the cuTile Python IR only; such a variant is
    judged against its Triton reference by the correctness and performance gates."""
    r = analysis.reference
    if r is None or not r.tile_ir_gap:
        return []
    return [f"{v.variant}: {r.tile_ir_gap}" for v in r.variants if v.reference == "triton"]


def json_summary(choice: ReferenceChoice) -> str:
    return json.dumps(choice.model_dump(mode="json"))
