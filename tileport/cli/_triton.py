"""The Triton parts of `tileport analyze` / `run` / `status`: a Triton op analysed on its own, a cuTile Python op
paired with its Triton twin, and the reference choice printed."""

from __future__ import annotations

import argparse
from pathlib import Path

from tileport.errors import UserError


def is_triton_op(path: str | Path) -> bool:
    from tileport import service

    return service.is_triton_op(path)


def analyze_triton_cli(args: argparse.Namespace, config, python, started) -> int | None:
    """`tileport analyze TRITON_OP.py`: the Triton analysis (source.kind triton); None for a cuTile Python op."""
    if not is_triton_op(args.op):
        return None
    if args.triton or args.reference_timings:
        raise UserError(f"{args.op} is the Triton op; pass the cuTile Python op first: "
                        f"tileport analyze CUTILE_OP.py --triton {args.op}")
    from tileport import service

    a = service.analyze_triton(config, args.op, out_dir=args.out, kernel=args.kernel, python=python,
                               started_at=started)
    print_triton(a)
    return 0


def print_triton(a) -> None:
    t = a.triton
    print(f"{a.op} (Triton {t.version if t else '?'}): {len(a.kernels)} kernel{'s' * (len(a.kernels) != 1)}, "
          f"{len(a.variants)} variant{'s' * (len(a.variants) != 1)} in {a.timings.total_s:.1f} s")
    for v in a.variants:
        print(f"  {v.kernel}  {v.name or '(no constexprs)'}  {','.join(i.dtype for i in v.instances)}  "
              f"{'; '.join(v.sources[:2])}")
    for k in (t.kernels if t else []):
        if k.configs:
            print(f"  {k.kernel}: autotune over {len(k.configs)} configs, key {k.autotune_key}")
        if k.heuristics:
            print(f"  {k.kernel}: heuristics for {', '.join(k.heuristics)}")
    if a.capture is not None:
        print(f"  launch capture ({a.capture.mode}): {a.capture.calls} calls, {a.capture.launches} launches")
    for note in a.notes:
        print(f"  note: {note}")
    print(f"wrote {Path(a.out_dir) / 'analysis.json'}")


def print_reference(r) -> None:
    print(f"  Triton twin {r.triton} (paired by {r.paired_by}): {r.summary()}")
    for v in r.variants:
        nums = (f"  cuTile {v.cutile_us:.1f} us, Triton {v.triton_us:.1f} us, Triton/cuTile {v.ratio:.3f} over "
                f"{v.configs} configs" if v.ratio is not None else "  (not measured)")
        print(f"    {v.variant}: reference {'Triton' if v.reference == 'triton' else 'cuTile Python'}{nums}")
    if r.tile_ir_gap:
        label = "IR gate" if any(v.reference == "triton" for v in r.variants) else "Triton side"
        print(f"    {label}: {r.tile_ir_gap}")


def draft_triton_cli(op: Path, args: argparse.Namespace, config) -> int:
    """`tileport draft TRITON_OP.py`: analyse it (source.kind triton), lift it to cuTile Python, draft that."""
    from tileport import service

    print(f"analysing the Triton op {op} ...", flush=True)
    a = service.analyze_triton(config, op, kernel=args.kernel, record=False)
    out = Path(args.out) if args.out else Path(a.out_dir) / "draft"
    try:
        draft, lifted, notes = service.draft_triton(a, Path(a.out_dir).parent / f"{a.op}.triton-lift", config=config,
                                                    kernel=args.kernel)
    except service.LiftIncomplete as e:
        for hole in e.holes:
            print(str(hole))
        print(f"{len(e.holes)} hole(s) the lifted kernel cannot compile without (see {e.lifted}); no draft written: "
              "a writer maps them first")
        return 1
    from tileport.cli.draft import entries_text, report_draft

    return report_draft(
        draft, out, f"{a.op} (Triton, lifted to {lifted}): {entries_text(draft)}: "
                    f"{', '.join(e.name for e in draft.spec.entries)}",
        f"complete (no Tile IR for the Triton reference: the IR self-check compares with the lifted kernel only); "
        f"check it with `tileport build-rust {out}`", notes)
