from dataclasses import dataclass


@dataclass(frozen=True)
class NormConfig:
    TILE_M: int
    TILE_N: int
    occupancy: int = 1


DEFAULT_CONFIGS = {
    "small": NormConfig(TILE_M=4, TILE_N=256),
    "large": NormConfig(TILE_M=1, TILE_N=1024, occupancy=2),
}


def pick_config(n: int) -> NormConfig:
    return DEFAULT_CONFIGS["small" if n <= 256 else "large"]
