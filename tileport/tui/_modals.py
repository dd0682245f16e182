"""Small modal screens: the help screen and the one-line reason prompt (reject, override)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Markdown, Static

HELP = """\
# tileport dashboard

Everything shown here is read from the store; another dashboard or `tileport run` on the same store
shows up live. Keys:

| key | where | what |
|---|---|---|
| enter | conversions | open the conversion |
| space | conversions | the row's whole text: op path, branch, worktree, newest summary |
| enter | a conversion's tables | the row's whole text: summary and details, the tool's own argv, the artifact path, a configuration's samples and launch |
| left / right | tables | scroll sideways |
| s | anywhere | start / resume the selected conversion (an edit committed without B's gates is gated first) |
| x | anywhere | stop it now: its running tool is killed, the attempt recorded as interrupted (resume with s) |
| c | anywhere | convert another op: the path of your own cuTile Python file |
| u | anywhere | the end-of-run summary (counts, time, what needs a person) |
| r | conversion | rerun a stage (asks which) |
| a / j | conversion | approve / reject the current commit (reject asks for a reason) |
| m | conversion | merge (only after every gate passed on this commit and it is approved) |
| e | conversion | edit the worktree's kernel.rs in `$EDITOR` (not while a stage runs), then commit it as a human attempt and re-run B's gates on it (y), or commit only (c) |
| 7, v | conversion | code: kernel.rs beside the Python op; v: branch diff, diff between attempts |
| g | conversion | pack the port for a GPU host (a cargo build); the Performance tab shows what to run there |
| i | conversion | ingest the results.json a GPU host wrote: stages D and E, for the current commit only |
| o | conversion | open the worktree in `$SHELL` |
| l | conversion | open the full log in `$PAGER` |
| 1-6 | conversion | timeline, commands, artifacts, log, IR diff, performance |
| 8 | conversion | the model transcript of the stage run picked in the timeline |
| n / N | IR diff | next / previous differing row |
| ctrl+p | anywhere | command palette |
| escape | conversion | back to the list |
| q, ctrl+c | anywhere | quit; with work running it asks: stop it, leave it running in the background, or cancel |

An action that is not possible says why at the bottom of the screen instead of doing nothing.
"""


class HelpScreen(ModalScreen[None]):
    """Scrolls (up/down, page keys, the mouse) when the terminal is shorter than the help."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Markdown(HELP)

    def on_mount(self) -> None:
        self.query_one("#help-box").focus()


class ReasonScreen(ModalScreen[str | None]):
    """Ask for one line (a reject or override reason); escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, prompt: str, placeholder: str = "reason (required)", required: str = "a reason is required",
                 ) -> None:
        super().__init__()
        self.prompt = prompt
        self.placeholder = placeholder
        self.required = required

    def compose(self) -> ComposeResult:
        with Vertical(id="reason-box"):
            yield Static(self.prompt)
            yield Input(placeholder=self.placeholder, id="reason")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if not value:
            self.notify(self.required, severity="warning")
            return
        self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class QuitScreen(ModalScreen[str | None]):
    """`q` (or ctrl+c) while this dashboard drives conversions: stop them, leave them running, or cancel."""

    BINDINGS = [Binding("escape,c", "choose('cancel')", "cancel"), Binding("s", "choose('stop')", "stop them"),
                Binding("b", "choose('background')", "leave running"),
                Binding("ctrl+c", "choose('stop')", "stop them", priority=True, show=False)]

    def __init__(self, running: list[str], queued: int = 0) -> None:
        super().__init__()
        self.running = running
        self.queued = queued

    def _texts(self) -> tuple[str, str, str]:
        n, q = len(self.running), self.queued
        more = f" ({q} more queued)" if q and n else ""
        title = f"{n} conversion{'s' * (n != 1)} running here{more}:" if n else \
            f"{q} conversion{'s' * (q != 1)} queued here, none running yet:" if q else "nothing runs here any more:"
        queued = f"; the {q} queued do not start" if q else ""
        listing = "\n".join(f"  {r}" for r in self.running[:8]) + (f"\n  ... and {n - 8} more" if n > 8 else "")
        helps = (f"s  stop them: their tools are killed now, each attempt recorded as interrupted{queued} "
                 "(resume later with s or `tileport run --resume ID`)\n"
                 "b  leave them running in the background: a detached `tileport` process resumes them "
                 f"{'and runs the queued ones ' if q else ''}(the running attempt starts again); "
                 "`tileport stop ID` stops one\n"
                 "esc  cancel: back to the dashboard   (ctrl+c again: stop them)")
        return title, listing, helps

    def compose(self) -> ComposeResult:
        title, listing, helps = self._texts()
        with Vertical(id="quit-box"):
            yield Static(title, id="quit-title")
            yield Static(listing, id="quit-list")
            yield Static(helps, id="quit-help")
            with Horizontal(id="quit-buttons"):
                yield Button("Stop them (s)", id="stop", variant="error")
                yield Button("Leave running (b)", id="background", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    def show(self, running: list[str], queued: int) -> None:
        """What runs here now (a conversion started or ended while the dialog was open): the choice acts on that."""
        if (running, queued) == (self.running, self.queued):
            return
        self.running, self.queued = running, queued
        for wid, text in zip(("#quit-title", "#quit-list", "#quit-help"), self._texts()):
            self.query_one(wid, Static).update(text)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)


class StoppingScreen(ModalScreen[None]):
    """Shown while quitting waits for stopped conversions to record their interrupted attempts."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box"):
            yield Static(self.text, id="stopping-text")


class SummaryScreen(ModalScreen[None]):
    """The end of a run: counts by status and verdict, how long, and what needs a person."""

    BINDINGS = [Binding("escape,enter,q,u", "dismiss", "close")]

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="summary-box"):
            yield Static(self.text, id="summary-text", markup=False)
            yield Static("escape: close   u: show again", id="summary-keys")

