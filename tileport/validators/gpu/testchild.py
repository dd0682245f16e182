"""One side of the op's own tests, in a child process on the GPU host (travels as `tp_testchild.py`; imports only the
standard library, torch, cuda.tile and pytest, plus the gate's `runner.py`, `tp_correctness.py` and `tp_mainblock.py`).

    python tp_testchild.py PACK_DIR --side ref|port --progress FILE [--select FILE] [--lib SO] [--inputs DIR]
                           (--pytest PATH... | --script PATH | --main)

Every `ct.launch` (on cuda.tile and wherever a module holds it) goes through a shim: on the port side a launch of a
kernel under conversion is served by the port (`runner.PortLauncher`), anything else runs as launched; on the
reference side everything runs as launched, and the first launch matching each configuration stage E will time
has its arguments saved (`--inputs`), so E replays what the tests really ran. Floating tensors from
`torch.empty*` are NaN-filled (`tp_correctness.poisoned_allocations`) while each test runs, on both sides.

Progress goes to FILE as JSON lines, flushed at once, so the parent (`tp_hosttests.py`) knows which test is running
when this process hangs or dies: {"ev": "collected", "ids": [...]}, {"ev": "start", "id"}, {"ev": "done", "id",
"outcome": passed|failed|error|skipped, "message", "seconds", "launches", "port_attempts", "port_launches",
"fail_class"}, {"ev": "collect_error", "where", "message"}. After a CUDA error that poisons the context (an illegal
address, a launch failure) the process ends at once so the next test starts in a fresh one.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

STICKY = ("illegal memory access", "illegal address", "unspecified launch failure", "misaligned address",
          "device-side assert", "cuda_error_launch_failed", "an illegal instruction")
MAX_SAVE_BYTES = 1 << 30  # recorded inputs per configuration
MAX_RECORDED = 64  # launches seen in D whose inputs are kept for E when stage A captured none
MAX_RECORDED_BYTES = 8 << 30
LAUNCHES_FILE = "launches.jsonl"


def grid_text(grid) -> str:
    """As stage A's capture writes a grid (`repr(tuple(grid))`)."""
    return repr(tuple(grid)) if isinstance(grid, (tuple, list)) else repr(grid)


def arg_text(a) -> str:
    """As stage A's capture writes an argument: dtype[AxB] for tensors, the value for scalars."""
    import torch

    if isinstance(a, torch.Tensor):
        return f"{str(a.dtype).removeprefix('torch.')}[{'x'.join(str(int(n)) for n in a.shape)}]"
    if isinstance(a, (bool, int, float)):
        return repr(a)
    if a is None:
        return "none"
    return type(a).__name__


def pyfunc_name(kernel) -> str:
    func = getattr(kernel, "_pyfunc", None)
    if func is None:
        ann = getattr(kernel, "_annotated_function", None)
        func = getattr(ann, "pyfunc", kernel)
    return getattr(func, "__name__", str(kernel))


def primary_name(kernel, modules) -> str:
    """The name stage A gives a kernel: the one the op's module binds it to, else its function's."""
    for m in modules:
        for n, v in list(vars(m).items()):
            if v is kernel:
                return n
    return pyfunc_name(kernel)


def config_key(kernel: str, grid: str, args) -> str:
    import hashlib

    return "r" + hashlib.sha1(json.dumps([kernel, grid, list(args)]).encode()).hexdigest()[:16]


def kernel_names(kernel, modules) -> set[str]:
    """The names a kernel is known by: its function's name and the names the op's modules bind it to."""
    names = {pyfunc_name(kernel)}
    for m in modules:
        for n, v in list(vars(m).items()):
            if v is kernel:
                names.add(n)
    return names


