"""Rounds of the caps: a person's edit starts a new one. The one rule the router's replay (pipeline/runner.py) and the
attempt counters every view shows (store/queries.py) both apply, so a counter never disagrees with the router."""

from __future__ import annotations

from typing import Sequence

HUMAN_EDIT = "human edit"  # the `source` of a B run judging a person's edit; the caps count afresh from it


def round_start(sources: Sequence[str | None]) -> int:
    """Where the current round begins in a conversion's runs, oldest first, given by each run's details `source`:
    at the newest run that judged a person's edit (its gates are the round's first B attempt), else at the first."""
    return max((i for i, s in enumerate(sources) if s == HUMAN_EDIT), default=0)
