"""cuTile Python kernels compiled by cuda-tile for the Tile IR diff tests (reference/mutant pairs)."""
