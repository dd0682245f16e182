"""The GPU runner: judges one packed port against its cuTile Python reference on the GPU host.

It travels inside a pack directory (`tileport gpu pack`) and imports only the standard library, torch and
cuda.tile, plus `tp_correctness.py` packed beside it (a copy of `tileport.validators.correctness`: the same
NaN poisoning, comparison and fake-pass guards). No pydantic, no tileport.

The port's host is the reference's own host wrapper with `ct.launch` redirected to the port's shared library
(`PortLibrary`, ctypes): every launch the reference would make is mapped to the port entry its spec declares
(kernel, constants, dtype; see `tileport.validators.gpu.ffi`) and run with the same tensors, scalars and grid
on torch's current stream. So the reference and the port get identical inputs and identical host logic, and
only the device code differs.

    python runner.py PACK_DIR [--out results.json]

Correctness (stage D): per declared dtype x shape (x check variant): inputs from the op's `make_inputs`; the
reference wrapper (cuTile Python via ct.launch) and the port run with NaN-poisoned allocations; the port's output
is compared with the reference's (and the reference with torch's, as a sanity check). Failure classes: `host`
(no entry for a launch, a refused argument, a launch error), `kernel` (wrong values, a device fault), `env`
(no GPU, no tileiras, tileiras rc 5 from an older CUDA).

Performance (stage E), only for cases that passed: device time of every kernel from CUPTI (torch.profiler),
`warmup` calls first, then `repetitions` rounds (`time_rotating`; fewer for a slow call, `plan_row`), each
calling the reference, the port, the reference again and the port again (`side_streams`), the sides alternating
call by call, each call on fresh inputs (up to INPUT_SETS sets) and preceded by an L2 flush (a bitwise_not over a
buffer several times L2's size, verified once per run: a cold read must be slower than a warm one), every timed
output checked again against torch's reference for those inputs; the number of launches and the kernel names per
call are asserted from the trace (anything else running is a failure). Both streams of a side count, and
`ref_again` / `port_again` keep their ratio, the A/A spread below which port/reference is noise; a drift of the
card over the row lands on all four streams alike. Medians, per-configuration ratio port/reference, every raw sample. Shapes whose medians are both under
`TINY_US` are flagged tiny (left out of the geomean unless over config_max: reports.is_tiny). Each side's
achieved bandwidth is given as % of a measured device copy, and FLOP/s (when the op module defines
`flops(shape)`) as % of a measured cuBLAS GEMM. Each row also keeps, per side, the launch attributes CUPTI recorded for every timed kernel (grid, block, registers per thread, shared
memory, blocks/warps per SM, occupancy estimate), read from the chrome trace of that same profiled run after it
ends (no extra launch), so a slow configuration can be explained by how it was launched.

Results are written to results.json after every case, so a crash leaves what was measured.
"""

from __future__ import annotations

import argparse
import ctypes
import inspect
import json
import lzma
import os
import shutil
import statistics
import struct
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

MAX_RANK = 8
ERR_LEN = 4096
FLUSH_BYTES = 512 << 20  # H200 L2 is 60 MB; any GPU's L2 is far below this
TINY_US = 5.0  # below this a launch is mostly fixed cost: flagged, not averaged in
ROW_BUDGET_S = 10.0  # device time one configuration's timed rounds may take: slower calls get fewer rounds
MIN_ROUNDS = 10  # ... but never fewer than this
SLOW_ROUND_MS = 1000.0  # ... unless one round takes longer than this (a 32768^3 GEMM): then MIN_ROUNDS_SLOW
MIN_ROUNDS_SLOW = 5
SIDE_BUDGET_MS = 1000.0  # device time a side's warm-up calls, and its host-time calls, may each take
MIN_HOST_CALLS = 3
SIDE_STREAMS = ("ref", "port", "ref_again", "port_again")  # a stage-E row's streams, in `time_rotating`'s order
ENV_MARKERS = ("failed to compile tile ir program", "tileiras", "cuda_error_no_device", "no cuda gpus",
               "cuda_error_not_initialized", "driver version is insufficient", "cuda_error_insufficient_driver",
               "libcuda", "cannot open shared object")


class TpTensor(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_uint64), ("ndim", ctypes.c_int64), ("shape", ctypes.c_int64 * MAX_RANK),
                ("strides", ctypes.c_int64 * MAX_RANK), ("part", ctypes.c_int64 * MAX_RANK)]


class TpScalar(ctypes.Structure):
    _fields_ = [("i", ctypes.c_int64), ("f", ctypes.c_double)]


class PortError(Exception):
    """A port launch failed; `fail_class` is host | kernel | env."""

    def __init__(self, message: str, fail_class: str = "host"):
        super().__init__(message)
        self.fail_class = fail_class


def classify_message(message: str, default: str) -> str:
    low = message.lower()
    return "env" if any(m in low for m in ENV_MARKERS) else default


# ----------------------------------------------------------------------------------------------- the library


_TENSOR_PACK = struct.Struct("<Qq" + "q" * (3 * MAX_RANK))  # TpTensor: ptr, ndim, shape, strides, part
_SCALAR_PACK = struct.Struct("<qd")  # TpScalar: i, f
_GRID_PACK = struct.Struct("<III")
_PAD = (0,) * MAX_RANK
_WORDS = _TENSOR_PACK.size // 8  # a TpTensor in 64-bit words, its pointer the first


def _scalar_fields(v) -> tuple[int, float]:
    """A scalar as TpScalar holds it: (its integer value when it is integral, else 0; its float value)."""
    f = float(v)
    return (int(v) if f.is_integer() and abs(f) < 2**63 else 0), f


class TpInvoke(ctypes.Structure):
    """One launch's arguments in one block, for the library's `tp_invoke` (ffi_prelude.rs): its entry's C function
    and the ten arguments that function takes."""
    _fields_ = [("entry", ctypes.c_void_p), ("stream", ctypes.c_void_p), ("device", ctypes.c_int64),
                ("grid", ctypes.c_void_p), ("generics", ctypes.c_void_p), ("tensors", ctypes.c_void_p),
                ("ntensors", ctypes.c_int64), ("scalars", ctypes.c_void_p), ("nscalars", ctypes.c_int64),
                ("err", ctypes.c_void_p), ("errlen", ctypes.c_size_t)]


class _Bound:
    """One entry symbol's C function with its argument buffers allocated once and its arguments converted once
    (ctypes objects; the function is called without argtypes, so a call converts nothing). The setters write one
    field group; `call` calls with what the buffers hold. A plan's warm launch (`_Plan.launch`) rewrites only what
    changed since its previous call, usually the tensors' addresses alone. `busy` is held while a call fills and
    makes it (taken without waiting): another thread's launch meanwhile gets its own buffers.

    With the library's `invoker` (`tp_invoke`), the ten arguments live in one `TpInvoke` block and a call passes
    only its address: ctypes converts one argument instead of ten (0.46 -> 0.14 us a call on a 2-core CPU)."""

    __slots__ = ("fn", "nt", "ns", "device", "tarr", "words", "sarr", "grid", "err", "gen", "stream", "args", "busy",
                 "stream_obj", "packet")

    def __init__(self, fn, nt: int, ns: int, device: int, generics: bytes, invoker=None):
        self.fn, self.nt, self.ns, self.device, self.busy = fn, nt, ns, device, threading.Lock()
        self.stream_obj = None  # the stream object `on` last converted (held, so its identity is not reused)
        self.tarr = (TpTensor * max(1, nt))()
        self.words = (ctypes.c_uint64 * (_WORDS * max(1, nt))).from_buffer(self.tarr)
        self.sarr = (TpScalar * max(1, ns))()
        self.grid = (ctypes.c_uint32 * 3)()
        self.err = ctypes.create_string_buffer(ERR_LEN)
        self.stream = self.args = self.packet = None
        if invoker is not None:
            self.packet = TpInvoke(ctypes.cast(fn, ctypes.c_void_p).value, None, device, ctypes.addressof(self.grid),
                                   None, ctypes.addressof(self.tarr), nt, ctypes.addressof(self.sarr), ns,
                                   ctypes.addressof(self.err), ERR_LEN)
            self.fn = invoker
        self.set_generics(generics)

    def set_generics(self, generics: bytes) -> None:
        self.gen, self.args = ctypes.c_char_p(generics), None

    def set_device(self, device: int) -> None:
        if device != self.device:
            self.device, self.args = device, None

    def set_tensor(self, k: int, ptr: int, shape, strides, part) -> None:
        r = len(shape)
        _TENSOR_PACK.pack_into(self.tarr, k * _TENSOR_PACK.size, ptr, r, *shape, *_PAD[r:], *strides, *_PAD[r:],
                               *part, *_PAD[len(part):])

    def set_scalar(self, k: int, v) -> None:
        _SCALAR_PACK.pack_into(self.sarr, k * _SCALAR_PACK.size, *_scalar_fields(v))

    def set_grid(self, grid3) -> None:
        _GRID_PACK.pack_into(self.grid, 0, *grid3)

    def call(self, stream: int) -> tuple[int, str]:
        if self.args is None or stream != self.stream:
            self.call_args(stream)
        rc = self.fn(*self.args)
        return rc, (self.message() if rc else "")

    def on(self, stream) -> tuple:
        """The call's arguments for a stream object as `ct.launch` takes it (torch's, or its raw handle), converted
        only when it is not the object the previous call passed."""
        if stream is not self.stream_obj or self.args is None:
            raw = int(getattr(stream, "cuda_stream", stream) or 0)
            if self.args is None or raw != self.stream:
                self.call_args(raw)
            self.stream_obj = stream
        return self.args

    def call_args(self, stream: int) -> None:
        self.stream = stream
        p = self.packet
        if p is not None:
            p.stream, p.device, p.generics = stream, self.device, ctypes.cast(self.gen, ctypes.c_void_p).value
            self.args = (ctypes.byref(p),)
            return
        self.args = (ctypes.c_void_p(stream), ctypes.c_int32(self.device), self.grid, self.gen, self.tarr,
                     ctypes.c_int32(self.nt), self.sarr, ctypes.c_int32(self.ns), self.err, ctypes.c_size_t(ERR_LEN))

    def message(self) -> str:
        return self.err.value.decode("utf-8", "replace")


