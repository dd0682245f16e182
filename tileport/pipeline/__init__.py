"""The pipeline's spine: the runner that drives a conversion through stages A-E, the router that decides the next
stage from the recorded runs, a conversion's control (hold, stop), the stage context, the stages themselves, and the
pack / ingest operations for a GPU elsewhere. It uses a model only through `tileport.agents` (the writers)."""
