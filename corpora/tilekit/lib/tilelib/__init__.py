"""tilelib: fused transformer ops on cuTile."""
from .ops.softmax import Softmax, softmax  # noqa: F401
