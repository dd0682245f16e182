import functools
import math

import torch
import cuda.tile as ct


def next_power_of_2(n: int) -> int:
    return 1 << (int(n) - 1).bit_length()


def cdiv(a, b):
    return (a + b - 1) // b


def current_stream():
    return torch.cuda.current_stream()


class LaunchSpec:
    """Grid and kernel, launched on the current stream."""

    def __init__(self, kernel, grid):
        self.kernel = kernel
        self.grid = tuple(grid) + (1,) * (3 - len(grid))

    def __call__(self, *args):
        return _launch(self.grid, self.kernel, args)


# bound once at import: every op launches through this partial of ct.launch
_default_launch = functools.partial(ct.launch)


def _launch(grid, kernel, args):
    return _default_launch(current_stream(), grid, kernel, args)


def warps_for(n: int) -> int:
    return max(1, min(8, int(math.log2(max(n, 32))) - 4))
