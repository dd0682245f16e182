"""tilekit: a few fused ops in cuTile Python."""
from .config import TileConfig, DEFAULT_CONFIG  # noqa: F401
