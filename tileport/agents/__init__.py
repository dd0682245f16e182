"""Stage agents and the orchestrator; routing table and caps are data."""
