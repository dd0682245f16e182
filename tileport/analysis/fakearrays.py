"""Device arrays without torch on a machine without a GPU (launch capture's CPU mode; child process only).

cuTile launches take any object with `__cuda_array_interface__` or DLPack, so libraries hold their arrays in CuPy,
in `cuda.core` buffers or in classes of their own. On a machine without a GPU none of those can allocate, so capture
cannot reach a launch whose constants come from array shapes (`head_dim = q.shape[3]`). Here they are faked, on the
CPU, named as fakes:

* `cupy`: numpy under CuPy's names. Arrays are `DeviceNdarray`, a numpy array that also reports
  `__cuda_array_interface__` and a CUDA DLPack device, so shapes, dtypes, slicing, arithmetic and `astype` behave
  as CuPy's; `cupy.cuda` answers one device of the target GPU (streams, events, device attributes, runtime queries);
  `cupy.testing` comparisons record their tolerance (see testrun.Recorder) and pass;
* `cuda.core` (and `cuda.core.experimental`): `Device` (current, streams, memory resource, properties), `Buffer`
  (host memory behind an integer handle, `copy_from` / `copy_to`), `Stream`, `Event`; program compilation and raw
  launches are not faked (a one-line error names them).

`install()` puts them first on `sys.meta_path` for those names only (a real CuPy cannot allocate without a GPU
either); nothing else is faked, so any other missing module stays a one-line import error naming it.
`describe(obj)` reads dtype/shape from `__cuda_array_interface__`, DLPack objects' `shape`/`dtype`, or numpy.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

FAKED = ("cupy", "cupyx", "cuda.core")
SM_COUNT = 132
CAPABILITY = (9, 0)
DEVICE_NAME = "NVIDIA H200"
TOTAL_MEMORY = 143_771_140_096


def _np() -> Any:
    import numpy

    return numpy


def gpu_present() -> bool:
    """Whether a CUDA device answers here (the driver, through cuda-bindings; False when either is missing)."""
    try:
        from cuda.bindings import driver
    except Exception:
        return False
    try:
        err, = driver.cuInit(0)[:1]
        if int(err) != 0:
            return False
        err, count = driver.cuDeviceGetCount()
        return int(err) == 0 and count > 0
    except Exception:
        return False


def _device_ndarray() -> type:
    np = _np()

    class DeviceNdarray(np.ndarray):
        """A numpy array posing as device memory (tileport's CPU fake of a CuPy array)."""

        @property
        def __cuda_array_interface__(self) -> dict[str, Any]:
            return {"shape": tuple(self.shape), "typestr": self.dtype.str, "data": (int(self.ctypes.data), False),
                    "strides": None if self.flags.c_contiguous else tuple(self.strides), "version": 3}

        def __dlpack_device__(self) -> tuple[int, int]:
            return (2, 0)  # kDLCUDA, device 0

        def get(self, stream: Any = None, out: Any = None, **_: Any) -> Any:
            return np.array(self, copy=True).view(np.ndarray)

        def set(self, arr: Any, stream: Any = None) -> None:
            self[...] = arr

        @property
        def device(self) -> Any:
            return _CupyDevice(0)

        @property
        def data(self) -> Any:  # cupy's MemoryPointer: `.ptr`
            return types.SimpleNamespace(ptr=int(self.ctypes.data))

        def toDlpack(self) -> Any:  # noqa: N802  (CuPy's name)
            raise RuntimeError("tileport's CPU fake of cupy has no DLPack capsule; analyse on a GPU host")

    return DeviceNdarray


_ARRAY: type | None = None


def device_ndarray() -> type:
    global _ARRAY
    if _ARRAY is None:
        _ARRAY = _device_ndarray()
    return _ARRAY


def _wrap(v: Any) -> Any:
    np = _np()
    arr = device_ndarray()
    if isinstance(v, np.ndarray) and not isinstance(v, arr):
        return v.view(arr)
    if isinstance(v, tuple):
        return tuple(_wrap(x) for x in v)
    if isinstance(v, list):
        return [_wrap(x) for x in v]
    return v


def _wrapped(fn: Any, drop_dtype: bool = False) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        dtype = kwargs.pop("dtype", None) if drop_dtype else None
        out = _wrap(fn(*args, **kwargs))
        return out.astype(dtype) if dtype is not None and hasattr(out, "astype") else out
    call.__name__ = getattr(fn, "__name__", "call")
    call.__doc__ = f"tileport's CPU fake of cupy.{call.__name__} (numpy underneath)"
    return call


class _NumpyFacade(types.ModuleType):
    """A module answering each name from a numpy module, array results as DeviceNdarray."""

    def __init__(self, name: str, backing: Any, drop_dtype: bool = False):
        super().__init__(name)
        self._backing, self._drop_dtype = backing, drop_dtype

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            v = getattr(self._backing, name)
        except AttributeError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r} (tileport's CPU fake of "
                                 "cupy has numpy's names; analyse on a GPU host for the rest)") from None
        if isinstance(v, type) or not callable(v):
            return v
        return _wrapped(v, self._drop_dtype)


