"""The main screen: the toolchain line and the table of conversions."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from tileport.tui._conversions_table import ConversionsTable, detail_text
from tileport.tui._detail import RowDetails
from rich.text import Text

from tileport.tui.view import conversion_rows, next_step


class MainScreen(RowDetails, Screen):
    BINDINGS = [
        Binding("enter", "open", "open", show=True),
        Binding("space", "detail", "details", show=True),
        Binding("r", "app.rerun", "rerun", show=False),
        Binding("a", "app.approve", "approve", show=False),
        Binding("j", "app.reject", "reject", show=False),
        Binding("m", "app.merge", "merge", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static(self.app.toolchain_text, id="toolchain")
        yield ConversionsTable(self.app.gate, self.app.config.perf.config_max, id="conversions")
        yield Static("", id="next-step")
        yield Static("", id="main-status")
        yield Footer()

    def on_mount(self) -> None:
        self.reload()
        self.query_one(ConversionsTable).focus()
        self.set_interval(1.0, self._tick_running)

    def _tick_running(self) -> None:
        """Running rows show their stage's elapsed time: re-read only those, once a second."""
        table = self.query_one(ConversionsTable)
        ids = table.running_ids()
        if ids:
            table.upsert(conversion_rows(self.app.store, self.app.caps, ids))

    def show_toolchain(self, text: str) -> None:
        self.query_one("#toolchain", Static).update(text)

    FIRST_PAGE = 100  # rows shown before the first paint; the rest follow in chunks, so a big store opens fast
    CHUNK = 250

    def reload(self) -> None:
        table = self.query_one(ConversionsTable)
        rows = conversion_rows(self.app.store, self.app.caps)
        table.upsert(rows[: self.FIRST_PAGE])
        self._status(len(rows))
        self.show_next_step(rows)
        self._pending = rows[self.FIRST_PAGE:]
        if self._pending:
            self.call_after_refresh(self._load_more)

    def _load_more(self) -> None:
        chunk, self._pending = self._pending[: self.CHUNK], self._pending[self.CHUNK:]
        # rows changed since the snapshot are re-read by store_changed; upsert keeps the newest cells
        self.query_one(ConversionsTable).upsert(chunk)
        if self._pending:
            self.call_after_refresh(self._load_more)

    def _status(self, n: int) -> None:
        mode = "  [read-only]" if self.app.readonly else ""
        self.query_one("#main-status", Static).update(
            f"{n} conversion{'s' * (n != 1)} in {self.app.store_path}{mode}   enter: open  space: details  ?: help  ctrl+p: commands")

    def store_changed(self, touched: set, events: list[dict]) -> None:
        ids = [i for i in touched if i is not None]
        if not ids:
            return
        table = self.query_one(ConversionsTable)
        table.upsert(conversion_rows(self.app.store, self.app.caps, ids))
        self._status(table.row_count)
        self.show_next_step()

    def selected_id(self) -> int | None:
        return self.query_one(ConversionsTable).selected_id()

    def show_next_step(self, rows=None) -> None:
        app = self.app
        if rows is None:
            rows = conversion_rows(app.store, app.caps) if self.query_one(ConversionsTable).row_count <= 2000 else []
        text = next_step(rows, list(app.config.targets), app.gpu_detail, app.config.gpu.command_prefix)
        box = self.query_one("#next-step", Static)
        box.update(Text(text, style="bold magenta") if text else "")
        box.display = bool(text)

    # enter opens the conversion; space opens the row's whole text (tileport.tui._detail)
    def on_row_selected(self, table: DataTable, key: str | None, index: int) -> bool:
        if table.id == "conversions" and key is not None:
            self.app.open_conversion(int(key))
        return True

    def row_detail(self, table: DataTable, key: str | None, index: int) -> str | None:
        rows = conversion_rows(self.app.store, self.app.caps, [int(key)]) if key and key.isdigit() else []
        return detail_text(rows[0]) if rows else None

    def action_detail(self) -> None:
        self.show_row_detail(self.query_one(ConversionsTable))

    def action_open(self) -> None:
        cid = self.selected_id()
        if cid is not None:
            self.app.open_conversion(cid)
