"""Side-by-side Tile IR diff: reference and port aligned row by row, findings coloured by category.

Three tables: the findings (highlight one and the rows table goes to the row it is about), the aligned rows
(`n` / `N`: next / previous differing row, `d`: differences only) and, beside them in the conversion screen,
the list of IR pairs. The keys work from anywhere on the IR diff tab (the screen forwards them).
"""

from __future__ import annotations

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import DataTable, Static

STATUS_STYLE = {
    "same": "", "changed": "bold red", "downstream": "yellow", "ref_only": "red", "port_only": "cyan",
    "benign": "dim",
}
MARK = {"same": " ", "changed": "~", "downstream": ".", "ref_only": "-", "port_only": "+", "benign": "="}
FINDING_STATUSES = {"changed", "ref_only", "port_only"}
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "note": "dim"}


class IRDiffView(Vertical):
    """Shows one IRDiffReport."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._report = None
        self._label = ""
        self.differences_only = False
        self._row_keys: list[str] = []  # table order
        self._finding_rows: list[int] = []  # table indexes of differing rows
        self._by_line: dict[tuple[str, int], int] = {}  # ("ref"|"port", line) -> table index
        self._findings: list = []

    def compose(self):
        yield Static("", id="ir-summary")
        yield DataTable(id="ir-findings", cursor_type="row", zebra_stripes=True)
        yield DataTable(id="ir-rows", cursor_type="row")

    def on_mount(self) -> None:
        f = self.query_one("#ir-findings", DataTable)
        for key, label in (("sev", "severity"), ("check", "check"), ("ref", "ref line"), ("port", "port line"),
                           ("msg", "finding (enter: full text)")):
            f.add_column(label, key=key)
        self._columns(self.size.width or 160)

    ROW_COLUMNS = (("rl", "ref", 4), ("rt", "reference", 0), ("m", "", 1), ("pl", "port", 4),
                   ("pt", "port (cutile-rs)", 0), ("cat", "category", 12))  # 0: half of what is left each

    def _columns(self, width: int) -> None:
        """Fixed widths that fit the view: both sides always show (an IR line is often wider than the screen; with
        auto widths the port side sat off screen, and a port-only row looked empty); enter shows a whole row."""
        self._fitted = width
        fixed = sum(w for _, _, w in self.ROW_COLUMNS) + 2 * len(self.ROW_COLUMNS) + 2  # cell padding, scrollbar
        text = max(16, (width - fixed) // 2)
        t = self.query_one("#ir-rows", DataTable)
        t.clear(columns=True)
        for key, label, w in self.ROW_COLUMNS:
            t.add_column(label, key=key, width=w or text)

    def on_resize(self, event) -> None:
        if event.size.width and event.size.width != getattr(self, "_fitted", None):
            self._columns(event.size.width)
            self._redraw()

    def show_message(self, text: str) -> None:
        self._report = None
        self.query_one("#ir-summary", Static).update(text)
        self.query_one("#ir-findings", DataTable).clear()
        self.query_one("#ir-rows", DataTable).clear()
        self._finding_rows, self._row_keys = [], []

    def show_report(self, report, label: str) -> None:
        """Render `report` (tileport.validators.tileir.diff.IRDiffReport)."""
        self._report, self._label = report, label
        self._redraw()

    def _redraw(self) -> None:
        report = self._report
        if report is None:
            return
        head = Text()
        head.append(f"{self._label}: ", style="bold")
        head.append(report.verdict.value, style="green" if report.verdict.value != "FAIL_FIXABLE" else "bold red")
        self._findings = report.findings
        shown = FINDING_STATUSES | {"downstream"}
        if self.differences_only and not any(r.status.value in shown for r in report.rows):
            shown = shown | {"benign"}  # a pass with notes: its benign rows are what the notes are about
        head.append(f"  {len(self._findings)} finding(s)  n/N: next/previous difference  d: differences only "
                    f"({'on' if self.differences_only else 'off'})", style="dim")
        if self.differences_only and "benign" in shown:
            head.append("  no differing rows: the benign ones (=) shown", style="yellow")
        self.query_one("#ir-summary", Static).update(head)
        f = self.query_one("#ir-findings", DataTable)
        f.clear()
        for i, x in enumerate(self._findings):
            f.add_row(Text(x.severity.value, style=SEVERITY_STYLE.get(x.severity.value, "")), Text(x.check),
                      str(x.ref_line or ""), str(x.port_line or ""), Text(x.message), key=str(i))
        t = self.query_one("#ir-rows", DataTable)
        t.clear()
        self._finding_rows, self._row_keys, self._by_line = [], [], {}
        entry = None
        for n, row in enumerate(report.rows):
            status = row.status.value
            if self.differences_only and status not in shown:
                continue
            if row.entry != entry:
                entry = row.entry
                t.add_row("", Text(f"== {entry}", style="bold"), "", "", "", "", key=f"entry-{n}")
                self._row_keys.append(f"entry-{n}")
            style = STATUS_STYLE.get(status, "")
            indent = "  " * max(0, row.depth - 1)
            index = len(self._row_keys)
            if status in FINDING_STATUSES:
                self._finding_rows.append(index)
            if row.ref_line is not None:
                self._by_line[("ref", row.ref_line)] = index
            if row.port_line is not None:
                self._by_line[("port", row.port_line)] = index
            t.add_row("" if row.ref_line is None else str(row.ref_line), Text(indent + (row.ref_text or ""), style=style),
                      Text(MARK.get(status, "?"), style=style), "" if row.port_line is None else str(row.port_line),
                      Text(indent + (row.port_text or ""), style=style), Text(row.category or "", style=style),
                      key=str(n))
            self._row_keys.append(str(n))

    # --- navigation -------------------------------------------------------------------------------
    def jump(self, step: int) -> None:
        t = self.query_one("#ir-rows", DataTable)
        if not self._finding_rows:
            self.notify("no differing rows in this diff")
            return
        here = t.cursor_row
        if step > 0:
            nxt = next((i for i in self._finding_rows if i > here), self._finding_rows[0])
        else:
            nxt = next((i for i in reversed(self._finding_rows) if i < here), self._finding_rows[-1])
        t.move_cursor(row=nxt, animate=False)
        t.focus()

    def toggle_differences(self) -> None:
        self.differences_only = not self.differences_only
        self._redraw()

    def row_of_finding(self, i: int) -> int | None:
        x = self._findings[i] if 0 <= i < len(self._findings) else None
        if x is None:
            return None
        for side, line in (("ref", x.ref_line), ("port", x.port_line)):
            if line is not None and (side, line) in self._by_line:
                return self._by_line[(side, line)]
        return None

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "ir-findings" and event.row_key.value is not None:
            row = self.row_of_finding(int(event.row_key.value))
            if row is not None:
                self.query_one("#ir-rows", DataTable).move_cursor(row=row, animate=False)

    def finding_text(self, i: int) -> str:
        x = self._findings[i]
        return (f"{x.severity.value} {x.check} [{x.category}]\n{x.message}\n\nreference line {x.ref_line}: {x.ref}\n"
                f"port line {x.port_line}: {x.port}\nconsequence: {x.consequence}")

    def row_text(self, key: str) -> str | None:
        if self._report is None or not key.isdigit():
            return None
        r = self._report.rows[int(key)]
        return (f"{r.entry}  [{r.status.value}{', ' + r.category if r.category else ''}]\n\n"
                f"reference line {r.ref_line}:\n  {r.ref_text or '-'}\n\nport line {r.port_line}:\n  {r.port_text or '-'}")
