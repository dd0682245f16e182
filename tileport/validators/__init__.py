"""Deterministic judges (no model): Tile IR parsing and diff, compile, correctness, performance."""
