from dataclasses import dataclass

BLOCK_ROWS = 1
DEFAULT_TILE_N = 1024


@dataclass(frozen=True)
class TileConfig:
    tile_m: int = 64
    tile_n: int = 64
    num_warps_hint: int = 4


DEFAULT_CONFIG = TileConfig()
ATTN_CONFIGS = {64: TileConfig(tile_m=64, tile_n=64), 128: TileConfig(tile_m=64, tile_n=32)}