class _CupyDevice:
    def __init__(self, device: Any = None):
        self.id = int(device or 0)
        self.compute_capability = f"{CAPABILITY[0]}{CAPABILITY[1]}"
        self.attributes = {"MultiProcessorCount": SM_COUNT, "ComputeCapabilityMajor": CAPABILITY[0],
                           "ComputeCapabilityMinor": CAPABILITY[1], "MaxSharedMemoryPerBlockOptin": 232448}

    def use(self) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def __enter__(self) -> "_CupyDevice":
        return self

    def __exit__(self, *a: Any) -> None:
        return None

    def __int__(self) -> int:
        return self.id


class _Stream:
    """A stream of the fake device (CuPy's and cuda.core's): a handle, synchronisation, use as a context."""
    null: "_Stream"

    def __init__(self, *a: Any, **k: Any):
        self.ptr = 0
        self.handle = 0
        self.device_id = 0

    def synchronize(self) -> None:
        pass

    sync = synchronize

    def use(self) -> "_Stream":
        return self

    def record(self, event: Any = None) -> Any:
        return event if event is not None else _Event()

    def wait_event(self, event: Any) -> None:
        pass

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, 0)

    def __enter__(self) -> "_Stream":
        return self

    def __exit__(self, *a: Any) -> None:
        return None


class _Event:
    def __init__(self, *a: Any, **k: Any):
        pass

    def record(self, stream: Any = None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    sync = synchronize

    def __sub__(self, other: Any) -> float:  # cuda.core: elapsed milliseconds
        return 1.0


def _cupy() -> types.ModuleType:
    np = _np()
    cp = _NumpyFacade("cupy", np)
    cp.__file__ = __file__
    cp.__path__ = []  # a package: `import cupy.cuda` works
    cp.__tileport_fake__ = True
    cp.ndarray = device_ndarray()
    cp.asnumpy = lambda a, stream=None, **k: np.asarray(a).view(np.ndarray)
    cp.asarray = lambda a, dtype=None, **k: np.asarray(a, dtype=dtype).view(device_ndarray())
    cp.array = lambda a, dtype=None, copy=True, **k: np.array(a, dtype=dtype, copy=copy).view(device_ndarray())
    cp.get_array_module = lambda *a: cp
    cp.random = _NumpyFacade("cupy.random", np.random, drop_dtype=True)
    cp.linalg = _NumpyFacade("cupy.linalg", np.linalg)
    cp.fft = _NumpyFacade("cupy.fft", np.fft)
    cp.testing = _NumpyFacade("cupy.testing", np.testing)
    cuda = types.ModuleType("cupy.cuda")
    cuda.Stream = _Stream
    _Stream.null = _Stream()
    cuda.Event = _Event
    cuda.Device = _CupyDevice
    cuda.get_current_stream = lambda device=None: _Stream.null
    cuda.get_elapsed_time = lambda start, end: 1.0
    cuda.is_available = lambda: True
    runtime = types.ModuleType("cupy.cuda.runtime")
    runtime.getDeviceCount = lambda: 1
    runtime.getDevice = lambda: 0
    runtime.setDevice = lambda d: None
    runtime.deviceSynchronize = lambda: None
    runtime.getDeviceProperties = lambda d=0: {"name": DEVICE_NAME.encode(), "multiProcessorCount": SM_COUNT,
                                               "major": CAPABILITY[0], "minor": CAPABILITY[1],
                                               "totalGlobalMem": TOTAL_MEMORY, "sharedMemPerBlockOptin": 232448}
    runtime.memGetInfo = lambda: (TOTAL_MEMORY, TOTAL_MEMORY)
    cuda.runtime = runtime
    cuda.Device = _CupyDevice
    cp.cuda = cuda
    cp.fuse = lambda *a, **k: (a[0] if a and callable(a[0]) else (lambda f: f))
    return cp


class _Buffer:
    """cuda.core's Buffer, in host memory: `handle` is the address of its bytes."""

    def __init__(self, size: int):
        np = _np()
        self._host = np.zeros(max(1, int(size)), dtype=np.uint8)
        self.size = int(size)
        self.handle = int(self._host.ctypes.data)
        self.device_id = 0
        self.is_device_accessible = True
        self.is_host_accessible = False

    def _bytes(self, other: Any) -> Any:
        np = _np()
        if isinstance(other, _Buffer):
            return other._host
        return np.asarray(other).reshape(-1).view(np.uint8)

    def copy_from(self, src: Any, *, stream: Any = None) -> None:
        b = self._bytes(src)
        n = min(b.size, self._host.size)
        self._host[:n] = b[:n]

    def copy_to(self, dst: Any = None, *, stream: Any = None) -> Any:
        if dst is None:
            dst = _Buffer(self.size)
        out = self._bytes(dst)
        n = min(out.size, self._host.size)
        out[:n] = self._host[:n]
        return dst

    def fill(self, value: int, width: int = 1, *, stream: Any = None) -> None:
        self._host[:] = value

    def close(self, stream: Any = None) -> None:
        pass

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)


