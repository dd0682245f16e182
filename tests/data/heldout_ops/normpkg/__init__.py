from .layernorm import layer_norm
from .rmsnorm import rms_norm

__all__ = ["layer_norm", "rms_norm"]
