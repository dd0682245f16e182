"""Command palette (ctrl+p): every action of the current screen, and "open conversion N"."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

ACTIONS = (
    ("start", "Start / resume the selected conversion"),
    ("stop", "Stop the selected conversion"),
    ("rerun", "Rerun a stage of the selected conversion"),
    ("approve", "Approve the current commit"),
    ("reject", "Reject the current commit (with a reason)"),
    ("merge", "Merge the approved conversion"),
    ("edit", "Open kernel.rs in $EDITOR"),
    ("pager", "Open the full log in $PAGER"),
    ("help", "Show keys and help"),
)
# called directly, not through run_action: a read-only dashboard then says why instead of doing nothing
GPU_ACTIONS = (
    ("ingest", "Ingest results… (a GPU host's results.json for the selected conversion)"),
    ("pack_port", "GPU pack: build the selected conversion's pack directory for a GPU host"),
)


class TileportCommands(Provider):
    def _commands(self):
        app = self.app
        for action, text in ACTIONS:
            yield text, partial(app.run_action, action)
        for action, text in GPU_ACTIONS:
            yield text, getattr(app, f"action_{action}")
        for row in app.palette_conversions():
            yield (f"Open conversion {row.id}: {row.op} {row.kernel} ({row.verdict or 'no verdict'})",
                   partial(app.open_conversion, row.id))

    async def discover(self) -> Hits:
        for text, cb in self._commands():
            yield DiscoveryHit(text, cb)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, cb in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), cb)
