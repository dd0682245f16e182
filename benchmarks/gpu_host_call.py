"""Host cost of one call, port vs reference, per op and configuration, on a GPU host (issue 34 item 3).

For every packed gate (`scripts/gpu-gate-drafts.sh pack DEST` or `gpu-gate-ports.sh pack DEST`) and each of its
dtype x shape x variant configurations, with the op module's own inputs (`make_inputs`) (a gate judged by the op's
own tests, `gpu-gate-tests.sh pack`: each launch stage E replays, `bench_replay_gate`):

* op call: the op's host wrapper as a user calls it (its own allocations included), with `ct.launch` being cuTile
  Python's (reference) or the port's library (port): median wall time until the call returns (`ret`, what the
  caller's thread pays: Python -> launch -> return) and until a synchronise after it (`sync`, which adds the
  kernel), over --reps calls, each after a synchronise so no call waits on the previous one's queue;
* where an op call's time goes (`split`): before its first launch (the wrapper's own work: allocations, stream),
  in its launches, and after the last one, medians, from stamps a thin shim around each side's `ct.launch` takes
  (the same shim on both sides; these calls are timed apart from the plain ones above);
* launch: the wrapper's launches alone, replayed with the same arguments (`ct.launch(stream, grid, kernel,
  args)` against the port's launcher with the same arguments), median until return;
* back to back (`burst`): op calls made in a row with no synchronise between them, each until it returns (a call
  after a synchronise runs on a core that idled while it waited, slower the longer the wait:
  benchmarks/host_call_cpu.py shows it on any CPU).

The two sides alternate call by call (port then reference, then reference then port), so neither is always the
one measured first or right after the other's kernel; Python's garbage collections during each side's timed calls
are counted (`gc`). Each side is warmed first (JIT compile, the port's first-launch plan). Prints one line per
configuration and, per op, the median over its configurations; exit 0.

    python benchmarks/gpu_host_call.py DEST/gates [--reps 200] [--max-configs N] [--json OUT.json] [--only OP...]
    PATH=/opt/ti/bin:$PATH PYTHONPATH=/tmp/site python3 benchmarks/gpu_host_call.py /tmp/g/packs/OP --json OUT.json
        (a gate judged by its tests, where scripts/gpu-gate-tests.sh unpacked it and installed tileiras)

Runs where the gate runs (torch, cuda.tile, a GPU, tileiras on PATH); it imports the gate's own runner.py.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import json
import lzma
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace


def _load(path: Path, name: str):
    """A gate's module, registered under its name before it runs (importlib's recipe): a dataclass in a module
    with postponed annotations looks its module up in sys.modules while the class is made."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _alternating(sides: dict, sync, reps: int) -> dict:
    """Per side (name -> (context manager factory, fn)): median us until fn returns and until a synchronise after
    it, each call starting on an idle stream, the sides taking turns (their order reversed every round); and how
    many garbage collections ran during each side's timed calls."""
    names = list(sides)
    ret = {n: [] for n in names}
    full = {n: [] for n in names}
    gcs = {n: 0 for n in names}
    current = [None]

    def count(phase, info):
        if phase == "start" and current[0] is not None:
            gcs[current[0]] += 1

    gc.callbacks.append(count)
    try:
        for r in range(reps):
            for n in (names if r % 2 == 0 else names[::-1]):
                enter, fn = sides[n]
                with enter():
                    sync()
                    current[0] = n
                    t0 = time.perf_counter()
                    fn()
                    t1 = time.perf_counter()
                    sync()
                    t2 = time.perf_counter()
                    current[0] = None
                ret[n].append((t1 - t0) * 1e6)
                full[n].append((t2 - t0) * 1e6)
    finally:
        gc.callbacks.remove(count)
    return {n: (statistics.median(ret[n]), statistics.median(full[n]), gcs[n]) for n in names}


