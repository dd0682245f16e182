"""Model transcripts as evidence: every request and reply of a stage's model calls, written beside the stage's other
run files and pinned by sha256 as an artifact of the stage run (the dashboard's log reads it from there)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tileport.records import ArtifactRecord

if TYPE_CHECKING:
    from tileport.agents.loop import Transcript


def keep_transcript(paths, label: str, transcript) -> list[ArtifactRecord]:
    """`runs/<label>.transcript.json` (label: "B-2", "C-1"); [] when no model was asked."""
    if transcript is None:
        return []
    f = paths.runs / f"{label}.transcript.json"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(transcript.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return [ArtifactRecord.of("transcript", f)]


def load_transcript(path) -> "Transcript | None":
    """A kept `*.transcript.json` read back (the dashboard's transcript view); None when it is missing or unreadable."""
    from pydantic import ValidationError

    from tileport.agents.loop import Transcript

    try:
        return Transcript.model_validate_json(open(path, encoding="utf-8").read())
    except (OSError, ValueError, ValidationError):
        return None


def tool_arguments(raw: str) -> dict | str:
    """A tool call's arguments as the model sent them, decoded when they are a JSON object (else the raw text)."""
    import json

    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return raw
    return value if isinstance(value, dict) else raw
