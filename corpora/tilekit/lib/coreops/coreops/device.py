"""Device arrays on cuda.core buffers, exposing __cuda_array_interface__ (no torch, no CuPy)."""
import numpy as np
from cuda.core.experimental import Device

_dev = None


def device():
    global _dev
    if _dev is None:
        _dev = Device()
        _dev.set_current()
    return _dev


class DeviceArray:
    def __init__(self, shape, dtype, stream=None):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        nbytes = max(1, int(np.prod(self.shape)) * self.dtype.itemsize)
        self.stream = stream or device().create_stream()
        self.buffer = device().memory_resource.allocate(nbytes, stream=self.stream)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (int(self.buffer.handle), False),
                "version": 3, "strides": None}

    @classmethod
    def from_host(cls, a, stream=None):
        out = cls(a.shape, a.dtype, stream)
        out.buffer.copy_from(np.ascontiguousarray(a), stream=out.stream)
        return out

    def to_host(self):
        host = np.empty(self.shape, self.dtype)
        self.buffer.copy_to(host, stream=self.stream)
        self.stream.sync()
        return host


class PackedWeights:
    """A weight matrix exchanged by DLPack only (no __cuda_array_interface__)."""

    def __init__(self, arr: DeviceArray):
        self._arr = arr
        self.shape, self.dtype = arr.shape, arr.dtype

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0

    def __dlpack__(self, stream=None, **kw):
        raise NotImplementedError("exported through the array's capsule by the runtime")
