"""The reference choice as the store holds it: in the newest stage-A run's details (read by status and the
dashboard, which never re-read analysis.json)."""

from __future__ import annotations

import json
from typing import Any


def reference_summary(runs: list[dict[str, Any]]) -> str | None:
    """The newest stage-A run's reference choice in words (e.g. "reference cuTile Python (... pending a GPU)"),
    with the IR gate's gap when a Triton reference has no Tile IR; None for an op without a Triton twin."""
    for r in reversed(runs):
        if r.get("stage") != "A":
            continue
        details = r.get("details")
        if isinstance(details, str):
            try:
                details = json.loads(details)
            except ValueError:
                return None
        if not isinstance(details, dict) or not details.get("reference_summary"):
            return None
        text = str(details["reference_summary"])
        ref = details.get("reference") or {}
        gap = ref.get("tile_ir_gap") if isinstance(ref, dict) else None
        triton_ref = isinstance(ref, dict) and any(v.get("reference") == "triton" for v in ref.get("variants") or [])
        if gap and gap not in text:
            text += f"; IR gate: {gap}" if triton_ref else f"; Triton side: {gap}"
        return text
    return None
