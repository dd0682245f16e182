"""Side-by-side Tile IR diff: reference and port aligned row by row, findings coloured by category."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

STATUS_STYLE = {
    "same": "", "changed": "bold red", "downstream": "yellow", "ref_only": "red", "port_only": "cyan",
    "benign": "dim",
}
MARK = {"same": " ", "changed": "~", "downstream": ".", "ref_only": "-", "port_only": "+", "benign": "="}
FINDING_STATUSES = {"changed", "ref_only", "port_only"}
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "note": "dim"}


class IRDiffView(VerticalScroll):
    """Shows one IRDiffReport; `n` / `N` jump to the next / previous differing row."""

    BINDINGS = [Binding("n", "next_finding", "next finding"), Binding("N", "prev_finding", "prev finding")]

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._finding_rows: list[int] = []
        self._at = -1

    def compose(self):
        yield Static("", id="ir-summary")
        yield Static("", id="ir-rows")

    def show_message(self, text: str) -> None:
        self.query_one("#ir-summary", Static).update(text)
        self.query_one("#ir-rows", Static).update("")

    def show_report(self, report, label: str) -> None:
        """Render `report` (tileport.validators.tileir.diff.IRDiffReport)."""
        head = Text()
        head.append(f"{label}: ", style="bold")
        head.append(report.verdict.value, style="green" if report.verdict.value != "FAIL_FIXABLE" else "bold red")
        for g in report.groups:
            for f in g.findings:
                head.append("\n  ")
                head.append(f"{f.severity.value:<7}", style=SEVERITY_STYLE.get(f.severity.value, ""))
                head.append(f" {f.check}: {f.message}")
        table = Table(show_header=True, header_style="bold", expand=True, box=None, pad_edge=False)
        table.add_column("ref", justify="right", width=5, no_wrap=True)
        table.add_column("reference", ratio=1, no_wrap=True, overflow="ellipsis")
        table.add_column("", width=1, no_wrap=True)
        table.add_column("port", justify="right", width=5, no_wrap=True)
        table.add_column("port (cutile-rs)", ratio=1, no_wrap=True, overflow="ellipsis")
        table.add_column("category", width=12, no_wrap=True)
        self._finding_rows = []
        entry = None
        line_no = 0
        for row in report.rows:
            if row.entry != entry:
                entry = row.entry
                table.add_row("", Text(f"== {entry}", style="bold"), "", "", "", "")
                line_no += 1
            status = row.status.value
            style = STATUS_STYLE.get(status, "")
            indent = "  " * max(0, row.depth - 1)
            if status in FINDING_STATUSES:
                self._finding_rows.append(line_no)
            table.add_row(
                "" if row.ref_line is None else str(row.ref_line),
                Text(indent + (row.ref_text or ""), style=style),
                Text(MARK.get(status, "?"), style=style),
                "" if row.port_line is None else str(row.port_line),
                Text(indent + (row.port_text or ""), style=style),
                Text(row.category or "", style=style))
            line_no += 1
        self.query_one("#ir-summary", Static).update(head)
        self.query_one("#ir-rows", Static).update(table)
        self._at = -1
        self._summary_lines = 1 + len(report.findings)

    def _jump(self, step: int) -> None:
        if not self._finding_rows:
            self.notify("no differing rows in this diff")
            return
        self._at = (self._at + step) % len(self._finding_rows)
        # +1 for the table header; the summary sits above the table
        self.scroll_to(y=self._summary_lines + 1 + self._finding_rows[self._at], animate=False)

    def action_next_finding(self) -> None:
        self._jump(1)

    def action_prev_finding(self) -> None:
        self._jump(-1)