class PortLibrary:
    """The port's cdylib through ctypes. Loading needs no GPU (nothing runs until a launch).

    `bind` gives one launch signature's call with its buffers allocated once (PortLauncher keeps one per plan:
    the hot path); `launch` packs a whole launch into a symbol's shared buffers; `call` takes dicts and is kept
    for callers that build one launch by hand. `plans` is where PortLauncher keeps, per launch signature (kernel,
    argument dtypes and ranks, constants), what it decided on the first launch; `hot` the plans each kernel
    object launched, newest first, tried before any key is built."""

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        self.lib = ctypes.CDLL(self.path)
        self.lib.tp_abi_version.restype = ctypes.c_int32
        self.lib.tp_bindings.restype = ctypes.c_char_p
        self.abi = int(self.lib.tp_abi_version())
        self.invoker = getattr(self.lib, "tp_invoke", None)  # a one-argument call (libraries built before it: None)
        if self.invoker is not None:
            self.invoker.restype = ctypes.c_int32
        self._state(json.loads(self.lib.tp_bindings().decode()))

    def _state(self, bindings: dict) -> None:
        """Everything but the loaded library (a stand-in for the C side sets only this)."""
        self.bindings = bindings
        self._fns: dict[str, object] = {}
        self._bound: dict[tuple, _Bound] = {}
        self.plans: dict = {}
        self.hot: dict[int, list] = {}
        self.dumps: BytecodeDumps | None = None  # set by the runner: attribute compiled bytecode to launches
        self.compiled: dict[tuple, str] = {}  # (symbol, generics, shapes) -> the bytecode file its launch compiled

    def raw_function(self, symbol: str):
        """The entry's C function without argtypes (its arguments are passed as ctypes objects: `_Bound`)."""
        fn = self._fns.get(symbol)
        if fn is None:
            fn = self.lib[symbol]  # a function object of its own (getattr's is shared)
            fn.restype = ctypes.c_int32
            self._fns[symbol] = fn
        return fn

    def bind(self, symbol: str, nt: int, ns: int, device: int, generics: bytes) -> _Bound:
        return _Bound(self.raw_function(symbol), nt, ns, device, generics, getattr(self, "invoker", None))

    def profile(self) -> dict | None:
        """Where the library's launches spent host time so far (TILEPORT_FFI_PROFILE=1 in the environment), or
        None when profiling is off or the library predates it. Direct launches: `direct`, `direct_ns` in all,
        `direct_find_ns` finding the record and filling its parameters, `direct_driver_ns` in the driver
        (context check and cuLaunchKernel), `direct_ctx_sets` how many had to set the thread's context."""
        fn = getattr(self.lib, "tp_profile", None)
        if fn is None:
            return None
        keys = ("warm", "cold", "decide_ns", "prepare_ns", "launch_ns", "total_ns", "direct", "direct_ns",
                "direct_find_ns", "direct_driver_ns", "direct_ctx_sets")
        buf = (ctypes.c_uint64 * len(keys))()
        fn.restype = ctypes.c_int32
        if not fn(buf, len(keys)):
            return None
        return dict(zip(keys, (int(v) for v in buf)))

    def fast_stats(self) -> dict | None:
        """The library's direct launch path (`ffi_direct.rs`): launches that took it, launch signatures recorded for
        it (after a warm launch through cutile, up to 16 per entry), recordings refused, direct launches the driver
        refused (run through cutile instead), records launching their entry compiled without integer scalar hints
        (`hint_free`) and those whose hint-free compile failed, and the last note; None when the library predates
        it. Counted always, no environment switch."""
        fn = getattr(self.lib, "tp_fast_stats", None)
        if fn is None:
            return None
        keys = ("direct", "recorded", "refused", "driver_refused", "hint_free", "hint_free_failed")
        buf = (ctypes.c_uint64 * len(keys))()
        fn.restype = ctypes.c_int32
        n = fn(buf, len(keys))
        note = ctypes.create_string_buffer(ERR_LEN)
        self.lib.tp_fast_note(note, ERR_LEN)
        out = {k: int(v) for k, v in list(zip(keys, buf))[:n]}
        out["note"] = note.value.decode("utf-8", "replace")
        return out

    def launch(self, symbol: str, stream: int, device: int, grid: tuple[int, int, int], generics: bytes,
               tensors: list[tuple], scalars: list) -> tuple[int, str]:
        """One launch: tensors as (ptr, shape, strides, part) tuples, generics as b"a,b"; returns (rc, message)."""
        key = (symbol, len(tensors), len(scalars))
        b = self._bound.get(key)
        if b is None or not b.busy.acquire(blocking=False):
            b = self.bind(symbol, len(tensors), len(scalars), device, generics)
            self._bound.setdefault(key, b)
            b.busy.acquire()
        try:
            b.set_device(device)
            b.set_generics(generics)
            b.set_grid(grid)
            for k, (ptr, shape, strides, part) in enumerate(tensors):
                b.set_tensor(k, ptr, shape, strides, part)
            for k, v in enumerate(scalars):
                b.set_scalar(k, v)
            with self.attributing(symbol, generics, [t[1] for t in tensors]):
                return b.call(stream)
        finally:
            b.busy.release()

    def attributing(self, symbol: str, generics: bytes, shapes) -> "_Attribution | _NoAttribution":
        """Around a launch: with bytecode dumps on, the file a launch that compiled wrote is kept in `compiled`."""
        return _NO_ATTRIBUTION if self.dumps is None else _Attribution(self, symbol, generics, shapes)

    def call(self, symbol: str, *, stream: int, device: int, grid: tuple[int, int, int], generics: list[str],
             tensors: list[dict], scalars: list[float | int]) -> tuple[int, str]:
        """Raw call: tensors as {ptr, shape, strides, part}; returns (rc, message)."""
        return self.launch(symbol, int(stream), device, tuple(int(x) for x in grid), ",".join(generics).encode(),
                           [(int(t["ptr"]), [int(n) for n in t["shape"]], [int(x) for x in t["strides"]],
                             [int(x) for x in (t.get("part") or [])]) for t in tensors], list(scalars))


class _NoAttribution:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NO_ATTRIBUTION = _NoAttribution()


class _Attribution:
    """A launch that took over 5 ms while the port's bytecode index grew compiled: its newest file is its own."""

    def __init__(self, library: PortLibrary, symbol: str, generics: bytes, shapes):
        self.library, self.key = library, (symbol, generics.decode(), tuple(tuple(s) for s in shapes))

    def __enter__(self):
        self.t0 = time.perf_counter()
        self.before = self.library.dumps.index.stat().st_size
        return self

    def __exit__(self, *exc):
        index = self.library.dumps.index
        if time.perf_counter() - self.t0 > 0.005 and index.stat().st_size > self.before:
            with open(index, "rb") as f:
                f.seek(self.before)
                new = [line.split(b" ", 1)[0].decode() for line in f.read().splitlines() if line.strip()]
            if new:
                self.library.compiled[self.key] = new[-1]
        return False


def _is_constant(annotation) -> bool:
    meta = getattr(annotation, "__metadata__", ())
    return any(type(m).__name__ == "ConstantAnnotation" for m in meta)


def _const(v):
    return int(v) if isinstance(v, bool) else v


def _torch_dtype_name(t) -> str:
    return str(t.dtype).removeprefix("torch.")


