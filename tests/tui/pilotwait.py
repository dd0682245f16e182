"""Waiting for the dashboard in a Textual pilot, shared by its tests."""

from __future__ import annotations


async def settle(app, pilot, rounds: int = 3) -> None:
    """Wait until what a key started has finished: the workers it ran (a tab's lazy mount, a code or IR-diff load)
    and the messages they posted. A single `pilot.pause()` is one frame, which a loaded machine can outrun."""
    for _ in range(rounds):
        await app.workers.wait_for_complete()
        await pilot.pause(0.05)
