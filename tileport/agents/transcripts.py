"""Model transcripts as evidence: every request and reply of a stage's model calls, written beside the stage's other
run files and pinned by sha256 as an artifact of the stage run (the dashboard's log reads it from there)."""

from __future__ import annotations

from tileport.records import ArtifactRecord


def keep_transcript(paths, label: str, transcript) -> list[ArtifactRecord]:
    """`runs/<label>.transcript.json` (label: "B-2", "C-1"); [] when no model was asked."""
    if transcript is None:
        return []
    f = paths.runs / f"{label}.transcript.json"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(transcript.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return [ArtifactRecord.of("transcript", f)]
