"""The path prompt of `i` (ingest results…): one line, prefilled with the likeliest results.json; escape cancels."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class PathScreen(ModalScreen[str | None]):
    """Ask for a file path, offering `value` (edit it or press enter); enter on an empty line asks again."""

    DEFAULT_CSS = """
    PathScreen { align: center middle; }
    #path-box { width: 110; max-width: 96%; height: auto; border: round $warning; background: $surface;
                padding: 0 1; }
    #path-hint { color: $text-muted; }
    """
    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, prompt: str, value: str = "", hint: str = "enter: use it   escape: cancel") -> None:
        super().__init__()
        self.prompt, self.value, self.hint = prompt, value, hint

    def compose(self) -> ComposeResult:
        with Vertical(id="path-box"):
            yield Static(self.prompt, id="path-prompt", markup=False)
            yield Input(value=self.value, placeholder="path/to/results.json", id="path")
            yield Static(self.hint, id="path-hint", markup=False)

    def on_mount(self) -> None:
        self.query_one("#path", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if not value:
            self.notify("type the path of a results.json, or escape", severity="warning")
            return
        self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)
