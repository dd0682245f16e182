"""Small modal screens: the help screen and the one-line reason prompt (reject, override)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Markdown, Static

HELP = """\
# tileport dashboard

Everything shown here is read from the store; another dashboard or `tileport run` on the same store
shows up live. Keys:

| key | where | what |
|---|---|---|
| enter | conversions | open the conversion |
| s | anywhere | start / resume the selected conversion |
| x | anywhere | stop it (its state stays in the store; resume later) |
| r | conversion | rerun a stage (asks which) |
| a / j | conversion | approve / reject the current commit (reject asks for a reason) |
| m | conversion | merge (only after every gate passed on this commit and it is approved) |
| e | conversion | open kernel.rs in `$EDITOR` |
| o | conversion | open the worktree in `$SHELL` |
| l | conversion | open the full log in `$PAGER` |
| 1-6 | conversion | timeline, commands, artifacts, log, IR diff, performance |
| n / N | IR diff | next / previous differing row |
| ctrl+p | anywhere | command palette |
| escape | conversion | back to the list |
| q | anywhere | quit (running work keeps its state in the store) |

An action that is not possible says why at the bottom of the screen instead of doing nothing.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Markdown(HELP)


class ReasonScreen(ModalScreen[str | None]):
    """Ask for one line (a reject or override reason); escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, prompt: str) -> None:
        super().__init__()
        self.prompt = prompt

    def compose(self) -> ComposeResult:
        with Vertical(id="reason-box"):
            yield Static(self.prompt)
            yield Input(placeholder="reason (required)", id="reason")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if not value:
            self.notify("a reason is required", severity="warning")
            return
        self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)
