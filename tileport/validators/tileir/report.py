"""Loading IR from disk (text or bytecode) and rendering an `IRDiffReport` for people."""

from __future__ import annotations

from pathlib import Path

from tileport import limits
from tileport.errors import EnvironmentBlocked, UserError
from tileport.exec import tileir
from tileport.validators.tileir.diff import IRDiffReport, RowStatus, Severity
from tileport.validators.tileir.parse import Module, parse_text

BYTECODE_MAGIC = b"\x7fTileIR\x00"


def is_bytecode(path: Path) -> bool:
    if path.suffix == ".tileirbc":
        return True
    try:
        with open(path, "rb") as f:
            return f.read(len(BYTECODE_MAGIC)) == BYTECODE_MAGIC
    except OSError:
        return False


def disassemble(path: Path, tileirdisasm: str | Path | None = None, timeout: float = 120) -> str:
    """Run tileirdisasm on a bytecode file; a missing tool is an environment problem (BLOCKED)."""
    if tileirdisasm is None:
        from tileport.exec.toolchain import from_config

        tileirdisasm = from_config().tileirdisasm
    if tileirdisasm is None:
        raise EnvironmentBlocked(f"{path} is Tile IR bytecode and tileirdisasm was not found; "
                                 "install it with: pip install \"cuda-tile[tileiras]\" (or pass a text file)")
    res = tileir.disassemble(path, tileirdisasm=tileirdisasm, timeout=timeout)
    if not res.ok:
        first = (res.stderr.strip() or res.stdout.strip() or "no output").splitlines()[0]
        raise UserError(f"{path}: tileirdisasm failed (exit {res.returncode}): {first}")
    return res.stdout


def load_module(path: str | Path, tileirdisasm: str | Path | None = None) -> Module:
    """Parse a tileirdisasm text file, or disassemble a `.tileirbc` first."""
    p = Path(path)
    data = limits.read_bytes(p, "a Tile IR text file or a .tileirbc", limits.IR_BYTES)
    if p.suffix == ".tileirbc" or data.startswith(BYTECODE_MAGIC):
        text = disassemble(p, tileirdisasm)
        if len(text) > limits.IR_BYTES.value:
            raise UserError(f"{p}: its disassembly is over the {limits.IR_BYTES.describe()}")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise UserError(f"{p}:1:1: malformed Tile IR: not UTF-8 text; pass tileirdisasm output or a .tileirbc") \
                from None
    limits.check_depth(text, str(p))
    try:
        return parse_text(text, str(p))
    except (RecursionError, MemoryError):
        raise UserError(f"{p}: too deeply nested or too large to parse ({limits.DEPTH.describe()}, "
                        f"{limits.IR_BYTES.describe()})") from None


_MARK = {Severity.ERROR: "ERROR", Severity.WARNING: "WARN ", Severity.NOTE: "note "}
_ROW_MARK = {RowStatus.SAME: " ", RowStatus.CHANGED: "~", RowStatus.DOWNSTREAM: ".", RowStatus.REF_ONLY: "-",
             RowStatus.PORT_ONLY: "+", RowStatus.BENIGN: "="}


_CHANGES = {"values": "results", "speed": "speed only", "host": "results, if the host passes other values",
            "neither": "neither results nor speed"}


def format_report(rep: IRDiffReport, side_by_side: bool = False, width: int = 160) -> str:
    out: list[str] = []
    s = rep.stats
    out.append(f"Tile IR diff: {rep.verdict.value}")
    out.append(f"  reference: {rep.ref_path or '-'}  ({s.get('ref_entries', 0)} entries, {s.get('ref_ops', 0)} ops)")
    out.append(f"  port:      {rep.port_path or '-'}  ({s.get('port_entries', 0)} entries, {s.get('port_ops', 0)} ops)")
    out.append("")
    out.append("entries:")
    for e in rep.entries:
        if e.ref and e.port:
            state = "identical" if e.identical else "differs"
            out.append(f"  {e.ref}  <->  {e.port}  [{e.rule}] {state}")
        else:
            out.append(f"  {e.ref or '-'}  <->  {e.port or '-'}  [unmatched]")
    if not rep.groups:
        out.append("")
        out.append("no differences")
    for g in rep.groups:
        out.append("")
        out.append(f"{g.category} ({g.severity.value}) - {g.description}")
        for f in g.findings:
            where = []
            if f.ref_line is not None:
                where.append(f"ref:{f.ref_line}")
            if f.port_line is not None:
                where.append(f"port:{f.port_line}")
            loc = f" [{' '.join(where)}]" if where else ""
            changes = _CHANGES[f.consequence.value]
            out.append(f"  {_MARK[f.severity]} {f.check}{loc}: {f.message} [can change: {changes}]")
    counts = {sev: sum(1 for f in rep.findings if f.severity == sev) for sev in Severity}
    out.append("")
    out.append(f"{counts[Severity.ERROR]} error(s), {counts[Severity.WARNING]} warning(s), "
               f"{counts[Severity.NOTE]} note(s) -> {rep.verdict.value}")
    if side_by_side:
        out.append("")
        out.append(format_side_by_side(rep, width))
    return "\n".join(out)


def format_side_by_side(rep: IRDiffReport, width: int = 160) -> str:
    """Two columns: reference line / port line, with a status mark between them.

    Marks: ' ' same, '~' changed, '.' same op on changed inputs, '-' reference only,
    '+' port only, '=' benign (dead, duplicate, assume bounded, token plumbing)."""
    col = max(30, (width - 16) // 2)
    out = [f"{'reference':<{col + 6}} | s | port", "-" * min(width, 2 * col + 16)]
    entry = None
    for row in rep.rows:
        if row.entry != entry:
            entry = row.entry
            out.append(f"== {entry}")
        indent = "  " * max(0, row.depth - 1)
        rt = (indent + row.ref_text) if row.ref_text else ""
        pt = (indent + row.port_text) if row.port_text else ""
        rl = f"{row.ref_line:>5}" if row.ref_line is not None else "     "
        pl = f"{row.port_line:>5}" if row.port_line is not None else "     "
        out.append(f"{rl} {_clip(rt, col)} | {_ROW_MARK[row.status]} | {pl} {_clip(pt, col)}")
    return "\n".join(out)


def _clip(text: str, n: int) -> str:
    return text[: n - 1] + "…" if len(text) > n else f"{text:<{n}}"