class _MemoryResource:
    is_device_accessible = True
    is_host_accessible = False
    device_id = 0

    def allocate(self, size: int, stream: Any = None) -> _Buffer:
        return _Buffer(size)

    def deallocate(self, ptr: Any, size: int, stream: Any = None) -> None:
        pass


class _CoreDevice:
    def __init__(self, device_id: int | None = None):
        self.device_id = int(device_id or 0)
        self.memory_resource = _MemoryResource()
        self.compute_capability = types.SimpleNamespace(major=CAPABILITY[0], minor=CAPABILITY[1])
        self.arch = f"{CAPABILITY[0]}{CAPABILITY[1]}"
        self.name = DEVICE_NAME
        self.uuid = "00000000-0000-0000-0000-000000000000"
        self.properties = types.SimpleNamespace(multiprocessor_count=SM_COUNT, max_shared_memory_per_block_optin=232448,
                                                total_global_memory=TOTAL_MEMORY, warp_size=32,
                                                compute_capability_major=CAPABILITY[0],
                                                compute_capability_minor=CAPABILITY[1])
        self.default_stream = _Stream()

    def set_current(self, ctx: Any = None) -> None:
        pass

    def create_stream(self, obj: Any = None, options: Any = None) -> _Stream:
        return _Stream()

    def create_event(self, options: Any = None) -> _Event:
        return _Event()

    def allocate(self, size: int, stream: Any = None) -> _Buffer:
        return _Buffer(size)

    def sync(self) -> None:
        pass


def _not_faked(what: str) -> Any:
    def fail(*a: Any, **k: Any) -> Any:
        raise RuntimeError(f"cuda.core.{what} has no CPU fake in tileport (it compiles or launches raw CUDA); "
                           "analyse on a GPU host")
    return fail


def _cuda_core(name: str) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__file__ = __file__
    m.__path__ = []
    m.__tileport_fake__ = True
    m.Device = _CoreDevice
    m.Buffer = _Buffer
    m.Stream = _Stream
    m.Event = _Event
    m.StreamOptions = m.EventOptions = lambda *a, **k: types.SimpleNamespace(**k)
    m.DeviceMemoryResource = lambda *a, **k: _MemoryResource()
    m.system = types.SimpleNamespace(num_devices=1, driver_version=(13, 0))
    for what in ("Program", "ProgramOptions", "LaunchConfig", "launch", "Linker", "ObjectCode"):
        setattr(m, what, _not_faked(what))
    return m


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname in ("cupy", "cupyx", "cuda.core", "cuda.core.experimental") or \
                fullname.startswith(("cupy.", "cupyx.")):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        name = spec.name
        if name == "cupy":
            return _cupy()
        if name.startswith("cuda.core"):
            return _cuda_core(name)
        if name == "cupyx":
            m = types.ModuleType("cupyx")
            m.__path__ = []
            m.__tileport_fake__ = True
            return m
        parent = sys.modules.get(name.rsplit(".", 1)[0]) or importlib.import_module(name.rsplit(".", 1)[0])
        sub = getattr(parent, name.rsplit(".", 1)[1], None)
        if isinstance(sub, types.ModuleType):
            return sub
        raise ImportError(f"No module named {name!r} (tileport's CPU fake of {name.split('.')[0]} lacks it; "
                          "analyse on a GPU host)", name=name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


_INSTALLED: list[_Finder] = []


def install() -> None:
    """Fake CuPy and cuda.core for the rest of this process (idempotent)."""
    if not _INSTALLED:
        _INSTALLED.append(_Finder())
        sys.meta_path.insert(0, _INSTALLED[0])


def faked_in_use() -> list[str]:
    """The faked modules something imported (for the analysis' notes)."""
    return sorted({n.split(".")[0] if not n.startswith("cuda.core") else "cuda.core"
                   for n, m in list(sys.modules.items()) if vars(m).get("__tileport_fake__", False)})


def describe(a: Any) -> dict[str, Any] | None:
    """{kind: tensor, dtype, ndim, shape} of a non-torch array (CUDA array interface, DLPack object with shape and
    dtype, numpy array), else None."""
    cai = getattr(a, "__cuda_array_interface__", None)
    if isinstance(cai, dict) and "shape" in cai and "typestr" in cai:
        shape = [int(s) for s in cai["shape"]]
        return {"kind": "tensor", "dtype": _dtype_name(cai["typestr"]), "ndim": len(shape), "shape": shape}
    if hasattr(a, "__dlpack__") and hasattr(a, "shape") and hasattr(a, "dtype"):
        try:
            shape = [int(s) for s in a.shape]
        except (TypeError, ValueError):
            return None
        return {"kind": "tensor", "dtype": _dtype_name(a.dtype), "ndim": len(shape), "shape": shape}
    return None


def _dtype_name(d: Any) -> str:
    try:
        return _np().dtype(d).name
    except Exception:
        return str(d).rsplit(".", 1)[-1]


__all__ = ["FAKED", "describe", "device_ndarray", "faked_in_use", "gpu_present", "install"]