def import_op(gate: dict, project: Path):
    """The op module as stage A imported it: by dotted name from its import root, else from its file."""
    t = gate["tests"]
    root = str((project / t["import_root"]).resolve())
    if root not in sys.path:
        sys.path.insert(0, root)
    if t.get("module"):
        return importlib.import_module(t["module"])
    path = project / t["op_file"]
    name = "tileport_op_" + "".join(ch if ch.isalnum() else "_" for ch in path.stem)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class Shim:
    """Stands in for ct.launch for the whole child; counts per test."""

    def __init__(self, real, gate: dict, side: str, lib: str | None, inputs: str | None, progress):
        self.real, self.gate, self.side, self.progress = real, gate, side, progress
        self.kernels = set(gate.get("kernels") or [])
        self.port = None
        if side == "port":
            import runner as R

            self.R = R
            self.port = R.PortLauncher(R.PortLibrary(lib))
        self.inputs = Path(inputs) if inputs else None
        self.wanted = {(c["kernel"], c["grid"], tuple(c["args"])): c["id"] for c in gate.get("perf_configs") or []}
        self.saved: set[int] = set()
        if self.inputs is not None:
            self.saved = {int(p.stem) for p in self.inputs.glob("*.pt") if p.stem.isdigit()}
        self.modules: list = []
        self.recorded: set[str] = set()
        self.cur = self._fresh()

    def _fresh(self) -> dict:
        return {"launches": 0, "port_attempts": 0, "port_launches": 0, "port_error": None}

    def begin(self):
        self.cur = self._fresh()

    def __call__(self, stream, grid, kernel, args, *a, **kw):
        self.cur["launches"] += 1
        names = kernel_names(kernel, self.modules)
        if self.port is not None and names & self.kernels:
            self.cur["port_attempts"] += 1
            try:
                self.port(stream, grid, kernel, args)
            except self.R.PortError as e:
                self.cur["port_error"] = [e.fail_class, str(e)[:1000]]
                raise
            self.cur["port_launches"] += 1
            return None
        if self.inputs is not None:
            if self.wanted:
                self._save(names, grid, args)
            self._record(kernel, grid, args)
        return self.real(stream, grid, kernel, args, *a, **kw)

    def _record(self, kernel, grid, args):
        """Every distinct launch of the reference run, for E when stage A captured none; the inputs of the first
        MAX_RECORDED are kept."""
        import torch

        name = primary_name(kernel, self.modules)
        g, texts = grid_text(grid), [arg_text(x) for x in args]
        key = config_key(name, g, texts)
        if key in self.recorded:
            return
        self.recorded.add(key)
        arrays = [t.split("[", 1)[0] for t in texts if "[" in t]
        import runner as R  # packed beside this file

        hints = R.launch_hints(kernel)
        with open(self.inputs / LAUNCHES_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps({"key": key, "kernel": name, "grid": g, "args": texts,
                                "dtype": arrays[0] if arrays else "none", "origin": self.progress.current,
                                "source": "test", **({"hints": hints} if hints else {})}) + "\n")
        if (self.inputs / f"{key}.pt").exists():
            return
        kept = list(self.inputs.glob("r*.pt"))
        size = sum(x.numel() * x.element_size() for x in args if isinstance(x, torch.Tensor))
        if len(kept) >= MAX_RECORDED or size > MAX_SAVE_BYTES or \
                sum(p.stat().st_size for p in kept) + size > MAX_RECORDED_BYTES:
            return
        self._write(key, args)

    def _write(self, name, args):
        import torch

        kept = [x.detach().to("cpu", copy=True) if isinstance(x, torch.Tensor) else x for x in args]
        strides = [list(x.stride()) if isinstance(x, torch.Tensor) else None for x in args]
        tmp = self.inputs / f".{name}.tmp"
        torch.save({"args": kept, "strides": strides, "origin": self.progress.current}, tmp)
        tmp.replace(self.inputs / f"{name}.pt")

    def _save(self, names, grid, args):
        import torch

        g, texts = grid_text(grid), tuple(arg_text(x) for x in args)
        for n in names:
            cid = self.wanted.get((n, g, texts))
            if cid is None or cid in self.saved:
                continue
            size = sum(x.numel() * x.element_size() for x in args if isinstance(x, torch.Tensor))
            self.saved.add(cid)
            if size <= MAX_SAVE_BYTES:
                self._write(str(cid), args)
            return


def install(shim: Shim) -> None:
    """ct.launch is the shim everywhere: on cuda.tile and on every loaded module that holds the real one."""
    import cuda.tile as ct

    real = shim.real
    ct.launch = shim
    for m in list(sys.modules.values()):
        try:
            for n, v in list(vars(m).items()):
                if v is real:
                    setattr(m, n, shim)
        except Exception:
            continue


class Progress:
    def __init__(self, path: str):
        self.f = open(path, "a", encoding="utf-8", buffering=1)
        self.current = None

    def write(self, **ev) -> None:
        self.f.write(json.dumps(ev, default=str) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())


def _short(text: str, n: int = 600) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    e_lines = [ln.removeprefix("E").strip() for ln in lines if ln.startswith("E ")]
    return (" | ".join(e_lines[-3:]) if e_lines else (lines[-1] if lines else ""))[:n]


def sticky(message: str) -> bool:
    low = (message or "").lower()
    return any(s in low for s in STICKY)


