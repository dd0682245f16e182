"""tileport: port cuTile Python kernels to cuTile Rust; compilers, Tile IR, tests and device time judge."""

__version__ = "0.1.0"
