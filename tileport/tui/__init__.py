"""Textual dashboard: renders store state, owns no logic."""