class PortLauncher:
    """Stands in for `ct.launch`: maps each reference launch onto the port entry and calls the library."""

    def __init__(self, library: PortLibrary):
        self.library = library
        self.entries = library.bindings["entries"]
        self._hot = getattr(library, "hot", None)  # the library's plans per kernel object (read on every launch)
        self._calls: list[tuple] = []

    def record(self, plan: "_Plan", grid3: tuple, gens: list, shapes: tuple) -> None:
        self._calls.append((plan, grid3, gens, shapes))

    @property
    def calls(self) -> list[dict]:
        """Every launch served so far: symbol, entry, generics, grid and the port tensors' shapes."""
        return [{"symbol": p.symbol, "entry": p.entry, "generics": list(g), "grid": list(grid3),
                 "shapes": [tuple(s) for s in shapes]} for p, grid3, g, shapes in self._calls]

    def clear(self) -> None:
        self._calls.clear()

    def select(self, kernel_name: str, constants: dict, dtype: str) -> dict:
        best, best_score, reasons, fail_class = None, -1, [], "kernel"
        for e in self.entries:
            if kernel_name not in e["reference_kernels"]:
                continue
            if e["undecided"]:
                reasons.append(f"{e['entry']}: {'; '.join(e['undecided'])}")
                fail_class = "host"  # the host template could not decide: the host writer's (or a model's) part
                continue
            if dtype not in e["symbols"]:
                reasons.append(f"{e['entry']}: no {dtype} instance (has {', '.join(e['symbols'])})")
                continue
            score, ok = 0, True
            for name, values in e["structural"].items():
                if name in constants:
                    if _const(constants[name]) not in values:
                        ok = False
                        reasons.append(f"{e['entry']}: {name}={constants[name]!r} not in {values}")
                        break
                    score += 1
            missing = [g["constant"] for g in e["generics"] if g.get("from") == "constant" and g["constant"] not in constants]
            if missing:
                ok = False
                reasons.append(f"{e['entry']}: launch has no constant {', '.join(missing)}")
            # the most specific entry serves the launch: more structural constants matched, then an entry written
            # for this element type over one generic over it
            score = 2 * score + (0 if e.get("type_params") else 1)
            if ok and score > best_score:
                best, best_score = e, score
        if best is None:
            consts = ",".join(f"{k}={v}" for k, v in constants.items())
            # no entry serves this launch: the kernel writer must add (or generalise) one, unless the
            # template could not decide a mapping that exists
            raise PortError(f"no port entry for reference launch {kernel_name}[{consts}]/{dtype}"
                            + (f" ({'; '.join(reasons)})" if reasons else ""), fail_class)
        if best.get("kernel_faults"):
            raise PortError(f"{best['entry']}: {'; '.join(best['kernel_faults'])}", "kernel")
        return best

    def __call__(self, stream, grid, kernel, args):
        """Serve one reference launch with the port. The first launch of a signature (kernel, argument dtypes and
        ranks, constants) selects the entry and checks every argument (`_plan`); later ones reuse that plan and
        only read pointers, shapes and strides (the host path of issue 34: no signature inspection, no entry
        selection, no dict building per call). The plans a kernel object launched are tried first, newest first
        (`_Plan.admits`: no key built, no hashing); a launch none admits finds or makes its plan by key."""
        hot = self._hot
        if hot is not None:
            for plan in hot.get(id(kernel), ()):
                if plan.kernel is kernel and plan.launch(self, stream, grid, args):
                    return
        sig = _signature(kernel)
        key = _plan_key(sig, args, kernel)
        plans = getattr(self.library, "plans", None)
        plan = plans.get(key) if plans is not None else None
        if plan is None:
            plan = self._plan(sig, grid, kernel, args)
            if plans is not None:
                plans[key] = plan
        if hot is not None and plan.kernel is kernel:
            mine = [p for p in hot.get(id(kernel), ()) if p is not plan and p.kernel is kernel]
            hot[id(kernel)] = [plan] + mine[:7]
        plan.launch(self, stream, grid, args, guarded=False)

    def _plan(self, sig: tuple, grid, kernel, args) -> "_Plan":
        import torch

        func, name, params, _ = sig
        if len(params) != len(args):
            raise PortError(f"{name}: launched with {len(args)} arguments, its signature has {len(params)}", "host")
        bound = {p.name: a for p, a in zip(params, args)}
        index = {p.name: i for i, p in enumerate(params)}
        constants = {p.name: bound[p.name] for p in params if _is_constant(p.annotation)}
        constants.update(closure_constants(func))
        constants.update(kernel_hints(kernel))
        tensors_in = [a for a in args if isinstance(a, torch.Tensor)]
        if not tensors_in:
            raise PortError(f"{name}: no tensor argument", "host")
        dtype = _torch_dtype_name(tensors_in[0])
        entry = self.select(name, constants, dtype)
        rust_dtype = entry["symbols"][dtype].rsplit("__", 1)[1]
        gvals: dict[str, str] = {}
        generics: list = []  # per generic: its text, or (argument index, axis) of a tensor extent
        for g in entry["generics"]:
            if g["from"] == "dtype":
                gvals[g["name"]] = rust_dtype
            elif g["from"] == "constant":
                gvals[g["name"]] = str(int(_const(constants[g["constant"]])))
            elif g["from"] == "extent":  # an output slab spanning this axis: the output's extent there
                ref = entry["param_map"].get(g["param"], g["param"])
                t = bound.get(ref)
                if not isinstance(t, torch.Tensor) or t.dim() <= g["axis"]:
                    raise PortError(f"{entry['entry']}: {g['name']} is the extent of {g['param']} on axis "
                                    f"{g['axis']}, which the reference launch does not pass", "host")
                generics.append((index[ref], g["axis"]))
                gvals[g["name"]] = None
                continue
            else:
                gvals[g["name"]] = str(g["value"])
            generics.append(gvals[g["name"]])
        steps = []  # per port parameter: ("of", i, what, axis) | ("scalar", i) | ("tensor", i, part rule)
        for p in entry["params"]:
            ref_name = entry["param_map"].get(p["name"], p["name"])
            if p.get("of") and ref_name not in bound:  # x_dim_0 / x_stride_1 of a pointer parameter's tensor
                src_name = entry["param_map"].get(p["of"]["param"], p["of"]["param"])
                src = bound.get(src_name)
                if not isinstance(src, torch.Tensor) or src.dim() <= p["of"]["axis"]:
                    raise PortError(f"{entry['entry']}: {p['name']} is the {p['of']['what']} of {p['of']['param']} "
                                    f"on axis {p['of']['axis']}, which the reference launch does not pass", "host")
                steps.append(("of", index[src_name], p["of"]["what"], p["of"]["axis"]))
                continue
            if ref_name not in bound:
                raise PortError(f"{entry['entry']}: parameter {p['name']} has no reference argument {ref_name}", "host")
            value = bound[ref_name]
            if p["kind"] == "scalar":
                if isinstance(value, torch.Tensor):
                    raise PortError(f"{entry['entry']}: {p['name']} is a scalar in the port, a tensor in the reference", "host")
                steps.append(("scalar", index[ref_name]))
                continue
            if not isinstance(value, torch.Tensor):
                raise PortError(f"{entry['entry']}: {p['name']} is a tensor in the port, {type(value).__name__} in the reference", "host")
            want = dtype if p["elem"] in entry["type_params"] else \
                {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64", "i32": "int32",
                 "i64": "int64", "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}.get(p["elem"], p["elem"])
            if _torch_dtype_name(value) != want:
                raise PortError(f"{entry['entry']}: {p['name']} is {_torch_dtype_name(value)}, the port takes {want}", "host")
            if p["kind"] != "ptr" and value.dim() != len(p["dims"]):
                raise PortError(f"{entry['entry']}: {p['name']} has rank {value.dim()}, the port declares {len(p['dims'])}", "host")
            part: list = []  # per dim: a size, ("gen", generic index), ("grid", axis) or ("shape", axis)
            if p["kind"] == "out":
                names = [g["name"] for g in entry["generics"]]
                for i, d in enumerate(p["dims"]):
                    if d.lstrip("-").isdigit() and int(d) > 0:
                        part.append(int(d))
                    elif d in gvals:
                        part.append(int(gvals[d]) if gvals[d] is not None else ("gen", names.index(d)))
                    elif i < 3:  # a dynamic dim: the block's share of it along the grid
                        part.append(("grid", i))
                    else:
                        part.append(("shape", i))
            steps.append(("tensor", index[ref_name], part))
        return _Plan(symbol=entry["symbols"][dtype], entry=entry["entry"], generics=generics, steps=steps,
                     device=tensors_in[0].device.index or 0, kernel=kernel, args=tuple(args), library=self.library)


def closure_constants(func) -> dict:
    """A kernel made by a factory (`make_kernel(tile)` returning a new `k` per call) is told apart by its closure
    values, as the port's entries were drafted per value: `closure:NAME` -> value (numbers, bools, strings)."""
    out = {}
    for var, cell in zip(getattr(getattr(func, "__code__", None), "co_freevars", ()),
                         getattr(func, "__closure__", None) or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(value, (bool, int, float, str)):
            out[f"closure:{var}"] = value
    return out


def specialisation(kernel, args) -> tuple:
    """What tells a reference launch's compile apart from another of the same kernel object, as far as the
    bytecode evidence needs: the object, its arguments' dtypes and its scalar values (the constants among them)."""
    return (id(kernel), tuple(str(getattr(a, "dtype", type(a).__name__)) for a in args),
            tuple(a for a in args if isinstance(a, (bool, int, float, str))))


HINT_OPTIONS = ("num_ctas", "occupancy")  # cuda.tile CompilerOptions an op may set per launch


def launch_hints(kernel) -> dict:
    """The compiler hints a kernel object carries (`ct.kernel(fn._pyfunc, num_ctas=2)`, `replace_hints`): NAME ->
    value, plain integers only (a ByTarget value is an entry's own per-target attribute, the same for every launch).
    Stage A's capture reads them the same way (analysis.capture.launch_hints); this copy travels in the pack."""
    opts = getattr(kernel, "_compiler_options", None)
    return {name: v for name in HINT_OPTIONS
            if isinstance(v := getattr(opts, name, None), int) and not isinstance(v, bool)}


def kernel_hints(kernel) -> dict:
    """`launch_hints` as the port's entries select on them (drafted per value): `hint:NAME` -> value."""
    return {f"hint:{k}": v for k, v in launch_hints(kernel).items()}


def _signature(kernel) -> tuple:
    """(function, name, parameters, constant positions) of a cuTile kernel, read once per kernel."""
    func = getattr(kernel, "_pyfunc", kernel)
    got = _SIGNATURES.get(id(func))
    if got is None or got[0] is not func:
        params = list(inspect.signature(func).parameters.values())
        got = _SIGNATURES[id(func)] = (func, getattr(func, "__name__", str(kernel)), params,
                                       tuple(i for i, p in enumerate(params) if _is_constant(p.annotation)))
    return got


_SIGNATURES: dict[int, tuple] = {}


def _plan_key(sig: tuple, args, kernel) -> tuple:
    """What a plan depends on: the kernel, each argument's kind (tensor dtype and rank, scalar type), the
    constants' values, the first tensor's device and the kernel object's compiler hints (one function re-wrapped
    with num_ctas=2 and with 4 is served by two entries)."""
    consts = sig[3]
    kinds = []
    for i, a in enumerate(args):
        dt = getattr(a, "dtype", None)
        if dt is not None and hasattr(a, "data_ptr"):
            kinds.append((dt, a.dim(), a.get_device()))
        else:
            kinds.append((type(a), a if i in consts else None))
    return (id(sig[0]), len(args), tuple(kinds), tuple(kernel_hints(kernel).items()))


class _Plan:
    """What the first launch of a signature decided. `admits` says whether a launch is of this signature (what
    `_plan_key` is built from, checked in place: dtype, rank and device per tensor, type per other argument, the
    constants' values); `launch` reads only what changes between calls and, with the library's `bind`, rewrites
    in the plan's own buffers only the fields that changed since its previous call."""

    __slots__ = ("symbol", "entry", "generics", "steps", "device", "kernel", "nargs", "tguards", "vguards",
                 "tsteps", "ssteps", "bound", "grid_in", "grid3", "gen_bytes", "gen_list", "shapes", "strides",
                 "svals", "settling", "shapes_t", "tplan", "xguards", "launch")

    def __init__(self, symbol: str, entry: str, generics: list, steps: list, device: int, kernel=None,
                 args: tuple | None = None, library=None):
        self.symbol, self.entry, self.generics, self.steps, self.device = symbol, entry, generics, steps, device
        self.kernel = kernel
        fixed = all(isinstance(g, str) for g in generics)
        self.gen_list = list(generics) if fixed else None
        self.gen_bytes = ",".join(generics).encode() if fixed else None
        self.tguards, self.vguards, self.nargs = (), (), -1
        if args is not None:
            consts = _signature(kernel)[3] if kernel is not None else ()
            self.nargs = len(args)
            self.tguards = tuple((i, a.dtype, a.dim(), a.get_device()) for i, a in enumerate(args) if _is_tensor(a))
            self.vguards = tuple((i, type(a), a if i in consts else _ANY) for i, a in enumerate(args)
                                 if not _is_tensor(a))
        # tensors: (argument index, partition rule, whether the rule reads the grid or the generics)
        self.tsteps = tuple((s[1], s[2], any(not isinstance(x, int) and x[0] in ("gen", "grid") for x in s[2]))
                            for s in steps if s[0] == "tensor")
        self.ssteps = tuple(s for s in steps if s[0] != "tensor")
        # the port's tensors with their guards, as a warm launch reads them: (k, argument index, rule, dyn, dtype,
        # rank, device); `xguards`: tensors the reference passes and the port does not take
        guard = {g[0]: g[1:] for g in self.tguards}
        none = (None, -1, None)
        self.tplan = tuple((k, i, rule, dyn, *guard.get(i, none)) for k, (i, rule, dyn) in enumerate(self.tsteps))
        self.xguards = tuple(g for g in self.tguards if g[0] not in {i for i, _, _ in self.tsteps})
        self.bound = None
        if library is not None and hasattr(library, "bind"):
            self.bound = library.bind(symbol, len(self.tsteps), len(self.ssteps), device, self.gen_bytes or b"")
        self.grid_in = self.grid3 = None
        self.shapes = [None] * len(self.tsteps)
        self.strides = [None] * len(self.tsteps)
        self.svals = [_ANY] * len(self.ssteps)
        self.settling = ATTRIBUTED_CALLS  # calls left that may compile (bytecode attribution)
        self.shapes_t = ()  # the port tensors' shapes as of the last change, as a launch record keeps them
        self.launch = _compile_launch(self) if self.bound is not None else self._launch_unbound_checked

    @staticmethod
    def _tensors_admitted(guards, args) -> bool:
        try:
            for i, dt, nd, dev in guards:
                a = args[i]
                if a.dtype is not dt or a.dim() != nd or a.get_device() != dev:
                    return False
        except (AttributeError, TypeError):
            return False
        return True

    def _values_admitted(self, args) -> bool:
        for i, typ, val in self.vguards:
            a = args[i]
            if type(a) is not typ or (val is not _ANY and a != val):
                return False
        return True

    def admits(self, args) -> bool:
        return len(args) == self.nargs and self._tensors_admitted(self.tguards, args) and self._values_admitted(args)

    @staticmethod
    def _part(rule, shape, grid3, gens) -> list:
        if not rule or all(isinstance(x, int) for x in rule):
            return rule
        return [x if isinstance(x, int) else int(gens[x[1]]) if x[0] == "gen"
                else max(1, -(-shape[x[1]] // grid3[x[1]])) if x[0] == "grid" else shape[x[1]] for x in rule]

    def _launch_unbound_checked(self, launcher: "PortLauncher", stream, grid, args, guarded: bool = True) -> bool:
        """`launch` of a plan without bound buffers (a stand-in library), or while another thread is inside its
        bound launch: the guards (`admits`), then the whole launch built afresh."""
        if guarded and not self.admits(args):
            return False
        self._launch_unbound(launcher, stream, grid, args)
        return True

    def _launch_unbound(self, launcher: "PortLauncher", stream, grid, args) -> None:
        """The whole launch built afresh and passed to `library.launch`."""
        grid3 = _grid3(grid)
        gens = self.gen_list
        if gens is None:
            gens = [g if isinstance(g, str) else str(int(args[g[0]].shape[g[1]])) for g in self.generics]
        gen_bytes = ",".join(gens).encode()
        tensors, scalars = [], []
        for i, rule, _ in self.tsteps:
            t = args[i]
            shape = tuple(t.shape)
            tensors.append((t.data_ptr(), shape, t.stride(), self._part(rule, shape, grid3, gens)))
        for step in self.ssteps:
            if step[0] == "scalar":
                scalars.append(args[step[1]])
            else:
                t = args[step[1]]
                scalars.append(int(t.shape[step[3]] if step[2] == "shape" else t.stride(step[3])))
        raw_stream = getattr(stream, "cuda_stream", stream)
        rc, msg = launcher.library.launch(self.symbol, int(raw_stream or 0), self.device, grid3, gen_bytes, tensors,
                                          scalars)
        launcher.record(self, grid3, gens, tuple(t[1] for t in tensors))
        if rc != 0:
            self._refused(gens, rc, msg)

    def _refused(self, gens, rc: int, msg: str):
        default = "kernel" if ("illegal" in msg.lower() or "jit" in msg.lower()) else "host"
        raise PortError(f"{self.symbol}({','.join(gens)}) rc={rc}: {msg}", classify_message(msg, default))


ATTRIBUTED_CALLS = 3  # calls of a plan watched for a compile after its signature's values changed


def _grid3(grid) -> tuple:
    """A launch grid as the library takes it: three integers, missing axes 1."""
    return tuple(int(x) for x in (list(grid) + [1, 1, 1])[:3])


def _refuse(entry: str, guarded: bool) -> bool:
    if guarded:
        return False
    raise PortError(f"{entry}: the launch's own plan refused its arguments", "host")


def _compile_launch(plan: _Plan):
    """A bound plan's `launch(launcher, stream, grid, args, guarded=True) -> bool`: one launch of this plan if it
    admits `args` (`_Plan.admits`, checked as the arguments are read); returns whether it launched, and with
    `guarded=False` (the caller found the plan by the launch's own key) a refusal is an error. It writes into the
    plan's buffers only what changed since its previous call (usually the tensors' addresses alone), calls the
    entry, and records the launch. Another thread inside the same plan's launch meanwhile: the launch is built
    afresh in buffers of its own (`_launch_unbound_checked`).

    Generated per plan as straight-line Python (each argument unpacked once; each tensor's dtype, device, rank and
    partition rule a constant; no loop, no helper call), since a warm launch's host time is this function's: 2.8 ->
    2.2 us for three tensors on a 2-core CPU (benchmarks/host_call_cpu.py). `plan.launch.source` holds the text.

    Every guard that needs no shape (argument count, scalar types and constants, each tensor's dtype and device,
    every tensor the port does not take) is read before anything is written; a tensor's rank is read only when its
    shape changed, and if that refuses the launch after the grid or generics were written, the plan forgets its
    grid, so the next call rewrites every partition that follows the grid or generics: a refused launch leaves
    nothing stale."""
    b, n = plan.bound, plan.nargs
    env = {"plan": plan, "words": b.words, "shapes": plan.shapes, "strides": plan.strides, "svals": plan.svals,
           "set_grid": b.set_grid, "set_generics": b.set_generics, "set_tensor": b.set_tensor,
           "set_scalar": b.set_scalar, "part": _Plan._part, "ATTRIBUTED": ATTRIBUTED_CALLS, "acquire": b.busy.acquire,
           "release": b.busy.release, "fn": b.fn, "on": b.on, "message": b.message, "unbound":
           plan._launch_unbound_checked, "refuse": _refuse, "ENTRY": plan.entry, "grid3_of": _grid3}
    refuse = "return refuse(ENTRY, guarded)"
    L = ["def launch(launcher, stream, grid, args, guarded=True):",
         "    if not acquire(False):",
         "        return unbound(launcher, stream, grid, args, guarded)",
         "    try:",
         "        try:",
         f"            if len(args) != {n}:",
         f"                {refuse}"]
    if n > 0:
        L.append(f"            {''.join(f'a{i}, ' for i in range(n))}= args")
    for i, typ, val in plan.vguards:
        env[f"T{i}"], env[f"V{i}"] = typ, val
        L += [f"            if type(a{i}) is not T{i}{'' if val is _ANY else f' or a{i} != V{i}'}:",
              f"                {refuse}"]
    for i, dt, nd, dev in plan.xguards:
        env[f"D{i}"] = dt
        L += [f"            if a{i}.dtype is not D{i} or a{i}.get_device() != {dev} or a{i}.dim() != {nd}:",
              f"                {refuse}"]
    for k, i, rule, dyn, dt, nd, dev in plan.tplan:
        if dt is None:  # a plan made without its first launch's arguments guards nothing: it admits none
            L += [f"            {refuse}"]
            break
        env[f"D{i}"] = dt
        L += [f"            if a{i}.dtype is not D{i} or a{i}.get_device() != {dev}:", f"                {refuse}"]
    fixed = plan.gen_list is not None
    if fixed:
        env["GENS"] = plan.gen_list
        L.append("            gens = GENS")
    else:  # generics that are tensor extents: read before anything is written (an IndexError writes nothing)
        parts = [repr(g) if isinstance(g, str) else f"str(int(a{g[0]}.shape[{g[1]}]))" for g in plan.generics]
        L.append(f"            gens = [{', '.join(parts)}]")
    L += ["            reshape = fresh = False",
          "            if grid != plan.grid_in:",
          "                plan.grid3 = grid3_of(grid)",
          "                plan.grid_in = grid if type(grid) is tuple else list(grid)  # a copy of a list",
          "                set_grid(plan.grid3)",
          "                reshape = True",
          "            grid3 = plan.grid3"]
    if not fixed:
        L += ["            gen_bytes = ','.join(gens).encode()",
              "            if gen_bytes != plan.gen_bytes:",
              "                plan.gen_bytes = gen_bytes",
              "                set_generics(gen_bytes)",
              "                reshape = True"]
    for k, i, rule, dyn, dt, nd, dev in plan.tplan:
        env[f"R{k}"] = rule
        static = not rule or all(isinstance(x, int) for x in rule)
        L += [f"            s, st = a{i}.shape, a{i}.stride()",
              f"            if {'reshape or ' if dyn else ''}s != shapes[{k}] or st != strides[{k}]:",
              f"                if len(s) != {nd}:",
              "                    plan.grid_in = None",
              f"                    {refuse}",
              "                fresh = True",
              f"                shapes[{k}], strides[{k}] = s, st",
              f"                set_tensor({k}, a{i}.data_ptr(), s, st, "
              f"{f'R{k}' if static else f'part(R{k}, s, grid3, gens)'})",
              "            else:",
              f"                words[{k * _WORDS}] = a{i}.data_ptr()"]
    for k, step in enumerate(plan.ssteps):
        if step[0] == "scalar":
            L.append(f"            v = a{step[1]}")
        else:  # "of": an extent of a tensor the port takes by pointer
            L.append(f"            v = int(a{step[1]}.shape[{step[3]}])" if step[2] == "shape"
                     else f"            v = int(a{step[1]}.stride({step[3]}))")
        L += [f"            if v is not svals[{k}] and v != svals[{k}]:",
              "                fresh = True",
              f"                svals[{k}] = v",
              f"                set_scalar({k}, v)"]
    # which bytecode file a launch compiled is found out only where it may compile: the first calls after the grid,
    # generics, shapes, strides or scalars changed (the first compiles the entry; the second records the direct
    # path, which compiles its hint-free twin, ffi_direct.rs). Stage E's warm calls, timed for host time, pay
    # nothing for it.
    L += ["            if fresh or reshape:",
          "                plan.settling = ATTRIBUTED",
          "                plan.shapes_t = tuple(shapes)",
          "        except (AttributeError, TypeError, IndexError):  # an argument that is not what the guards read",
          "            plan.grid_in = None  # whatever was written before it: the next call rewrites every partition",
          "            if guarded:",
          "                return False",
          "            raise",
          "        if plan.settling and launcher.library.dumps is not None:",
          "            plan.settling -= 1",
          "            with launcher.library.attributing(plan.symbol, plan.gen_bytes, shapes):",
          "                rc = fn(*on(stream))",
          "        else:",
          "            rc = fn(*on(stream))",
          "        msg = message() if rc else ''",
          "    finally:",
          "        release()",
          "    launcher._calls.append((plan, grid3, gens, plan.shapes_t))  # PortLauncher.record, inlined",
          "    if rc != 0:",
          "        plan._refused(gens, rc, msg)",
          "    return True"]
    source = "\n".join(L) + "\n"
    exec(compile(source, f"<launch {plan.symbol}>", "exec"), env)
    launch = env["launch"]
    launch.source = source
    return launch


class _Any:
    def __repr__(self):
        return "ANY"


_ANY = _Any()  # a guard that takes any value of its type; an unset scalar (never equal to a value)


def _is_tensor(a) -> bool:
    return hasattr(a, "data_ptr") and getattr(a, "dtype", None) is not None


class LaunchRecorder:
    """Wraps the real `ct.launch` to count launches and remember kernel names, argument bytes and the launched
    kernel object with its arguments (references only: every timed reference call goes through here)."""

    def __init__(self, real):
        self.real = real
        self.launches: list[dict] = []

    def __call__(self, stream, grid, kernel, args):
        import torch

        func = getattr(kernel, "_pyfunc", kernel)
        seen, nbytes = set(), 0
        for a in args:
            if isinstance(a, torch.Tensor) and a.data_ptr() not in seen:
                seen.add(a.data_ptr())
                nbytes += a.numel() * a.element_size()
        self.launches.append({"kernel": getattr(func, "__name__", str(kernel)), "bytes": nbytes,
                              "launched": (kernel, args)})
        return self.real(stream, grid, kernel, args)


class _Patched:
    """Within the block, `ct.launch` (on cuda.tile and in the op module) is `replacement`."""

    def __init__(self, ct, module, replacement):
        self.ct, self.module, self.replacement = ct, module, replacement

    def __enter__(self):
        self.real = self.ct.launch
        self.names = [n for n, v in vars(self.module).items() if v is self.real]
        self.ct.launch = self.replacement
        for n in self.names:
            setattr(self.module, n, self.replacement)
        return self.replacement

    def __exit__(self, *exc):
        self.ct.launch = self.real
        for n in self.names:
            setattr(self.module, n, self.real)
        return False


# ----------------------------------------------------------------------------------------------- bytecode


_TILEIRAS_WRAPPER = """#!/bin/sh
# Written by tileport's gate runner: keeps the Tile IR bytecode cutile asks tileiras to compile (and the flags it
# passes), then runs the real tileiras with the same arguments.
for a in "$@"; do
  case "$a" in
    *.bc|*.tileirbc|*.bytecode) f="@DIR@/$(basename "$a")"; cp "$a" "$f" 2>/dev/null && echo "$f $*" >> "@DIR@/index" ;;
  esac
done
exec "@REAL@" "$@"
"""


class BytecodeDumps:
    """The Tile IR bytecode each side's JIT really compiled in this run, for every specialisation it launched.

    cuTile Python writes each module it compiles to `CUDA_TILE_DUMP_BYTECODE` (read when cuda.tile is imported:
    `enable` must run first). cutile 0.5 has no such switch for a file (`CUTILE_DUMP` prints text to stderr), but
    it runs tileiras through `CUTILE_TILEIRAS_PATH` (`run_tileiras` in cutile-compiler's cuda_tile_runtime_utils):
    a wrapper there keeps the bytecode it is given and the flags, then runs the real tileiras. PortLibrary.launch
    attributes each new port file to the launch that compiled it (`compiled`)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.ref_dir, self.port_dir = self.root / "ref", self.root / "port"
        self.ref_dir.mkdir(parents=True, exist_ok=True)
        self.port_dir.mkdir(parents=True, exist_ok=True)
        self.index = self.port_dir / "index"
        self.index.touch()
        self._compiled: dict[tuple, list[str]] = {}  # reference specialisation -> the bytecode files it wrote

    @classmethod
    def attached(cls) -> "BytecodeDumps | None":
        """In a child of a runner that turned dumps on (the replay): the same folders, found through the
        environment it inherited (`CUDA_TILE_DUMP_BYTECODE` names ref/ under the root); None when they are off."""
        ref = os.environ.get("CUDA_TILE_DUMP_BYTECODE")
        if not ref or Path(ref).name != "ref" or not Path(ref).is_dir():
            return None
        return cls(Path(ref).parent)

    def enable_reference(self) -> None:
        """Before cuda.tile is imported: its bytecode to ref/, and (tileiras found on PATH, where cuda.tile looks
        for it on a GPU host without the tileiras pip package) its tileiras flags to ref-tileiras/index."""
        os.environ["CUDA_TILE_DUMP_BYTECODE"] = str(self.ref_dir)
        real = shutil.which("tileiras")
        if real:
            bin_dir = self.root / "ref-bin"
            log_dir = self.root / "ref-tileiras"
            bin_dir.mkdir(exist_ok=True)
            log_dir.mkdir(exist_ok=True)
            self._wrapper(bin_dir / "tileiras", log_dir, real)
            disasm = Path(real).with_name("tileirdisasm")
            if disasm.is_file() and not (bin_dir / "tileirdisasm").exists():
                (bin_dir / "tileirdisasm").symlink_to(disasm)
            os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"

    def enable_port(self, real_tileiras: str) -> str:
        real_tileiras = str(Path(real_tileiras).resolve())
        if Path(real_tileiras).parent == (self.root / "ref-bin").resolve():  # found through the reference's wrapper
            real_tileiras = str(Path(os.readlink(self.root / "ref-bin" / "tileiras.real")))
        wrapper = self._wrapper(self.root / "tileiras", self.port_dir, real_tileiras)
        os.environ["CUTILE_TILEIRAS_PATH"] = str(wrapper)
        return str(wrapper)

    @staticmethod
    def _wrapper(path: Path, log_dir: Path, real: str) -> Path:
        path.write_text(_TILEIRAS_WRAPPER.replace("@DIR@", str(log_dir)).replace("@REAL@", real))
        path.chmod(0o755)
        real_link = path.with_name(path.name + ".real")
        if not real_link.exists():
            real_link.symlink_to(real)
        return path

    def tileiras_args(self, side: str) -> str | None:
        """The flags the first tileiras run of a side was given (the bytecode path left out)."""
        index = self.index if side == "port" else self.root / "ref-tileiras" / "index"
        try:  # a compile names an opt level (cuda.tile also runs tileiras once to probe for remarks support)
            first = next(line for line in index.read_text().splitlines() if " -O" in line or "--opt-level" in line)
        except (OSError, StopIteration):
            return None
        return " ".join(a for a in first.split(" ")[1:] if not a.endswith((".bc", ".bytecode", ".tileirbc",
                                                                             ".cubin")))

    def reference(self, kernel_name: str, among: "list[str] | None" = None) -> bytes | None:
        """The bytecode whose entry is this JIT symbol (the kernel name CUPTI recorded): among the files a
        launch was seen to write (`among`), else the first of any. One kernel compiled with other constants or
        hints writes several files of one symbol (cuda.tile names them by kernel, module and line): only `among`
        tells them apart."""
        needle = kernel_name.encode()
        files = [self.ref_dir / n for n in among] if among else sorted(self.ref_dir.glob("*.tileirbc"))
        for f in files:
            try:
                data = f.read_bytes()
            except OSError:
                continue
            if needle in data:
                return data
        return None

    def reference_files(self) -> set[str]:
        """The reference's bytecode files so far (what a launch adds is what it compiled)."""
        return {f.name for f in self.ref_dir.glob("*.tileirbc")}

    def compiled_since(self, before: set[str], key: tuple) -> list[str]:
        """The reference bytecode files of specialisation `key` (`specialisation`): those written since `before`
        (the file list taken before its launch), else those an earlier launch of the same key wrote (a JIT cache
        hit writes nothing); [] when no launch of it was seen compiling."""
        new = sorted(self.reference_files() - before)
        if new:
            self._compiled[key] = new
        return self._compiled.get(key, [])


def bytecode_evidence(dumps: "BytecodeDumps | None", library, ref_kernels: list[str], port_calls: list[dict],
                      store: dict, ref_files: "list[str] | None" = None) -> dict:
    """Per side, the bytecode of each kernel one call of this configuration launches (by sha256 into `store`,
    base64), or why it is missing; what the IR gate diffs on the CPU side (tileport.validators.gpu.bytecode)."""
    import base64
    import hashlib

    def keep(data: bytes | None) -> str | None:
        if not data:
            return None
        h = hashlib.sha256(data).hexdigest()[:16]
        store.setdefault(h, base64.b64encode(data).decode())
        return h

    if dumps is None:
        return {"missing": "bytecode dumps were off in this run"}
    out = {"ref": [keep(dumps.reference(k, ref_files)) for k in ref_kernels], "port": []}
    if not ref_files:
        out["ref_by"] = "kernel name (no launch of this configuration was seen compiling)"
    compiled = getattr(library, "compiled", {})
    for c in port_calls:
        gens = ",".join(c["generics"])
        path = compiled.get((c["symbol"], gens, tuple(c.get("shapes") or ())))
        if path is None:  # compiled by an earlier launch of the same entry whose specialisation this one reuses
            path = next((v for k, v in reversed(list(compiled.items())) if k[:2] == (c["symbol"], gens)), None)
        data = None
        if path:
            try:
                data = Path(path).read_bytes()
            except OSError:
                data = None
        out["port"].append(keep(data))
    for side in ("ref", "port"):
        args = dumps.tileiras_args(side)
        if args:
            out[f"{side}_tileiras_args"] = args
    return out


# ----------------------------------------------------------------------------------------------- measurement


def _device_kernels(prof) -> list[tuple[float, float, str]]:
    """(start_us, duration_us, name) of every device activity in the trace, in start order."""
    import torch

    out = []
    for evt in prof.events():
        if evt.device_type == torch.autograd.DeviceType.CUDA:
            out.append((evt.time_range.start, evt.time_range.elapsed_us(), evt.name))
    return sorted(out)


def _profile(fn, n: int, trace: bool = False):
    """Device kernels of n calls of fn under torch.profiler; with trace=True also the exported chrome trace of
    that same run (a dict: its kernel events carry CUPTI's launch attributes), or the export's error text."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for i in range(n):
            fn(i)
        torch.cuda.synchronize()
    events = _device_kernels(prof)
    if not trace:
        return events
    try:  # after the run: exporting reads what CUPTI recorded, it launches nothing
        with tempfile.TemporaryDirectory(prefix="tp-trace-") as d:
            path = os.path.join(d, "trace.json")
            prof.export_chrome_trace(path)
            with open(path, encoding="utf-8") as f:
                exported = json.load(f)
    except Exception as exc:  # the timing stands without it
        exported = f"chrome trace export failed: {type(exc).__name__}: {str(exc)[:200]}"
    return events, exported


# CUPTI kernel-record fields as kineto writes them into a chrome trace's kernel event "args" -> our names.
# kineto reports "shared memory" as static + dynamic shared memory per block (one number); newer versions that
# split them are read too.
LAUNCH_ARGS = (("grid", "grid"), ("block", "block"), ("registers per thread", "registers_per_thread"),
               ("shared memory", "shared_memory_bytes"), ("static shared memory", "static_shared_memory_bytes"),
               ("dynamic shared memory", "dynamic_shared_memory_bytes"), ("blocks per SM", "blocks_per_sm"),
               ("warps per SM", "warps_per_sm"), ("est. achieved occupancy %", "occupancy_pct"))


def launch_attributes(trace: dict, kernel_names: list[str]) -> list[dict]:
    """Per kernel name (in kernel_names' order) the launch attributes CUPTI recorded for it in a chrome trace
    exported by torch.profiler: grid, block, registers per thread, shared memory, blocks/warps per SM, kineto's
    occupancy estimate; `calls` counts its kernel events, and a field whose value changed between calls lists
    every distinct value (`varies`)."""
    per_name: dict[str, dict] = {}
    for ev in (trace or {}).get("traceEvents") or []:
        if not isinstance(ev, dict) or str(ev.get("cat", "")).lower() != "kernel" or ev.get("ph") not in ("X", None):
            continue
        name = next((k for k in kernel_names if k == ev.get("name")), None) or next(
            (k for k in kernel_names if k and isinstance(ev.get("name"), str) and (k in ev["name"] or ev["name"] in k)),
            None)
        if name is None:
            continue
        args = ev.get("args") or {}
        got = per_name.setdefault(name, {"kernel": name, "calls": 0})
        got["calls"] += 1
        for key, ours in LAUNCH_ARGS:
            if key not in args:
                continue
            value = args[key]
            if ours not in got:
                got[ours] = value
            elif got[ours] != value:
                seen = got.setdefault("varies", {}).setdefault(ours, [got[ours]])
                if value not in seen:
                    seen.append(value)
    return [per_name[n] for n in dict.fromkeys(kernel_names) if n in per_name]


def launch_api_segments(trace: dict, flush_name: str) -> list[list[tuple[str, float]]]:
    """Per flushed call of an exported chrome trace (its kernel events in start order, each call starting at a
    flush kernel), the host API call that launched each of the call's kernels but the harness's: CUPTI's driver
    or runtime record (`cuLaunchKernel`, `cuLaunchKernelEx`, `cudaLaunchKernel`, ...) linked to the kernel by its
    correlation id, as (API name, us spent in it). A kernel with no such record adds nothing."""
    apis: dict = {}
    kernels = []
    for ev in (trace or {}).get("traceEvents") or []:
        if not isinstance(ev, dict) or ev.get("ph") not in ("X", None):
            continue
        cat, corr = str(ev.get("cat", "")).lower(), (ev.get("args") or {}).get("correlation")
        if cat in ("cuda_driver", "cuda_runtime") and corr is not None:
            apis[corr] = (str(ev.get("name")), float(ev.get("dur") or 0.0))
        elif cat == "kernel":
            kernels.append(ev)
    segs: list[list[tuple[str, float]]] = []
    for ev in sorted(kernels, key=lambda e: float(e.get("ts") or 0.0)):
        name = str(ev.get("name", ""))
        if flush_name in name:
            segs.append([])
        elif segs and not _harness(name):
            api = apis.get((ev.get("args") or {}).get("correlation"))
            if api is not None:
                segs[-1].append(api)
    return segs


def launch_api_summary(calls: list[tuple[str, float]]) -> dict:
    """(API name, us) pairs of one side's timed calls -> per API name its median us and how many calls."""
    per: dict[str, list[float]] = {}
    for name, us in calls:
        per.setdefault(name, []).append(us)
    return {name: {"median_us": round(statistics.median(v), 3), "calls": len(v)} for name, v in sorted(per.items())}


FLUSH_NAME = "bitwise_not"
# distinct input sets one timed configuration cycles through (memory: a row keeps them all on the device)
INPUT_SETS = 20
# Device work that belongs to the harness, never to a side: output poisoning (fill).
HARNESS_KERNELS = ("fill",)


def _harness(name: str) -> bool:
    low = name.lower()
    return any(k in low for k in HARNESS_KERNELS)


def rounds_within(call_ms: float, reps: int, streams: int = len(SIDE_STREAMS), budget_s: float = ROW_BUDGET_S) -> int:
    """The rounds a configuration is timed over: `reps`, unless a round (`streams` calls of `call_ms`, the slower
    side's device time per call) would take more than its share of `budget_s`; then as many as fit, never fewer
    than MIN_ROUNDS (nor than reps), or MIN_ROUNDS_SLOW once a round takes over SLOW_ROUND_MS. A 150 ms GEMM's
    median over 10 rounds is steadier than a 5 us kernel's over 50, and 50 rounds of it would take half a device
    call; a 930 ms one's over 5 rounds still repeats within 0.1 % (H200, cutile-rs paper GEMMs)."""
    if call_ms <= 0 or reps <= MIN_ROUNDS:
        return reps
    floor = MIN_ROUNDS if streams * call_ms <= SLOW_ROUND_MS else MIN_ROUNDS_SLOW
    return max(floor, min(reps, int(budget_s * 1000.0 / (streams * call_ms))))


@dataclass(frozen=True)
class RowPlan:
    """How many calls of each kind one stage-E configuration makes: warm-up calls per side, timed rounds, and
    host-time calls per side (`host_times` makes them twice: after a synchronise each, and back to back)."""
    warmup: int
    rounds: int
    host_calls: int


def plan_row(row: dict, call_ms: float, warmup: int, reps: int) -> RowPlan:
    """A configuration's calls within its device-time budget (`call_ms`: the slower side's device time per call).
    Rounds as `rounds_within` says; warm-up and host-time calls each within SIDE_BUDGET_MS a side, at least one
    warm-up call (a 900 ms kernel warms the clocks itself) and MIN_HOST_CALLS host calls. Before, a 930 ms GEMM
    spent 52 s on one configuration, 20 of them in 10 warm-up and 10 host calls a side, and its pack was killed
    at its limit with two configurations of six timed. The row keeps the counts and says when any is cut."""
    rounds = rounds_within(call_ms, reps)
    host = min(30, rounds)
    warm = warmup
    if call_ms > 0:
        fit = int(SIDE_BUDGET_MS / call_ms)
        warm = max(min(1, warmup), min(warmup, fit))
        host = max(min(MIN_HOST_CALLS, host), min(host, fit))
    row["rounds"] = rounds
    cut = [f"{n} {what}, not {full}" for n, full, what in ((rounds, reps, "timed rounds"),
                                                            (warm, warmup, "warm-up calls a side"))
           if n < full]
    if cut:
        row["flags"].append(f"{'; '.join(cut)}: one call takes {call_ms:.1f} ms of device time "
                            f"({ROW_BUDGET_S:g} s a configuration)")
    return RowPlan(warm, rounds, host)


def learn_call(call, flusher) -> tuple[list[str], float]:
    """One traced call after an L2 flush: the kernel names it launched and its device time in ms, the harness's
    own kernels left out (what a stage-E row expects of each call, and how slow one is)."""
    def one(i):
        flusher()
        call()
    segs = _segments(_profile(one, 1))
    mine = [(d, n) for _, d, n in (segs[0] if segs else []) if not _harness(n)]
    return [n for _, n in mine], sum(d for d, _ in mine) / 1000.0


def phase_timer(phases: dict):
    """lap(name): the wall time since the previous lap (or this call), added to phases[name] in s."""
    mark = [time.perf_counter()]

    def lap(name: str) -> None:
        now = time.perf_counter()
        phases[name] = round(phases.get(name, 0.0) + now - mark[0], 3)
        mark[0] = now
    return lap


def port_host_times(library, call, sync, n: int = 30) -> dict:
    """`host_times` of a port call, with how many of the port's launches in those calls took the library's direct
    path (`direct`, ffi_direct.rs) and, when the library refused to record one, its note on why: a port call
    slower than expected says here whether it went through cutile's launcher instead."""
    stats = getattr(library, "fast_stats", None)
    prof = getattr(library, "profile", None)
    before = stats() if stats is not None else None
    split = prof() if prof is not None else None  # TILEPORT_FFI_PROFILE=1 only
    out = host_times(call, sync, n)
    if split is not None:
        out["library_ns"] = library_split(split, prof())
    if before is None:  # a library without the direct path
        return out
    after = stats()
    out["direct"] = after["direct"] - before["direct"]
    if any(after.get(k, 0) > before.get(k, 0) for k in ("refused", "driver_refused")):
        out["direct_note"] = after.get("note", "")
    return out


def library_split(before: dict, after: dict) -> dict:
    """The library's own split of the launches made between two `PortLibrary.profile()` readings, in ns per
    launch: through cutile (`decide`, `prepare`, `launch`, `total`) and on the direct path (`direct`, `find`,
    `driver`); with the counts (`slow_launches`, of them `cold_launches`, `direct_launches`, `direct_ctx_sets`).
    Stage E's host rows and the drafts' host benchmark (benchmarks/gpu_host_call.py) both keep it."""
    d = {k: after[k] - before[k] for k in after}
    slow, fast = d["warm"] + d["cold"], d["direct"]
    out = {"slow_launches": slow, "cold_launches": d["cold"], "direct_launches": fast,
           "direct_ctx_sets": d.get("direct_ctx_sets", 0)}
    for k in ("decide_ns", "prepare_ns", "launch_ns", "total_ns"):
        out[k.removesuffix("_ns")] = round(d[k] / slow) if slow else 0
    for k, name in (("direct_ns", "direct"), ("direct_find_ns", "find"), ("direct_driver_ns", "driver")):
        out[name] = round(d[k] / fast) if fast else 0
    return out


def host_times(call, sync, n: int = 30) -> dict:
    """Median wall time of one call from Python (host work + launch), in us, over n warm calls: each after a
    synchronise, until it returns (`return_us`) and until a synchronise after it ends (`call_us`); and n more calls
    back to back, as a program issuing launches in a row makes them, each until it returns (`burst_us`), one
    synchronise after the last.

    The two differ on a host whose CPU idles while it waits: after a synchronise that waited for a long kernel,
    the next call runs on a cold core (on an H100 host, the library's own record lookup took 0.2 us after a 14 us
    GEMM and 1.8 us after a 99 ms one), so `return_us` grows with the kernel before it, and more for the side that
    runs more instructions; back to back, each call follows the previous one's return."""
    call()
    sync()
    ret, full, burst = [], [], []
    for _ in range(n):
        sync()
        t0 = time.perf_counter()
        call()
        t1 = time.perf_counter()
        sync()
        ret.append((t1 - t0) * 1e6)
        full.append((time.perf_counter() - t0) * 1e6)
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        burst.append((time.perf_counter() - t0) * 1e6)
    sync()
    return {"call_us": round(statistics.median(full), 2), "return_us": round(statistics.median(ret), 2),
            "burst_us": round(statistics.median(burst), 2), "calls": n}


class Flusher:
    def __init__(self, torch):
        self.buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")

    def __call__(self):
        self.buf.bitwise_not_()


def side_streams(call) -> list[tuple]:
    """The four streams a stage-E row times (SIDE_STREAMS): the reference, the port, the reference again and the
    port again; `call(side)` gives that side's call(r). Listed so that, in `time_rotating`'s order, sides alternate
    call by call: every timed call follows one of the other side, and the two streams of a side apart are its A/A
    spread."""
    return [(label, label.removesuffix("_again"), call(label.removesuffix("_again"))) for label in SIDE_STREAMS]


def time_rotating(streams, expect: dict[str, list[str]], rounds: int, flusher, check=None, per_profile: int = 10,
                  profile=None):
    """Device time of several streams of calls timed together, so that whatever drifts over a row (clocks,
    temperature, what ran before) lands on every stream alike.

    `streams`: (label, side, call) with call(r) making round r's call and returning its output; `expect`: side ->
    the kernel names one call of that side launches (a side timed twice is two streams of it: their two medians
    apart are the A/A spread). Round r calls every stream once, in list order rotated by r (by 2r for an even
    number of streams, so that `side_streams`' alternation carries on from round to round), each call after an
    L2 flush. What ran just before a call matters: on an H100 a reference call after a port call took 0.25 % longer
    than one after a reference call, and with three streams (ref, port, ref again) the port always followed the
    reference, which favoured the reference by about as much as the whole port/ref geomean was above 1. CUPTI
    records per_profile rounds at a time, each record led by one untimed call of the stream before its first in
    that order (a record's first call otherwise follows nothing and ran 0.4-1 % slower); then `check(label, r, out)`
    (when given) judges each timed output of those calls, which are then dropped.

    Returns label -> {"samples": ms per call, "problems": [...], "gaps": idle us before the call's first kernel,
    "bad": outputs check refused}, "launch" -> side -> CUPTI's launch attributes (or the export's error), and
    "launch_api" -> side -> the host API call that launched its kernels in the timed calls, per API name its median
    us (`launch_api_summary`; CUPTI's own record: both sides under the same tracing).
    `profile` stands in for `_profile` (a test's fake trace: CI has no GPU)."""
    profile = profile or _profile
    n = len(streams)
    step = 1 if n % 2 else 2 % n
    res = {label: {"samples": [], "problems": [], "gaps": [], "bad": 0} for label, _, _ in streams}
    traces: dict[str, list] = {side: [] for _, side, _ in streams}
    api_calls: dict[str, list] = {side: [] for _, side, _ in streams}
    errors: dict[str, str] = {}
    for first in range(0, rounds, per_profile):
        lead = streams[((first - 1) * step + n - 1) % n]  # the call before this record's first, in the order
        order = [(r, streams[(r * step + k) % n]) for r in range(first, min(rounds, first + per_profile))
                 for k in range(n)]
        outs: list = []

        def one(j):
            flusher()
            if j == 0:
                lead[2](first)
                return
            r, (label, _, call) = order[j - 1]
            outs.append(call(r))

        events, exported = profile(one, len(order) + 1, trace=True)
        segs = _segments(events, with_gap=True)[1:]
        if len(segs) != len(order):
            for label in res:
                res[label]["problems"].append(f"{len(segs)} flushed segments in the trace after the lead call, "
                                              f"{len(order)} calls timed")
            return {**res, "launch": {}}
        for j, (gap, seg) in enumerate(segs):
            r, (label, side, _) = order[j]
            names = expect[side]
            mine = [d for _, d, name in seg if name in names]
            other = [name for _, _, name in seg if name not in names and not _harness(name)]
            if len(mine) != len(names):
                res[label]["problems"].append(f"call {r}: {len(mine)} of the {len(names)} expected kernels in the trace")
            if other:
                res[label]["problems"].append(f"call {r}: unexpected device work {sorted(set(other))[:3]}")
            res[label]["samples"].append(round(sum(mine) / 1000.0, 6))
            if gap is not None:
                res[label]["gaps"].append(gap)
        if isinstance(exported, dict):
            api_segs = launch_api_segments(exported, FLUSH_NAME)
            if len(api_segs) == len(order) + 1:  # the lead call's, then one per timed call in `order`
                for (r, (label, side, _)), got in zip(order, api_segs[1:]):
                    api_calls[side] += got
        for side in traces:
            if isinstance(exported, dict):
                names = set(expect[side])
                traces[side] += [ev for ev in exported.get("traceEvents") or [] if isinstance(ev, dict)
                                 and str(ev.get("cat", "")).lower() == "kernel" and ev.get("name") in names]
            else:
                errors[side] = exported
        if check is not None:
            for (r, (label, _, _)), out in zip(order, outs):
                if not check(label, r, out):
                    res[label]["bad"] += 1
        del outs
    launch = {side: errors[side] if side in errors else launch_attributes({"traceEvents": evs}, expect[side])
              for side, evs in traces.items()}
    launch_api = {side: launch_api_summary(got) for side, got in api_calls.items() if got}
    return {**res, "launch": launch, "launch_api": launch_api}


def fold_timed(row: dict, timed: dict) -> None:
    """A `time_rotating` run of `side_streams` ("ref", "port", "ref_again", "port_again"; the "_again" ones may be
    missing) into a stage-E row: launch attributes per side (an export error in `launch_errors`), the host API
    call that launched each side's kernels (`launch_api_us`, where the trace had it), the idle gap before each
    side's kernel, the problems as flags (the row then failed), else every sample and the medians of
    each side's streams pooled, and per side timed twice its A/A spread (`ref_again`, `port_again`)."""
    for side, got in timed["launch"].items():
        row.setdefault("launch", {})[side] = [] if isinstance(got, str) else got
        if isinstance(got, str):
            row.setdefault("launch_errors", {})[side] = got
    if timed.get("launch_api"):
        row["launch_api_us"] = timed["launch_api"]
    labels = [label for label in SIDE_STREAMS if label in timed]
    for label in labels:
        got = timed[label]
        side = label.removesuffix("_again")
        if got["gaps"]:
            row.setdefault("idle_gap_us", {}).setdefault(side, []).extend(got["gaps"])
        problems = got["problems"] + ([f"{got['bad']} timed outputs do not match the reference"] if got["bad"] else [])
        if problems:
            row["flags"].append(f"{side}{' (timed again)' if label != side else ''}: " + "; ".join(problems[:3]))
            row["failed"] = True
    for side, gaps in (row.get("idle_gap_us") or {}).items():
        row["idle_gap_us"][side] = statistics.median(gaps)
    if not row.get("failed"):
        for side in ("ref", "port"):
            first, again = timed[side]["samples"], (timed.get(f"{side}_again") or {}).get("samples") or []
            row[f"{side}_samples"], row[f"{side}_ms"] = first + again, statistics.median(first + again)
            if again:
                row[f"{side}_again"] = {"first_ms": statistics.median(first), "again_ms": statistics.median(again),
                                        "spread": statistics.median(again) / statistics.median(first)}


def _segments(events, flush_name=FLUSH_NAME, with_gap: bool = False):
    """Split device activity into one list per timed call: each call starts with a flush kernel. with_gap: each
    list comes as (gap, list), gap the idle time (us) between the end of the harness work before the call's first
    kernel (the flush, the poisoning fill) and that kernel's start: how long the GPU waited for the launch path."""
    segs, cur, prev_end = [], None, None
    for start, dur, name in events:
        if flush_name in name:
            cur = [None, []]
            segs.append(cur)
        elif cur is not None:
            if cur[0] is None and not _harness(name) and prev_end is not None:
                cur[0] = round(max(0.0, start - prev_end), 3)
            cur[1].append((start, dur, name))
        prev_end = max(prev_end or start + dur, start + dur)
    return [tuple(seg) for seg in segs] if with_gap else [c for _, c in segs]


def measure_hw(torch, flusher) -> dict:
    """The device's copy bandwidth and GEMM FLOP/s measured here, and a check that the L2 flush works."""
    hw: dict = {}

    def per_call(fn, n=10):
        """Device time of each call (all its kernels), calls separated by flushes."""
        def one(i):
            flusher()
            fn()
        return [sum(d for _, d, name in seg if not _harness(name)) for seg in _segments(_profile(one, n))]

    n = 1 << 28  # 1 GiB of float32
    src = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    times = per_call(lambda: dst.copy_(src))
    if times:
        hw["copy_gbps"] = round(2 * n * 4 / (statistics.median(times) * 1e-6) / 1e9, 1)
    del src, dst
    for dt in ("float16", "bfloat16"):
        m = 8192
        a = torch.randn(m, m, device="cuda", dtype=getattr(torch, dt))
        b = torch.randn(m, m, device="cuda", dtype=getattr(torch, dt))
        torch.matmul(a, b)
        gemm = per_call(lambda: torch.matmul(a, b))
        if gemm:
            hw[f"gemm_tflops_{dt}"] = round(2 * m**3 / (statistics.median(gemm) * 1e-6) / 1e12, 1)
    # L2 flush check: read 16 MB (fits in L2) warm, then after each flush.
    x = torch.empty(4 << 20, dtype=torch.float32, device="cuda").uniform_()
    x.sum()

    def warm(i):
        x.sum()

    def cold(i):
        flusher()
        x.sum()

    wev = [d for _, d, name in _profile(warm, 30) if "reduce" in name.lower()]
    cev = [d for s in _segments(_profile(cold, 30)) for _, d, name in s if "reduce" in name.lower()]
    if wev and cev:
        w, c = statistics.median(wev), statistics.median(cev)
        hw["flush"] = {"warm_us": round(w, 2), "cold_us": round(c, 2), "ratio": round(c / w, 2),
                       "verified": c > 1.15 * w}
    else:
        hw["flush"] = {"verified": False, "error": "no reduction kernel in the trace"}
    return hw


# ----------------------------------------------------------------------------------------------- the run


class HostRun:
    def __init__(self, pack_dir: Path, out: Path):
        self.dir = pack_dir
        self.gate = json.loads((pack_dir / "gate.json").read_text())
        self.out = out
        self.dumps: BytecodeDumps | None = None  # main() turns them on before cuda.tile is imported
        self.results: dict = {"gate": {k: self.gate.get(k) for k in ("conversion_id", "commit", "op", "created_at")},
                              "env_missing": None, "cases": [], "perf": {"rows": []}, "started_at": time.time()}

    def save(self):
        self.results["updated_at"] = time.time()
        tmp = self.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.results, indent=1, default=str))
        tmp.replace(self.out)

    def env(self) -> str | None:
        """None when everything a run needs is here, else what is missing and how to fix it."""
        try:
            import torch
        except ImportError:
            return "torch: not importable on this host (pip install torch with CUDA)"
        if not torch.cuda.is_available():
            return "GPU: torch sees no CUDA device (check the driver, nvidia-smi, CUDA_VISIBLE_DEVICES)"
        try:
            import cuda.tile  # noqa: F401
        except ImportError as e:
            return f"cuda.tile: not importable ({e}); pip install cuda-tile"
        tileiras = os.environ.get("CUTILE_TILEIRAS_PATH") or shutil.which("tileiras")
        if not tileiras or not os.access(tileiras, os.X_OK):
            return "tileiras: not found (put tileiras >= 13.3 on PATH or set CUTILE_TILEIRAS_PATH)"
        os.environ.setdefault("CUTILE_TILEIRAS_PATH", tileiras)
        if self.dumps is not None:
            self.dumps.enable_port(os.environ["CUTILE_TILEIRAS_PATH"])
        for var in ("CUDA_HOME", "CUDA_PATH"):
            if os.environ.get(var):
                return (f"{var}={os.environ[var]} is set: tileiras would use that CUDA's ptxas/libnvvm and fail "
                        f"with rc 5 if it is older; unset {var}")
        self.results["env"] = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                               "capability": list(torch.cuda.get_device_capability(0)), "tileiras": tileiras}
        return None

    def load(self):
        import cuda.tile as ct

        sys.path.insert(0, str(self.dir))
        import tp_correctness as C  # packed beside this file

        self.C, self.ct = C, ct
        so = self.dir / self.gate["library"]
        target = Path(tempfile.mkdtemp(prefix="tp-gate-")) / "libport.so"
        with lzma.open(so) as f, open(target, "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)
        self.library = PortLibrary(target)
        self.library.dumps = self.dumps
        if self.library.abi != self.gate["abi"]:
            raise PortError(f"library ABI {self.library.abi} != gate ABI {self.gate['abi']}", "host")
        self.module = C.load_module(self.dir / self.gate["op_file"])
        self.wrapper = getattr(self.module, self.gate["op"])
        self.variants = self.module.check_variants() if callable(getattr(self.module, "check_variants", None)) else [{}]

    def _call(self, side: str, inputs: dict, variant: dict):
        if side == "ref":
            rec = LaunchRecorder(self.ct.launch)
            with _Patched(self.ct, self.module, rec):
                out = self.wrapper(**inputs, **variant)
            return out, rec.launches
        launcher = PortLauncher(self.library)
        with _Patched(self.ct, self.module, launcher):
            out = self.wrapper(**inputs, **variant)
        return out, launcher.calls

    def correctness(self, dtype: str, shape: dict, variant: dict) -> dict:
        import torch

        C = self.C
        atol, rtol = self.gate["tolerances"].get(dtype, C.FALLBACK_TOLERANCES.get(dtype, (1e-2, 1e-2)))
        label = ",".join(f"{k}={v}" for k, v in shape.items()) + "".join(f" {k}={v}" for k, v in variant.items())
        case = {"name": f"{self.gate['op']} {dtype} [{label}]", "dtype": dtype, "shape": shape, "variant": variant,
                "status": "FAIL", "max_abs_err": None, "fail_class": None, "message": "", "atol": atol, "rtol": rtol}
        seed = C.case_seed(self.gate["op"], dtype, shape, variant)
        try:
            inputs = self.module.make_inputs(dict(shape), dtype, device="cuda", seed=seed)
            expected = C._outputs(self.module.reference(**inputs, **variant))
            with C.poisoned_allocations(torch):
                ref_out, launches = self._call("ref", inputs, variant)
            torch.cuda.synchronize()
            ref_out = C._outputs(ref_out)
        except Exception as exc:
            case.update(fail_class=classify_message(str(exc), "env"),
                        message=f"the reference could not run: {C._short_error(exc)}")
            return case
        sanity = [C.compare(o.double(), e.double(), atol, rtol) for o, e in zip(ref_out, expected)]
        case["reference_vs_torch"] = "ok" if all(s.ok for s in sanity) else "; ".join(s.reason for s in sanity if not s.ok)
        case["reference_launches"] = [l["kernel"] for l in launches]
        t0 = time.perf_counter()
        try:
            with C.poisoned_allocations(torch) as poisoned:
                got, calls = self._call("port", inputs, variant)
            torch.cuda.synchronize()
        except PortError as exc:
            case.update(fail_class=exc.fail_class, message=str(exc)[:1500])
            return case
        except Exception as exc:  # a device fault surfaces at the synchronise
            msg = C._short_error(exc)
            case.update(fail_class=classify_message(msg, "kernel"), message=f"port run failed: {msg}")
            return case
        case["port_seconds"] = round(time.perf_counter() - t0, 4)
        case["port_launches"] = [c["entry"] + "<" + ",".join(c["generics"]) + ">" for c in calls]
        case["poisoned"] = poisoned[0]
        got = C._outputs(got)
        if len(got) != len(ref_out):
            case.update(fail_class="host", message=f"{len(got)} outputs, the reference has {len(ref_out)}")
            return case
        if len(calls) != len(launches):
            case.update(fail_class="host", message=f"the port made {len(calls)} launches, the reference {len(launches)}")
            return case
        worst = None
        for i, (o, r) in enumerate(zip(got, ref_out)):
            if o.dtype != r.dtype:
                case.update(fail_class="host", message=f"output {i} dtype {o.dtype} != reference {r.dtype}")
                return case
            c = C.compare(o.double(), r.double(), atol, rtol)
            if worst is None or not c.ok or (c.max_abs_err or 0) > (worst.max_abs_err or 0):
                worst = c if (worst is None or worst.ok) else worst
        case["max_abs_err"] = worst.max_abs_err
        case["rel_l2_err"] = worst.rel_l2_err
        if worst.ok:
            case.update(status="PASS", message="ok")
        else:
            case.update(fail_class="kernel", message=worst.reason)
        return case

    def perf(self, dtype: str, shape: dict, variant: dict, hw: dict) -> dict:
        import torch

        C = self.C
        p = self.gate["perf"]
        warmup, reps = int(p["warmup"]), max(20, int(p["repetitions"]))
        atol, rtol = self.gate["tolerances"].get(dtype, C.FALLBACK_TOLERANCES.get(dtype, (1e-2, 1e-2)))
        label = ",".join(f"{k}={v}" for k, v in shape.items()) + "".join(f" {k}={v}" for k, v in variant.items())
        row = {"config": f"{dtype} [{label}]", "dtype": dtype, "shape": shape, "variant": variant, "flags": [],
               "ref_ms": None, "port_ms": None, "ratio": None, "ref_samples": [], "port_samples": []}
        seed = C.case_seed(self.gate["op"], dtype, shape, variant)
        # where a configuration's wall time goes (a device run is short: this says what to cut next)
        lap = phase_timer(row.setdefault("phase_s", {}))
        # fresh inputs for up to INPUT_SETS rounds, then again from the first (each call reads after an L2 flush)
        sets = [self.module.make_inputs(dict(shape), dtype, device="cuda", seed=seed + 1 + i)
                for i in range(min(reps, INPUT_SETS))]
        lap("inputs")
        # what each side launches: the launch count from a recorded call, the kernel names from its trace
        before = self.dumps.reference_files() if self.dumps is not None else set()
        _, ref_launches = self._call("ref", sets[0], variant)
        _, port_calls = self._call("port", sets[0], variant)
        lap("first_calls")
        # the reference bytecode this configuration's launches compiled (or an earlier one of the same did)
        ref_files = (self.dumps.compiled_since(before, tuple(specialisation(*l["launched"]) for l in ref_launches))
                     if self.dumps is not None else None)
        launched = {"ref": [l["kernel"] for l in ref_launches], "port": [c["entry"] for c in port_calls]}
        expect: dict[str, list[str]] = {}
        call_ms = 0.0  # the slower side's device time per call, from the traces below
        for side in ("ref", "port"):
            names, ms = learn_call(lambda side=side: self._call(side, sets[0], variant), self.flusher)
            call_ms = max(call_ms, ms)
            expect[side] = names
            row[f"{side}_kernels"] = names
            if len(names) != len(launched[side]):
                row["flags"].append(f"{side}: {len(names)} kernels in the trace for {len(launched[side])} launches "
                                    f"({names[:4]})")
                row["failed"] = True
            for want in launched[side]:
                if not any(want in n for n in names):
                    row["flags"].append(f"{side}: no kernel named like {want} in the trace ({names[:4]})")
        lap("learn_profiles")
        # the bytecode each side's JIT compiled for this configuration (issue 34: the IR the reference really runs)
        row["bytecode"] = bytecode_evidence(self.dumps, self.library, expect["ref"], port_calls,
                                            self.results.setdefault("bytecode", {}), ref_files)
        lap("bytecode")
        if row.get("failed"):
            return row
        nbytes = sum(l["bytes"] for l in ref_launches)
        flops = self.module.flops(dict(shape)) if callable(getattr(self.module, "flops", None)) else None
        # the reference and the port, each timed twice, round by round with the sides alternating call by call
        # (one L2 flush before each call): a drift of the card over the row lands on all four streams alike, no
        # side gains from following itself, and each side's two streams apart are its A/A spread, below which
        # port/ref is noise (METHOD: time the same version twice). Every timed output is checked against torch's
        # reference for its inputs.
        plan = plan_row(row, call_ms, warmup, reps)
        for side in ("ref", "port"):
            for i in range(plan.warmup):
                self._call(side, sets[i % len(sets)], variant)
        torch.cuda.synchronize()
        lap("warmup")

        def call(side):
            def one(r):
                with C.poisoned_allocations(torch):
                    out, _ = self._call(side, sets[r % len(sets)], variant)
                return out
            return one

        def check(label, r, out) -> bool:
            ref = C._outputs(self.module.reference(**sets[r % len(sets)], **variant))
            return all(C.compare(o.double(), x.double(), atol, rtol).ok for o, x in zip(C._outputs(out), ref))

        timed = time_rotating(side_streams(call), expect, plan.rounds, self.flusher, check)
        lap("timed")
        fold_timed(row, timed)
        row["host_us"] = {  # host wall time per call from Python, beside device time
            "ref": host_times(lambda: self._call("ref", sets[0], variant), torch.cuda.synchronize, n=plan.host_calls),
            "port": port_host_times(self.library, lambda: self._call("port", sets[0], variant), torch.cuda.synchronize,
                                    n=plan.host_calls)}
        lap("host_times")
        if row["ref_ms"] and row["port_ms"]:
            row["ratio"] = row["port_ms"] / row["ref_ms"]
            if max(row["ref_ms"], row["port_ms"]) * 1000 < TINY_US:  # both sides (reports.is_tiny judges it)
                row["flags"].append(f"tiny: both sides under {TINY_US:g} us, not in the geomean unless over "
                                    "config_max")
                row["tiny"] = True
            row["hw"] = {}
            for side in ("ref", "port"):
                secs = row[f"{side}_ms"] / 1000
                entry = {"gbps": round(nbytes / secs / 1e9, 1)}
                if hw.get("copy_gbps"):
                    entry["bw_pct"] = round(100 * entry["gbps"] / hw["copy_gbps"], 1)
                if flops:
                    entry["tflops"] = round(flops / secs / 1e12, 1)
                    peak = hw.get(f"gemm_tflops_{dtype}")
                    if peak:
                        entry["flop_pct"] = round(100 * entry["tflops"] / peak, 1)
                row["hw"][side] = entry
        else:
            row["failed"] = True
        del sets
        return row

    def missing_env(self, message: str) -> int:
        """This host cannot judge the pack: the reason goes into results.json and, as one line, to stderr; exit 3."""
        self.results["env_missing"] = message
        self.save()
        print(f"not judged here: {message}", file=sys.stderr, flush=True)
        return 3

    def run(self, perf: bool = True) -> int:
        missing = self.env()
        if missing:
            return self.missing_env(missing)
        try:
            self.load()
        except PortError as e:
            self.results["env_missing"] = None
            self.results["load_error"] = {"fail_class": e.fail_class, "message": str(e)}
            self.save()
            return 1
        except OSError as e:
            return self.missing_env(f"the port library does not load on this host: {e}")
        import torch

        configs = [(d, s, v) for d in self.gate["dtypes"] for s in self.gate["shapes"] for v in self.variants]
        for d, s, v in configs:
            t0 = time.perf_counter()
            case = self.correctness(d, s, v)
            self.results["cases"].append(case)
            print(f"{case['status']} {case['name']}: {case['message'][:300]} ({time.perf_counter() - t0:.1f} s)",
                  flush=True)
            self.save()
            if case["fail_class"] == "env":
                return self.missing_env(case["message"])
        if not perf:
            return 0 if all(c["status"] == "PASS" for c in self.results["cases"]) else 1
        self.flusher = Flusher(torch)
        hw = measure_hw(torch, self.flusher)
        self.results["perf"]["hw"] = hw
        print(f"hardware: {json.dumps(hw)}", flush=True)
        self.save()
        for case, (d, s, v) in zip(self.results["cases"], configs):
            if case["status"] != "PASS":
                continue
            try:
                row = self.perf(d, s, v, hw)
            except Exception as exc:
                row = {"config": f"{d} {s} {v}", "failed": True, "flags": [f"measurement failed: {self.C._short_error(exc)}"],
                       "ref_ms": None, "port_ms": None, "ratio": None, "ref_samples": [], "port_samples": []}
            self.results["perf"]["rows"].append(row)
            print(f"PERF {self.gate['op']} {row['config']}: ref {row['ref_ms']} ms port {row['port_ms']} ms "
                  f"ratio {row['ratio'] and round(row['ratio'], 3)} {row['flags']} "
                  f"[ref timed again / first: {round(row['ref_again']['spread'], 3) if row.get('ref_again') else None}] "
                  f"[idle gap before the kernel us: {row.get('idle_gap_us')}] [s: {row.get('phase_s')}]", flush=True)
            self.save()
        return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="judge a packed port against its cuTile Python reference on this GPU")
    ap.add_argument("pack_dir")
    ap.add_argument("--out", default=None, help="results file (default PACK_DIR/results.json)")
    ap.add_argument("--no-perf", action="store_true", help="correctness only")
    ap.add_argument("--project", default=None, help="the op's project checkout on this host (default: the pack's "
                    "project/ copy); for packs with the op's tests")
    ap.add_argument("--no-bytecode", action="store_true", help="do not keep the bytecode each side's JIT compiled")
    args = ap.parse_args(argv)
    pack_dir = Path(args.pack_dir).resolve()
    runner = HostRun(pack_dir, Path(args.out) if args.out else pack_dir / "results.json")
    if not args.no_bytecode:  # before cuda.tile is imported: it reads CUDA_TILE_DUMP_BYTECODE then
        runner.dumps = BytecodeDumps(Path(tempfile.mkdtemp(prefix="tp-bytecode-")))
        runner.dumps.enable_reference()
    try:
        if runner.gate.get("tests"):  # format 2: the op's own tests judge (tp_hosttests.py, packed beside this)
            sys.path.insert(0, str(pack_dir))
            import tp_hosttests

            rc = tp_hosttests.run(runner, perf=not args.no_perf, project=args.project)
        else:
            rc = runner.run(perf=not args.no_perf)
    except Exception as exc:
        runner.results["runner_error"] = "".join(traceback.format_exception(exc))[-3000:]
        runner.save()
        rc = 1
    runner.results["finished_at"] = time.time()
    runner.save()
    return rc


if __name__ == "__main__":
    sys.exit(main())
