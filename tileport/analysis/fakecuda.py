"""A CUDA device for torch on a machine without one (launch capture's CPU mode; child process only).

Inside `fake_cuda()` tensors made on `cuda` are torch `FakeTensor`s (shapes, dtypes and strides, no data) and the
`torch.cuda` API a wrapper or a test calls answers as one device of the target GPU would: availability, device
count/index/properties/capability/name, streams and events (also as context managers), synchronisation, memory
queries, seeds. Tensor methods whose C bindings set a CUDA device guard before dispatching (`x[...]`, `x[...] = v`,
`.cuda()`, `.to("cuda")`, `.contiguous()`) are answered from a meta twin, and `nn.Module.cuda()/.to("cuda")` moves
parameters onto the fake device; autograd is off (no_grad). Reading a value back (`.item()`, `bool(x)`, `.tolist()`) has no data to read: it
answers 1 / True and counts the read in `FakeCuda.data_reads`, since the launch that follows is what is recorded.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator

# What the target (an H200, sm_90) reports; a wrapper sizing a persistent grid by the SM count gets the real one.
SM_COUNT = 132
TOTAL_MEMORY = 143_771_140_096
DEVICE_NAME = "NVIDIA H200"
CAPABILITY = (9, 0)


@dataclass
class DeviceProperties:
    name: str = DEVICE_NAME
    major: int = CAPABILITY[0]
    minor: int = CAPABILITY[1]
    multi_processor_count: int = SM_COUNT
    total_memory: int = TOTAL_MEMORY
    max_threads_per_multi_processor: int = 2048
    max_shared_memory_per_block_optin: int = 232448
    shared_memory_per_block: int = 49152
    shared_memory_per_multiprocessor: int = 233472
    regs_per_multiprocessor: int = 65536
    warp_size: int = 32
    L2_cache_size: int = 52428800
    gcnArchName: str = ""
    uuid: str = "00000000-0000-0000-0000-000000000000"
    is_integrated: int = 0
    is_multi_gpu_board: int = 0


class FakeEvent:
    def __init__(self, *a: Any, **k: Any) -> None:
        pass

    def record(self, stream: Any = None) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, other: Any) -> float:
        return 1.0  # ms; a script's throughput arithmetic divides by it (see harness.py)


class FakeStream:
    cuda_stream = 0
    stream_id = 0
    device_index = 0
    device_type = 1
    priority = 0

    def __init__(self, *a: Any, **k: Any) -> None:
        pass

    @property
    def device(self) -> Any:
        import torch

        return torch.device("cuda", 0)

    def synchronize(self) -> None:
        pass

    def wait_stream(self, *a: Any) -> None:
        pass

    def wait_event(self, *a: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> Any:
        return event if event is not None else FakeEvent()

    def query(self) -> bool:
        return True

    def __enter__(self) -> "FakeStream":
        return self

    def __exit__(self, *a: Any) -> None:
        return None


@dataclass
class FakeCuda:
    data_reads: list[str] = field(default_factory=list)


def _meta(a: Any) -> Any:
    import torch

    if isinstance(a, torch.Tensor):
        return torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device="meta")
    if isinstance(a, tuple):
        return tuple(_meta(x) for x in a)
    if isinstance(a, list):
        return [_meta(x) for x in a]
    return a


def _is_cuda(device: Any) -> bool:
    import torch

    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device.startswith("cuda")
    return isinstance(device, int) and not isinstance(device, bool)


def _to_target(args: tuple, kwargs: dict) -> tuple[bool, Any]:
    """(moves to cuda, dtype) of a Tensor.to(...) call."""
    import torch

    cuda, dtype = False, kwargs.get("dtype")
    for a in list(args[1:]) + [kwargs.get("device")]:
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, torch.Tensor):
            cuda, dtype = cuda or a.device.type == "cuda", a.dtype
        elif a is not None and _is_cuda(a):
            cuda = True
    return cuda, dtype


def _fresh(t: Any, dtype: Any = None) -> Any:
    import torch

    return torch.empty_strided(t.shape, t.stride(), dtype=dtype or t.dtype, device="cuda")


def _mode(state: FakeCuda) -> Any:
    import torch
    from torch.overrides import TorchFunctionMode

    T = torch.Tensor
    reads = {T.item: 1, T.tolist: None, T.__bool__: True, T.__int__: 1, T.__float__: 1.0, T.__index__: 1}

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            kwargs = kwargs or {}
            if func is T.__getitem__:
                src, idx = args
                m = _meta(src)
                r = m[_meta(idx)]
                if r._is_view():
                    return src.as_strided(r.shape, r.stride(), r.storage_offset())
                return torch.empty_strided(r.shape, r.stride(), dtype=r.dtype, device=src.device)
            if func is T.__setitem__:
                return None  # no data to write
            if func is T.cuda:
                return _fresh(args[0]) if args[0].device.type != "cuda" else args[0]
            if func is T.to:
                cuda, dtype = _to_target(args, kwargs)
                src = args[0]
                if (cuda and src.device.type != "cuda") or (src.device.type == "cuda" and dtype not in (None, src.dtype)):
                    return _fresh(src, dtype)
                if cuda or src.device.type == "cuda":
                    return src
            if func is T.contiguous:
                t = args[0]
                return t if t.is_contiguous() else torch.empty(t.shape, dtype=t.dtype, device=t.device)
            if func in reads:
                state.data_reads.append(getattr(func, "__name__", "read"))
                if func is T.tolist:
                    return [1] * args[0].numel() if args[0].dim() else 1
                v = reads[func]
                return float(v) if args[0].is_floating_point() and func is T.item else v
            return func(*args, **kwargs)

    return Mode()


def _module_to_cuda(module: Any, dtype: Any = None) -> Any:
    import torch

    for m in module.modules():
        for name, p in list(m._parameters.items()):
            if p is not None:
                # no autograd on fake tensors: some of torch's C++ kernels abort the process on a fake leaf that
                # requires grad (layer_norm does), and capture needs no gradients
                m._parameters[name] = torch.nn.Parameter(_fresh(p, dtype if p.is_floating_point() else None),
                                                         requires_grad=False)
        for name, b in list(m._buffers.items()):
            if b is not None:
                m._buffers[name] = _fresh(b, dtype if b.is_floating_point() else None)
    return module


@contextlib.contextmanager
def _patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    had = name in vars(obj) if isinstance(obj, type) else hasattr(obj, name)
    old = getattr(obj, name, None)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if had:
            setattr(obj, name, old)
        else:
            delattr(obj, name)


@contextlib.contextmanager
def fake_cuda() -> Iterator[FakeCuda]:
    """Fake tensors on a fake CUDA device, with torch.cuda answering as the target GPU (see the module doc)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    state = FakeCuda()
    cuda = torch.cuda
    Module = torch.nn.Module
    orig_module_to = Module.to

    def on_fake_device(m: Any) -> bool:
        return any(t.device.type == "cuda" for t in (*m.parameters(), *m.buffers()))

    def module_to(self: Any, *args: Any, **kwargs: Any) -> Any:
        cuda_, dtype = _to_target((None, *args), kwargs)
        if cuda_ or (dtype is not None and on_fake_device(self)):  # fake parameters cannot be swapped in place
            return _module_to_cuda(self, dtype)
        return orig_module_to(self, *args, **kwargs)

    def module_cast(dtype: Any) -> Any:
        orig = getattr(Module, {torch.float16: "half", torch.bfloat16: "bfloat16", torch.float32: "float",
                                torch.float64: "double"}[dtype])

        def cast(self: Any) -> Any:
            return _module_to_cuda(self, dtype) if on_fake_device(self) else orig(self)
        return cast

    stubs = (("current_stream", lambda device=None: FakeStream()),
             ("default_stream", lambda device=None: FakeStream()),
             ("Stream", FakeStream), ("Event", FakeEvent),
             ("stream", lambda s=None: contextlib.nullcontext(s)),
             ("is_available", lambda: True), ("is_initialized", lambda: True), ("_lazy_init", lambda: None),
             ("device_count", lambda: 1), ("current_device", lambda: 0), ("set_device", lambda device: None),
             ("synchronize", lambda device=None: None),
             ("get_device_capability", lambda device=None: CAPABILITY),
             ("get_device_name", lambda device=None: DEVICE_NAME),
             ("get_device_properties", lambda device=None: DeviceProperties()),
             ("mem_get_info", lambda device=None: (TOTAL_MEMORY, TOTAL_MEMORY)),
             ("memory_allocated", lambda device=None: 0), ("max_memory_allocated", lambda device=None: 0),
             ("reset_peak_memory_stats", lambda device=None: None), ("empty_cache", lambda: None),
             ("manual_seed", lambda seed: None), ("manual_seed_all", lambda seed: None),
             ("is_bf16_supported", lambda *a, **k: True))
    with contextlib.ExitStack() as stack:
        for name, value in stubs:
            stack.enter_context(_patched(cuda, name, value))
        stack.enter_context(_patched(Module, "cuda", lambda self, device=None: _module_to_cuda(self)))
        stack.enter_context(_patched(Module, "to", module_to))
        for name, dt in (("half", torch.float16), ("bfloat16", torch.bfloat16), ("float", torch.float32),
                         ("double", torch.float64)):
            stack.enter_context(_patched(Module, name, module_cast(dt)))
        stack.enter_context(torch.no_grad())  # see _module_to_cuda: autograd on fake tensors can abort
        stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
        stack.enter_context(_mode(state))
        yield state


__all__ = ["DeviceProperties", "FakeCuda", "FakeEvent", "FakeStream", "SM_COUNT", "fake_cuda"]