class Plugin:
    def __init__(self, shim: Shim, progress: Progress, select: set[str] | None, poison):
        self.shim, self.progress, self.select, self.poison = shim, progress, select, poison
        self.outcome: dict = {}

    def pytest_collection_modifyitems(self, session, config, items):
        if self.select is None:
            return
        keep = [i for i in items if i.nodeid in self.select]
        drop = [i for i in items if i.nodeid not in self.select]
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep

    def pytest_collection_finish(self, session):
        install(self.shim)  # modules the tests imported that bound the real launch before
        self.progress.write(ev="collected", ids=[i.nodeid for i in session.items])

    def pytest_collectreport(self, report):
        if report.failed:
            self.progress.write(ev="collect_error", where=report.nodeid, message=_short(report.longrepr))

    def pytest_runtest_protocol(self, item, nextitem):
        import pytest  # noqa: F401

        self.progress.current = item.nodeid
        self.shim.begin()
        self.outcome = {"outcome": "passed", "message": ""}
        self.t0 = time.perf_counter()
        self.progress.write(ev="start", id=item.nodeid)
        return None

    def pytest_runtest_logreport(self, report):
        o = self.outcome
        if report.skipped and o["outcome"] == "passed":
            why = report.longrepr[2] if isinstance(report.longrepr, tuple) else _short(report.longrepr)
            why = str(why).removeprefix("Skipped: ")
            o.update(outcome="skipped", message=("xfail: " if hasattr(report, "wasxfail") else "") + why[:300])
        elif report.failed and o["outcome"] in ("passed", "skipped"):
            o.update(outcome="failed" if report.when == "call" else "error",
                     message=(f"{report.when}: " if report.when != "call" else "") + _short(report.longrepr),
                     output=_tail("".join(text for name, text in report.sections if name.startswith("Captured std"))))

    def pytest_runtest_logfinish(self, nodeid, location):
        self.finish(nodeid)

    def finish(self, nodeid):
        o, cur = self.outcome, self.shim.cur
        fail_class = None
        if o["outcome"] in ("failed", "error") and self.shim.side == "port":
            fail_class = cur["port_error"][0] if cur["port_error"] else "kernel"
        self.progress.write(ev="done", id=nodeid, outcome=o["outcome"], message=o["message"],
                            seconds=round(time.perf_counter() - self.t0, 4), launches=cur["launches"],
                            port_attempts=cur["port_attempts"], port_launches=cur["port_launches"],
                            fail_class=fail_class, output=o.get("output", ""))
        if o["outcome"] in ("failed", "error") and sticky(o["message"]):
            os._exit(17)  # the CUDA context is gone: the parent starts the rest in a fresh process


def _poison_wrapper(C, torch):
    import pytest

    class Poison:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_call(self, item):
            with C.poisoned_allocations(torch):
                yield

    return Poison()


class Comparisons:
    """In a script or __main__ block, an output comparison that comes out false (`torch.allclose`, `torch.equal`,
    `Tensor.allclose`) is a failed check even when the script only prints it: its first is kept with its line."""

    NAMES = (("allclose", True), ("equal", True))

    def __init__(self, torch):
        self.torch, self.failed = torch, None

    def _wrap(self, fn, name):
        def check(*a, **k):
            ok = fn(*a, **k)
            if ok is False and self.failed is None:
                self.failed = f"torch.{name} returned False at {_callers(sys._getframe(1))}{_max_diff(a)}"
            return ok
        return check

    def __enter__(self):
        t = self.torch
        self.saved = [(t, n, getattr(t, n)) for n, _ in self.NAMES] + [(t.Tensor, "allclose", t.Tensor.allclose)]
        for owner, n, fn in self.saved:
            setattr(owner, n, self._wrap(fn, n))
        return self

    def __exit__(self, *exc):
        for owner, n, fn in self.saved:
            setattr(owner, n, fn)
        return False


OUTPUT_TAIL = 1500  # characters of a failed test's own output kept with its result


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= OUTPUT_TAIL else "..." + text[-OUTPUT_TAIL:]


def _stdout_offset() -> int | None:
    """Where this process's output file stands (the parent sends stdout and stderr to one log file)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        return os.lseek(1, 0, os.SEEK_CUR)
    except (OSError, ValueError, AttributeError):
        return None


def _stdout_since(start: int | None) -> str:
    """The tail of what a script printed since `start`: its own diagnostics (mismatched indices, diffs) kept with a
    failed result, as the user would have seen them in a terminal."""
    end = _stdout_offset()
    if start is None or end is None or end <= start:
        return ""
    try:
        with open("/proc/self/fd/1", "rb") as f:
            f.seek(max(start, end - 4 * OUTPUT_TAIL))
            return _tail(f.read(end - f.tell()).decode("utf-8", "replace"))
    except OSError:
        return ""


def _callers(f, depth: int = 3) -> str:
    """Where a comparison was made and who asked for it: `utils.py:74 in check < softmax.py:40 in main`, so a failed
    check in a shared helper still names which of the script's cases it judged."""
    where = []
    while f is not None and len(where) < depth:
        if f.f_code.co_filename.startswith("<") or "site-packages" in f.f_code.co_filename:
            break
        where.append(f"{Path(f.f_code.co_filename).name}:{f.f_lineno} in {f.f_code.co_name}")
        f = f.f_back
    return " < ".join(where) or "?"


