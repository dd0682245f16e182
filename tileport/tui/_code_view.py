"""The code view: kernel.rs at the conversion's HEAD beside the Python op (highlighted, entry <-> kernel), the
branch's diff against its base, or the diff between the highlighted attempt and the one before it (`v` cycles)."""

from __future__ import annotations

from rich.syntax import Syntax
from rich.text import Text
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Static

from tileport.tui.code import CodeSides

MODES = ("side by side", "branch diff vs base", "diff between attempts")
THEME = "ansi_dark"


def _syntax(code: str, lexer: str, line: int | None = None) -> Syntax:
    return Syntax(code, lexer, theme=THEME, line_numbers=True, word_wrap=False,
                  highlight_lines={line} if line else None)


class CodeView(Vertical):
    def compose(self):
        yield Static("", id="code-head")
        with Horizontal(id="code-sides"):
            with VerticalScroll(id="code-left"):
                yield Static("", id="code-left-text")
            with VerticalScroll(id="code-right"):
                yield Static("", id="code-right-text")

    def _set(self, head: Text, left, right=None) -> None:
        self.query_one("#code-head", Static).update(head)
        self.query_one("#code-left-text", Static).update(left)
        self.query_one("#code-right-text", Static).update(right if right is not None else "")
        self.query_one("#code-right").display = right is not None

    def show_sides(self, sides: CodeSides, op: str) -> None:
        head = Text()
        head.append(f"[{MODES[0]}] ", style="bold")
        head.append(f"kernel.rs at {sides.commit[:10]} | {op}.py   (v: next view, e: edit kernel.rs)\n", style="dim")
        for m in sides.entries:
            head.append(m.text(op) + "\n")
        if not sides.entries:
            head.append("no spec.json entries yet: stage B writes kernel.rs and spec.json\n", style="dim")
        first = sides.entries[0] if sides.entries else None
        rust = (_syntax(sides.rust, "rust", first.rust_line if first else None) if sides.rust is not None
                else Text("no kernel.rs at this commit (stage B writes it)", style="dim"))
        py = (_syntax(sides.python, "python", first.python_line if first else None) if sides.python is not None
              else Text("the Python op file is not readable", style="dim"))
        self._set(head, rust, py)
        if first is not None:  # open at the first entry and its kernel (at 80x24 only a few lines show)
            self.call_after_refresh(self._scroll_to, first.rust_line, first.python_line)

    def _scroll_to(self, rust_line: int | None, python_line: int | None) -> None:
        for box, line in (("#code-left", rust_line), ("#code-right", python_line)):
            if line:
                self.query_one(box, VerticalScroll).scroll_to(y=max(0, line - 3), animate=False)

    def show_diff(self, mode: int, title: str, diff: str) -> None:
        head = Text()
        head.append(f"[{MODES[mode]}] ", style="bold")
        head.append(title + "   (v: next view)", style="dim")
        body = _syntax(diff, "diff") if diff.strip() else Text("no differences", style="dim")
        self._set(head, body)

    def show_message(self, text: str) -> None:
        self._set(Text(text, style="dim"), Text(""))
