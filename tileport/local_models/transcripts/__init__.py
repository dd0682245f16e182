"""Recorded model transcripts (JSON) for ScriptedModel; a package so wheels ship them."""
