"""The whole text of a table row: one modal for every DataTable of the dashboard.

A table cuts what does not fit its column (a summary, the tool's argv, an artifact path, a configuration's shape);
the row's detail pane shows it whole, scrollable. `RowDetails` is mixed into a screen: enter (or the screen's own
key, where enter already does something) on any of its tables' rows opens the pane with `row_detail`'s text for
that table, or, for a table with nothing more to say, every column's label and its full cell text.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static


def row_text(table: DataTable, index: int) -> str:
    """Every column's label and its whole cell (the table draws it cut to the column's width)."""
    if not 0 <= index < table.row_count:
        return ""
    cells = table.get_row_at(index)
    labels = [str(c.label) for c in table.ordered_columns]
    width = max((len(label) for label in labels), default=0)
    return "\n".join(f"{label:>{width}}  {cell}" for label, cell in zip(labels, cells))


class DetailScreen(ModalScreen[None]):
    """A row's whole text, wrapped and scrollable (up/down, page keys, the mouse); escape closes."""

    BINDINGS = [Binding("escape,enter,q,space", "dismiss", "close")]

    def __init__(self, text: str, title: str = "") -> None:
        super().__init__()
        self.text = text
        self.title_text = title

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail-box"):
            if self.title_text:
                yield Static(self.title_text, id="detail-title", markup=False)
            yield Static(self.text, id="detail-text", markup=False)
            yield Static("escape: close   up/down, page up/down: scroll", id="detail-keys")

    def on_mount(self) -> None:
        self.query_one("#detail-box").focus()


class RowDetails:
    """Mixin for a Screen: its tables' rows open in a DetailScreen.

    `row_detail(table, key, index)` returns the text for a row of one of its tables (None: the generic listing of
    every column); `on_row_selected(table, key, index)` may claim enter for a table that does something else with
    it (return True), such as the list of conversions, whose enter opens the conversion.
    """

    def row_detail(self, table: DataTable, key: str | None, index: int) -> str | None:
        return None

    def on_row_selected(self, table: DataTable, key: str | None, index: int) -> bool:
        return False

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if not self.on_row_selected(event.data_table, event.row_key.value, event.cursor_row):
            self.show_row_detail(event.data_table)

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        """A table with a cell cursor: enter opens the cell's row the same way."""
        if not self.on_row_selected(event.data_table, event.cell_key.row_key.value, event.coordinate.row):
            self.show_row_detail(event.data_table)

    def show_row_detail(self, table: DataTable | None = None) -> None:
        """The detail pane of `table`'s highlighted row (default: the focused table)."""
        table = table if table is not None else self.app.focused  # type: ignore[attr-defined]
        if not isinstance(table, DataTable) or not table.row_count:
            return
        index = table.cursor_row
        key = table.coordinate_to_cell_key((index, 0)).row_key.value if table.columns else None
        text = self.row_detail(table, key, index) or row_text(table, index)
        if text:
            self.app.push_screen(DetailScreen(text))  # type: ignore[attr-defined]
