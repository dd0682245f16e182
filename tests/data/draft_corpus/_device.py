"""Device helpers shared by several corpus kernels (cuTile `@ct.function`s and plain helpers)."""
import cuda.tile as ct

from ._common import GELU_COEF, SQRT_2_OVER_PI


@ct.function
def gelu_tanh(x):
    inner = SQRT_2_OVER_PI * (x + GELU_COEF * x * x * x)
    return 0.5 * x * (1.0 + ct.tanh(inner))


def sigmoid(x):
    return 1.0 / (1.0 + ct.exp(-x))
