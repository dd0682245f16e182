"""The main table: one row per conversion, updated cell by cell as store events arrive."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from tileport.tui.view import ConversionRow, elapsed_text, verdict_style

# (key, label, width): fixed widths, so a thousand rows need no per-cell measuring (open < 1 s). In priority
# order: at 80 columns id, op, stage, verdict, status and geomean stay visible; the rest scroll (right/left).
COLUMNS = (("id", "id", 4), ("op", "op", 18), ("stage", "stage", 5), ("verdict", "verdict", 15),
           ("status", "status", 8), ("geomean", "geomean", 7), ("worst", "worst", 6),
           ("attempts", "attempts / caps", 22), ("approval", "approval", 16), ("kernel", "kernel", 24))


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def cells(row: ConversionRow, gate: float, config_max: float = 1.10) -> dict[str, object]:
    geo = Text("-", style="dim") if row.geomean is None else Text(
        f"{row.geomean:.3f}", style="green" if row.geomean <= gate else "red")
    # judged by the config_max recorded with the E run; `config_max` (today's) only for a run from before it was kept
    worst = Text("-", style="dim") if row.worst is None else Text(
        f"{row.worst:.2f}", style="red" if row.slow(config_max) else "green")
    run = row.running
    return {
        "id": str(row.id), "op": Text(_clip(row.op, 18)), "kernel": Text(_clip(row.kernel, 24)),
        "stage": f"{run.stage}▶" if run else row.stage or "-",
        "verdict": Text(f"RUNNING {elapsed_text(run.elapsed())}", style="yellow") if run else
        Text(row.verdict or "-", style=verdict_style(row.verdict)),
        "attempts": row.attempts_text() or "-",
        "geomean": geo,
        "worst": worst,
        "approval": Text(row.approval, style="green" if row.approval == "approved" else
                         "yellow" if row.approval.startswith("stale") else "red" if row.approval == "rejected" else "dim"),
        "status": Text(row.status),
    }


def detail_text(row: ConversionRow) -> str:
    """A conversion's whole row (space on the list): what the columns cut, and where it lives."""
    run = row.running
    attempts = "  ".join(f"{s} {n}/{c}" for s, (n, c) in row.attempts.items())
    lines = [f"#{row.id} {row.op}  kernel {row.kernel}", f"op       {row.op_path or '-'}",
             f"status   {row.status}" + (f": {row.error}" if row.error else ""),
             f"stage    {row.stage or '-'}  verdict {row.verdict or '-'}"
             + (f" ({row.fail_class})" if row.fail_class else "")
             + (f"  now running {run.stage} attempt {run.attempt} for {elapsed_text(run.elapsed())}" if run else ""),
             f"attempts {attempts}",
             f"geomean  {'-' if row.geomean is None else f'{row.geomean:.4f}'}  worst "
             f"{'-' if row.worst is None else f'{row.worst:.4f}'}",
             f"approval {row.approval}", f"branch   {row.branch or '-'}", f"worktree {row.worktree or '-'}",
             f"head     {row.head_commit or '-'}", f"updated  {row.updated_at}"]
    if row.summary:
        lines += ["", "newest stage run:", row.summary]
    return "\n".join(lines)


class ConversionsTable(DataTable):
    """Rows keyed by conversion id; `upsert` changes only the cells that differ."""

    def __init__(self, gate: float, config_max: float = 1.10, **kw) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kw)
        self.gate = gate
        self.config_max = config_max
        self._shown: dict[int, dict[str, str]] = {}

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    def upsert(self, rows: list[ConversionRow]) -> None:
        for row in rows:
            values = cells(row, self.gate, self.config_max)
            plain = {k: str(v) for k, v in values.items()}
            old = self._shown.get(row.id)
            if old is None:
                self.add_row(*(values[k] for k, _, _ in COLUMNS), key=str(row.id), height=1)
            else:
                for key, _, _ in COLUMNS:
                    if old[key] != plain[key]:
                        self.update_cell(str(row.id), key, values[key])
            self._shown[row.id] = plain

    def running_ids(self) -> list[int]:
        return [cid for cid, cells_ in self._shown.items() if cells_["verdict"].startswith("RUNNING")]

    def selected_id(self) -> int | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key((self.cursor_row, 0)).row_key
        return int(key.value) if key.value is not None else None
