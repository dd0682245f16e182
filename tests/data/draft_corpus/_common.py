"""Constants and small host helpers the corpus ops import (the way libraries keep them in a utils module)."""
import math
from dataclasses import dataclass

LOG2E = math.log2(math.e)
INV_LN2 = 1.0 / math.log(2.0)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_COEF = 0.044715
NEG_INF = -math.inf
EPS_DEFAULT = 1e-6


@dataclass(frozen=True)
class TileConfig:
    tile_m: int
    tile_n: int
    tile_k: int = 32
    occupancy: int = 1


def next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length() if n > 1 else 1


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b