def _back_to_back(sides: dict, sync, reps: int) -> dict:
    """Per side (name -> (context manager factory, fn), as `_alternating` takes them): median us until fn returns
    over `reps` calls made back to back (no synchronise between them, as a program issuing calls in a row makes
    them; one after each block), in two blocks per side, the sides' order reversed for the second."""
    names = list(sides)
    ret = {n: [] for n in names}
    for r in range(2):
        for n in (names if r == 0 else names[::-1]):
            enter, fn = sides[n]
            with enter():
                sync()
                for _ in range(max(1, reps // 2)):
                    t0 = time.perf_counter()
                    fn()
                    ret[n].append((time.perf_counter() - t0) * 1e6)
                sync()
    return {n: statistics.median(ret[n]) for n in names}


class _Stamps:
    """A side's `ct.launch` with a stamp as the wrapper's first launch begins and its last one returns."""

    def __init__(self, inner):
        self.inner, self.first, self.last = inner, None, None

    def __call__(self, stream, grid, kernel, args):
        t = time.perf_counter()
        if self.first is None:
            self.first = t
        r = self.inner(stream, grid, kernel, args)
        self.last = time.perf_counter()
        return r


def _split(sides: dict, sync, reps: int) -> dict:
    """Per side (name -> (patch: a launch -> a context where the op's `ct.launch` is it, the side's launch, the op
    call)): medians in us of the op call before its first launch, from there until its last launch returns, and
    after it; the sides taking turns as in `_alternating`."""
    parts = {n: ([], [], []) for n in sides}
    names = list(sides)
    for r in range(reps):
        for n in (names if r % 2 == 0 else names[::-1]):
            patch, launch, fn = sides[n]
            shim = _Stamps(launch)
            with patch(shim):
                sync()
                t0 = time.perf_counter()
                fn()
                t1 = time.perf_counter()
            if shim.first is None:
                continue
            pre, mid, post = parts[n]
            pre.append((shim.first - t0) * 1e6)
            mid.append((shim.last - shim.first) * 1e6)
            post.append((t1 - shim.last) * 1e6)
    return {n: {k: round(statistics.median(v), 2) for k, v in zip(("before", "launches", "after"), parts[n]) if v}
            for n in names}



class _Capture:
    """ct.launch that records each launch's arguments and runs the real one."""

    def __init__(self, real):
        self.real, self.launches = real, []

    def __call__(self, stream, grid, kernel, args):
        self.launches.append((stream, grid, kernel, args))
        return self.real(stream, grid, kernel, args)


def bench_gate(pack_dir: Path, reps: int, max_configs: int = 0, on_row=None) -> list[dict]:
    import torch
    import cuda.tile as ct

    gate = json.loads((pack_dir / "gate.json").read_text())
    R = _load(pack_dir / "runner.py", f"tp_runner_{pack_dir.name}")
    module = _load(pack_dir / gate["op_file"], f"tp_op_{pack_dir.name}")
    lib = R.PortLibrary(_library_copy(pack_dir / gate["library"]))
    wrapper = getattr(module, gate["op"])
    variants = module.check_variants() if callable(getattr(module, "check_variants", None)) else [{}]
    sync = torch.cuda.synchronize
    rows = []
    configs = [(d, sh, v) for d in gate["dtypes"] for sh in gate["shapes"] for v in variants]
    configs = _spread(configs, max_configs)  # evenly over dtypes and shapes
    for dtype, shape, variant in configs:
        label = ",".join(f"{k}={v}" for k, v in shape.items()) + "".join(f" {k}={v}" for k, v in variant.items())
        row = {"op": gate["op"], "config": f"{dtype} [{label}]"}
        inputs = cap = None
        try:
            inputs = module.make_inputs(dict(shape), dtype, device="cuda", seed=0)
            cap = _Capture(ct.launch)
            with R._Patched(ct, module, cap):
                wrapper(**inputs, **variant)  # reference warm-up (JIT) and its launches
            launcher = R.PortLauncher(lib)
            real_launch = ct.launch

            def op_call():
                wrapper(**inputs, **variant)

            with R._Patched(ct, module, launcher):
                wrapper(**inputs, **variant)  # port warm-up (JIT, plans)
            sync()
            before = lib.profile()
            calls = _alternating({"port": (lambda: R._Patched(ct, module, launcher), op_call),
                                  "ref": (contextlib.nullcontext, op_call)}, sync, reps)
            (row["port_ret_us"], row["port_sync_us"], gc_port), (row["ref_ret_us"], row["ref_sync_us"], gc_ref) = \
                calls["port"], calls["ref"]
            replays = _alternating({"port": (contextlib.nullcontext, lambda: [launcher(*l) for l in cap.launches]),
                                    "ref": (contextlib.nullcontext, lambda: [real_launch(*l) for l in cap.launches])},
                                   sync, reps)
            row["port_launch_us"], row["ref_launch_us"] = replays["port"][0], replays["ref"][0]
            burst = _back_to_back({"port": (lambda: R._Patched(ct, module, launcher), op_call),
                                   "ref": (contextlib.nullcontext, op_call)}, sync, reps)
            row["port_burst_us"], row["ref_burst_us"] = burst["port"], burst["ref"]
            after = lib.profile()
            row["gc"] = {"port": gc_port, "ref": gc_ref}
            patch = lambda shim: R._Patched(ct, module, shim)  # noqa: E731
            row["split"] = _split({"port": (patch, launcher, op_call), "ref": (patch, real_launch, op_call)},
                                  sync, reps)
            if before and after:  # TILEPORT_FFI_PROFILE=1: the library's own split, per launch
                row["library_ns"] = R.library_split(before, after)
            row["fast"] = lib.fast_stats()
            if callable(getattr(module, "reference", None)):  # the port's output after the timed calls
                real_empty_like = torch.empty_like  # a NaN-filled output: a launch that wrote nothing fails
                torch.empty_like = lambda *a, **k: real_empty_like(*a, **k).fill_(float("nan"))
                try:
                    with R._Patched(ct, module, launcher):
                        got = wrapper(**inputs, **variant).clone()
                finally:
                    torch.empty_like = real_empty_like
                sync()
                want = module.reference(**inputs, **variant)
                atol, rtol = gate["tolerances"].get(dtype, (1e-2, 1e-2))
                row["output_ok"] = bool(torch.allclose(got.float(), want.float(), atol=atol, rtol=rtol))
            row["launches"] = len(cap.launches)
            launcher.clear()
        except Exception as exc:  # one configuration's failure is a line, not the end of the run
            row["error"] = _one_line(exc)
        _emit(rows, row, on_row)
        del inputs, cap
    return rows


def _library_copy(src: Path) -> Path:
    """The pack's library, decompressed into a fresh temporary directory (`lib/libport.so.xz`; also found where
    gpu-gate-tests.sh left it uncompressed)."""
    so = Path(tempfile.mkdtemp(prefix="tp-hostcall-")) / "libport.so"
    if not src.exists() and src.suffix == ".xz":
        src = src.with_suffix("")
    if src.suffix == ".xz":
        with lzma.open(src) as f, open(so, "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)
    else:
        shutil.copyfile(src, so)
    return so


def _spread(configs: list, n: int) -> list:
    """At most n of `configs`, evenly spread over them (all when n is 0)."""
    if not n or len(configs) <= n:
        return configs
    return [configs[round(i * (len(configs) - 1) / max(1, n - 1))] for i in range(n)]


def load_replay_gate(pack_dir: Path) -> SimpleNamespace:
    """A gate judged by the op's own tests, loaded as its replay child loads it (no GPU needed): its manifest
    (`gate`), runner (`R`), replay module (`P`), the op module and its package prefix, and the port's library."""
    gate = json.loads((pack_dir / "gate.json").read_text())
    sys.path.insert(0, str(pack_dir))  # tp_replay.py imports the pack's runner and tp_testchild by these names
    R = _load(pack_dir / "runner.py", "runner")
    T = _load(pack_dir / "tp_testchild.py", "tp_testchild")
    P = _load(pack_dir / "tp_replay.py", f"tp_replay_{pack_dir.name}")
    return SimpleNamespace(gate=gate, R=R, P=P, module=T.import_op(gate, pack_dir / "project"),
                           prefix=(gate["tests"].get("module") or "").split(".")[0] or None,
                           lib=R.PortLibrary(_library_copy(pack_dir / gate["library"])))


def replay_launch(g: SimpleNamespace, cfg: dict) -> tuple:
    """A configuration's kernel and grid as stage E launches them: found by name in the op's modules, re-hinted
    where the op re-wrapped it (`ct.kernel(fn._pyfunc, num_ctas=2)`)."""
    kernel = g.P.find_kernel(cfg["kernel"], [g.module], g.prefix)
    if kernel is None:
        raise LookupError(f"no kernel named {cfg['kernel']} in the op's modules")
    if cfg.get("hints") and g.R.launch_hints(kernel) != cfg["hints"]:
        kernel = kernel.replace_hints(**cfg["hints"])
    return kernel, g.P.parse_grid(cfg["grid"])


REPLAY_DEVICE_S = 2.0  # device time a replayed configuration's timed calls may take (a 32768^3 GEMM: 100 ms a call)


def bench_replay_gate(pack_dir: Path, reps: int, max_configs: int = 0, on_row=None) -> list[dict]:
    """A gate judged by the op's own tests (`gpu-gate-tests.sh pack`): each configuration stage E replays
    (`perf_configs`), launched as stage E launches it (`tp_replay.py`: the kernel found by name, re-hinted as the op
    re-wrapped it, arguments made from the recorded shapes and dtypes, `ct.launch(stream, grid, kernel, args)`)
    through cuTile Python (reference) and the port's launcher, here in a process CUPTI never traced. Stage E times
    its host calls in the replay child after CUPTI traced that child's device time, and Kineto leaves CUPTI
    attached after a trace unless TEARDOWN_CUPTI=1 (pytorch/pytorch#144455): every driver call pays for it from
    then on, the side that makes more of them more. The op call is the launch itself (no wrapper), so `launch` and
    `call` are the same calls; rows have the keys `bench_gate`'s have."""
    import torch
    import cuda.tile as ct

    g = load_replay_gate(pack_dir)
    gate, lib = g.gate, g.lib
    launcher = g.R.PortLauncher(lib)
    real = ct.launch
    stream = torch.cuda.current_stream()
    sync = torch.cuda.synchronize
    configs = sorted(gate.get("perf_configs") or [], key=lambda c: c.get("bytes") or 0)
    configs = _spread(configs, max_configs)  # evenly over sizes
    rows = []
    for cfg in configs:
        row = {"op": gate["op"], "config": cfg["config"]}
        args = None
        try:
            kernel, grid = replay_launch(g, cfg)
            args, _ = g.P.make_args(cfg, torch, cfg["id"] + 1)

            def ref():
                real(stream, grid, kernel, tuple(args))

            def port():
                launcher(stream, grid, kernel, tuple(args))

            for side in (ref, port, ref, port):  # JIT compile, the port's plan and direct-path record
                side()
            sync()
            t0 = time.perf_counter()
            ref()
            sync()
            n = max(10, min(reps, int(REPLAY_DEVICE_S / 4 / max(time.perf_counter() - t0, 1e-6))))
            before = lib.profile()
            calls = _alternating({"port": (contextlib.nullcontext, port), "ref": (contextlib.nullcontext, ref)},
                                 sync, n)
            (row["port_ret_us"], row["port_sync_us"], gc_port), (row["ref_ret_us"], row["ref_sync_us"], gc_ref) = \
                calls["port"], calls["ref"]
            row["port_launch_us"], row["ref_launch_us"] = row["port_ret_us"], row["ref_ret_us"]
            burst = _back_to_back({"port": (contextlib.nullcontext, port), "ref": (contextlib.nullcontext, ref)},
                                  sync, n)
            row["port_burst_us"], row["ref_burst_us"] = burst["port"], burst["ref"]
            after = lib.profile()
            row["gc"] = {"port": gc_port, "ref": gc_ref}
            if before and after:  # TILEPORT_FFI_PROFILE=1: the library's own split, per launch
                row["library_ns"] = g.R.library_split(before, after)
            row["fast"] = lib.fast_stats()
            row["launches"], row["calls"] = 1, n
            launcher.clear()
        except Exception as exc:  # one configuration's failure is a line, not the end of the run
            row["error"] = _one_line(exc)
        _emit(rows, row, on_row)
        del args
        torch.cuda.empty_cache()
    return rows


def _one_line(exc: Exception) -> str:
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:300]}"


def _emit(rows: list, row: dict, on_row) -> None:
    rows.append(row)
    print(_line(row), flush=True)
    if on_row:
        on_row(row)


def _line(r: dict) -> str:
    if "error" in r:
        return f"{r['op']:<18} {r['config']:<34} ERROR {r['error']}"
    return (f"{r['op']:<18} {r['config']:<34} call ref {r['ref_ret_us']:7.1f} port {r['port_ret_us']:7.1f} us "
            f"({r['port_ret_us'] / r['ref_ret_us']:.2f}x) | +sync ref {r['ref_sync_us']:7.1f} port "
            f"{r['port_sync_us']:7.1f} | launch x{r['launches']} ref {r['ref_launch_us']:6.1f} port "
            f"{r['port_launch_us']:6.1f} us ({r['port_launch_us'] / r['ref_launch_us']:.2f}x)"
            + (f" | back to back ref {r['ref_burst_us']:6.1f} port {r['port_burst_us']:6.1f} us "
               f"({r['port_burst_us'] / r['ref_burst_us']:.2f}x)" if r.get("ref_burst_us") else "")
            + (f" | split us before/launches/after ref {_parts(r['split'].get('ref'))} port "
               f"{_parts(r['split'].get('port'))}" if r.get("split") else "")
            + (f" | gc ref {r['gc']['ref']} port {r['gc']['port']}" if r.get("gc") else "")
            + (f" | in the library, ns per launch: {r['library_ns']}" if r.get("library_ns") else "")
            + (f" | direct path: {r['fast']}" if r.get("fast") else "")
            + (f" | port output {'ok' if r['output_ok'] else 'WRONG'}" if "output_ok" in r else ""))


def _parts(p: dict | None) -> str:
    return "/".join(f"{p[k]:.1f}" for k in ("before", "launches", "after")) if p else "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gates", help="a directory of packed gates (DEST/gates) or one gate directory")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--json", default=None, help="also write every row here")
    ap.add_argument("--max-configs", type=int, default=0, help="at most this many configurations per op (0: all)")
    ap.add_argument("--only", nargs="*", default=None, help="these gates (directory names) only")
    args = ap.parse_args(argv)
    root = Path(args.gates)
    gates = [root] if (root / "gate.json").is_file() else sorted(p for p in root.iterdir() if (p / "gate.json").is_file())
    if args.only:
        gates = [g for g in gates if g.name in args.only]
    import torch

    if not torch.cuda.is_available():
        print("no CUDA GPU visible to torch: nothing measured", flush=True)
        return 3
    rows: list[dict] = []

    def keep(row: dict) -> None:  # written after every row: a run cut short keeps what it measured
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))

    for g in gates:
        try:
            judged_by_tests = bool(json.loads((g / "gate.json").read_text()).get("tests"))
            bench = bench_replay_gate if judged_by_tests else bench_gate
            bench(g, args.reps, args.max_configs, on_row=lambda r: (rows.append(r), keep(r)))
        except Exception as exc:
            print(f"{g.name}: ERROR {_one_line(exc)}", flush=True)
    print("\nper op (median over its configurations): call us ref / port (port/ref) | launch us ref / port (port/ref)")
    for op in dict.fromkeys(r["op"] for r in rows):
        ok = [r for r in rows if r["op"] == op and "error" not in r]
        if not ok:
            continue
        med = {k: statistics.median(r[k] for r in ok) for k in ("ref_ret_us", "port_ret_us", "ref_launch_us",
                                                              "port_launch_us")}
        print(f"{op:<18} call {med['ref_ret_us']:7.1f} / {med['port_ret_us']:7.1f} "
              f"({med['port_ret_us'] / med['ref_ret_us']:.2f}x) | launch {med['ref_launch_us']:6.1f} / "
              f"{med['port_launch_us']:6.1f} ({med['port_launch_us'] / med['ref_launch_us']:.2f}x) "
              f"[{len(ok)} configs]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
