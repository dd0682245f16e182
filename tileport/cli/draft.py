"""`tileport draft OP.py`: a deterministic cutile-rs first draft of a cuTile Python op, with no model.

Runs stage A first when the op has no current analysis (out/<op>/analysis.json whose source hash matches), then
writes kernel.rs, spec.json and host_contract.json (default out/<op>/draft/) and prints every hole
(`unsupported: ct.X at op.py:L:C`). Exit 0 when the draft is complete, 1 when it has holes, 2 for bad input.
Check it with `tileport build-rust DIR --reference out/<op>`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from tileport.cli._common import config_from
from tileport.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "draft", help="translate a cuTile Python op to a cutile-rs draft (kernel.rs + spec.json), no model",
        description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("op", metavar="OP.py", help="the cuTile Python op module")
    p.add_argument("--analysis", metavar="DIR", help="use this analysis (out/<op> or its analysis.json)")
    p.add_argument("--kernel", metavar="NAME", help="draft only this kernel")
    p.add_argument("--out", metavar="DIR", help="where to write the draft (default out/<op>/draft)")
    p.set_defaults(func=run)


def _current(analysis_json: Path, op: Path) -> bool:
    try:
        data = json.loads(analysis_json.read_text(encoding="utf-8"))
        return data.get("source", {}).get("sha256") == hashlib.sha256(op.read_bytes()).hexdigest()
    except (OSError, ValueError):
        return False


def run(args: argparse.Namespace) -> int:
    from tileport import service

    op = Path(args.op)
    if not op.is_file():
        raise UserError(f"{op}: no such file (give the cuTile Python op module, e.g. examples/softmax.py)")
    if op.suffix != ".py":
        raise UserError(f"{op}: not a Python file (give the cuTile Python op module, e.g. examples/softmax.py)")
    from tileport.cli._triton import is_triton_op

    if is_triton_op(op) and not args.analysis:
        from tileport.cli._triton import draft_triton_cli

        return draft_triton_cli(op, args, config_from(args))
    if args.analysis:
        analysis = service.load_analysis(args.analysis)
    else:
        default = Path("out") / op.stem
        if _current(default / "analysis.json", op):
            analysis = service.load_analysis(default)
        else:
            config = config_from(args)
            print(f"analysing {op} (no current analysis in {default}/) ...", flush=True)
            analysis = service.analyze_op(config, op, out_dir=default, kernel=args.kernel)
    draft = service.draft(analysis, kernel=args.kernel)
    out = Path(args.out) if args.out else Path(analysis.out_dir) / "draft"
    entries = ", ".join(f"{e.name} ({len(e.variants)} variant{'s' * (len(e.variants) != 1)})"
                        for e in draft.spec.entries)
    return report_draft(draft, out, f"{analysis.op}: {entries_text(draft)}: {entries}",
                        f"complete: check it with `tileport build-rust {out} --reference {analysis.out_dir}`")


def entries_text(draft) -> str:
    n = len(draft.spec.entries)
    return f"{n} entr{'ies' if n != 1 else 'y'}"


def report_draft(draft, out: Path, header: str, complete: str, notes: list[str] = ()) -> int:
    """Write the draft to `out` and print what a user reads: the header, the files, notes, every hole; exit 1 when
    there are holes, else 0 after `complete` (how to check it)."""
    paths = draft.write(out)
    print(header)
    for p in paths:
        print(f"wrote {p}")
    for n in notes:
        print(f"note: {n}")
    for hole in draft.holes:
        print(str(hole))
    if draft.holes:
        print(f"{len(draft.holes)} hole(s): the draft needs a writer for them before it builds")
        return 1
    print(complete)
    return 0
