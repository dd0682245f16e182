"""A stage run's model transcript (tab 8): every message of the conversation in order (system prompt, user message,
the model's replies with their tool calls and arguments, each tool's output), then each model call's figures."""

from __future__ import annotations

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import RichLog, Static

from tileport.agents.transcripts import tool_arguments

ROLE_STYLE = {"system": "magenta", "user": "cyan", "assistant": "green", "tool": "yellow"}


def transcript_text(t) -> Text:
    """The whole transcript (tileport.agents.loop.Transcript) as one readable text."""
    out = Text()
    tokens = sum(c.usage.prompt_tokens + c.usage.completion_tokens for c in t.calls)
    out.append(f"prompt {t.prompt}  context {t.max_model_len} tokens  {len(t.messages)} messages  "
               f"{len(t.calls)} model calls  {tokens} tokens\n", style="bold")
    for i, m in enumerate(t.messages):
        role = str(m.get("role", "?"))
        out.append(f"\n── {i + 1} {role}", style=f"bold {ROLE_STYLE.get(role, '')}")
        if m.get("tool_call_id"):
            out.append(f" (output of call {m['tool_call_id']})", style="dim")
        out.append("\n")
        if m.get("content"):
            out.append(str(m["content"]).rstrip() + "\n")
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            out.append(f"→ {fn.get('name', '?')}", style="bold green")
            out.append(f" (call {call.get('id', '?')})\n", style="dim")
            args = tool_arguments(str(fn.get("arguments") or ""))
            if isinstance(args, str):
                out.append(args.rstrip() + "\n")
            for name, value in (args.items() if isinstance(args, dict) else ()):
                text = value if isinstance(value, str) else repr(value)
                out.append(f"  {name}:", style="bold")
                out.append(("\n" + text.rstrip() if "\n" in text else f" {text}") + "\n")
    if t.calls:
        out.append("\n── model calls\n", style="bold")
    for k, c in enumerate(t.calls, start=1):
        line = (f"{k}. {c.kind} after {c.n_messages} messages: {c.usage.prompt_tokens} in + "
                f"{c.usage.completion_tokens} out tokens, {c.requests} request{'s' * (c.requests != 1)}, "
                f"{c.seconds:.1f} s, finish {c.finish_reason or '-'}")
        out.append(line + "\n", style="red" if c.fault else "")
        if c.fault:
            out.append(f"   fault: {c.fault}\n", style="red")
        for note in c.notes:
            out.append(f"   {note}\n", style="dim")
    return out


class TranscriptView(Vertical):
    def compose(self):
        yield Static("", id="transcript-of", classes="run-of")
        yield RichLog(id="transcript-log", wrap=True, max_lines=None)

    def show(self, header: str, transcript=None, message: str = "") -> None:
        self.query_one("#transcript-of", Static).update(Text(header, style="dim"))
        log = self.query_one("#transcript-log", RichLog)
        log.clear()
        log.write(transcript_text(transcript) if transcript is not None else Text(message, style="dim"))
        log.scroll_home(animate=False)