def _max_diff(args: tuple) -> str:
    """The largest absolute difference of the two tensors compared, when they can be subtracted."""
    try:
        a, b = args[0], args[1]
        d = (a.detach().double() - b.detach().double()).abs()
        return f" (max abs diff {d.max().item():.3g} over {d.numel()} elements, {a.dtype})"
    except Exception:  # shapes differ, not tensors, an empty one: the line alone
        return ""


def run_one(label: str, fn, shim: Shim, progress: Progress, C, torch) -> None:
    """A script or __main__ block as one test: it passes when it ends without an exception and no output comparison
    in it came out false (its own checks judge)."""
    progress.current = label
    shim.begin()
    progress.write(ev="collected", ids=[label])
    progress.write(ev="start", id=label)
    t0 = time.perf_counter()
    outcome, message = "passed", ""
    comparisons = Comparisons(torch)
    sys.argv = [label.split(":", 1)[1]]  # as `python SCRIPT` would see it: no arguments of ours
    start = _stdout_offset()
    try:
        with C.poisoned_allocations(torch), comparisons:
            fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    except SystemExit as e:
        if e.code not in (None, 0):
            outcome, message = "failed", f"exited with status {e.code}"
    except BaseException as e:  # the op's own code: anything may happen
        outcome, message = "failed", f"{type(e).__name__}: {str(e).strip()[:500]}"
    if outcome == "passed" and comparisons.failed:
        outcome, message = "failed", comparisons.failed
    cur = shim.cur
    fail_class = None
    if outcome == "failed" and shim.side == "port":
        fail_class = cur["port_error"][0] if cur["port_error"] else "kernel"
    progress.write(ev="done", id=label, outcome=outcome, message=message, seconds=round(time.perf_counter() - t0, 4),
                   launches=cur["launches"], port_attempts=cur["port_attempts"], port_launches=cur["port_launches"],
                   fail_class=fail_class, output=_stdout_since(start) if outcome != "passed" else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("pack_dir")
    ap.add_argument("--project", required=True)
    ap.add_argument("--side", choices=("ref", "port"), required=True)
    ap.add_argument("--progress", required=True)
    ap.add_argument("--select")
    ap.add_argument("--lib")
    ap.add_argument("--inputs")
    ap.add_argument("--pytest", nargs="+")
    ap.add_argument("--script")
    ap.add_argument("--main", action="store_true")
    args = ap.parse_args(argv)
    pack_dir = Path(args.pack_dir).resolve()
    project = Path(args.project).resolve()
    sys.path.insert(0, str(pack_dir))
    import torch
    import cuda.tile as ct
    import tp_correctness as C

    gate = json.loads((pack_dir / "gate.json").read_text())
    progress = Progress(args.progress)
    shim = Shim(ct.launch, gate, args.side, args.lib, args.inputs, progress)
    install(shim)
    root = str((project / gate["tests"]["import_root"]).resolve())
    sys.path.insert(0, root)
    os.chdir(project)
    if args.pytest:
        import pytest

        select = set(json.loads(Path(args.select).read_text())) if args.select else None
        try:  # the op's modules, so launches are known by the names stage A gave them
            shim.modules.append(import_op(gate, project))
        except Exception as e:
            progress.write(ev="collect_error", where=gate["tests"]["op_file"], message=f"importing the op: {e}"[:600])
        plugin = Plugin(shim, progress, select, None)
        pargs = [*args.pytest, "-q", "-p", "no:cacheprovider", "-o", "addopts=", "--no-header", "-W", "ignore",
                 "--tb=short", "-rN", "--continue-on-collection-errors", f"--rootdir={project}"]
        code = pytest.main(pargs, plugins=[plugin, _poison_wrapper(C, torch)])
        return 0 if int(code) in (0, 1, 5) else int(code)
    if args.script:
        path = project / args.script
        sys.path.insert(0, str(path.parent))
        import runpy

        try:
            shim.modules.append(import_op(gate, project))
        except Exception:  # noqa: BLE001 - the script imports what it needs itself
            pass
        run_one(f"script:{args.script}", lambda: runpy.run_path(str(path), run_name="__main__"), shim, progress, C,
                torch)
        return 0
    if args.main:
        module = import_op(gate, project)
        shim.modules.append(module)
        from tp_mainblock import read_main_block  # tileport.analysis.mainblock, travelling beside this file

        path = project / gate["tests"]["op_file"]
        block = read_main_block(path)
        code = compile(block, str(path), "exec") if block is not None else None
        label = f"main:{gate['tests']['op_file']}"
        run_one(label, (lambda: exec(code, vars(module))) if code else (lambda: None), shim, progress, C, torch)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
