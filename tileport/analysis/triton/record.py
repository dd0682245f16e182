"""The reference choice as the store holds it: in the newest stage-A run's typed details (records.AnalyzeDetails,
read by status and the dashboard, which never re-read analysis.json)."""

from __future__ import annotations

from typing import Sequence

from tileport.records import AnalyzeDetails, StageDetails
from tileport.store.queries import StageRunRow


def reference_line(details: StageDetails) -> str | None:
    """One A run's reference choice in words (e.g. "reference cuTile Python (... pending a GPU)"), with the IR
    gate's gap when a Triton reference has no Tile IR; None for an op without a Triton twin."""
    if not isinstance(details, AnalyzeDetails) or not details.reference_summary:
        return None
    text = details.reference_summary
    gap = details.reference.tile_ir_gap if details.reference else None
    if gap and gap not in text:
        text += f"; IR gate: {gap}" if details.reference.triton_referenced else f"; Triton side: {gap}"
    return text


def reference_summary(runs: Sequence[StageRunRow]) -> str | None:
    """The newest stage-A run's reference line (see `reference_line`); None when there is none."""
    newest = next((r for r in reversed(runs) if r.stage == "A"), None)
    return reference_line(newest.details) if newest is not None else None
