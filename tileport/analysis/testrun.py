"""Run the op's own tests, `__main__` block and benchmark scripts with launches intercepted (child process only).

The sources say which inputs the op really runs with. Each runs inside `Capture.active()` (fake CUDA tensors on a
CPU machine, real ones on a GPU machine), so every `ct.launch` they reach is recorded with the test id (or script)
that made it. Verdicts are not the point: on a CPU machine the fake launch writes nothing, so output comparisons
(`torch.testing.assert_close`, `torch.allclose`, ...) are replaced by recorders that keep the tolerance each call
passes for its dtype, with the source line, and let the test go on.

* pytest files and directories run in one in-process `pytest.main` (the op's own conftest files apply), with the
  project's addopts ignored and a time limit per source;
* the op module's own `if __name__ == "__main__":` block is executed in the module's namespace (its kernels stay
  the objects analysed);
* another script runs as `__main__` (`runpy`), importing the op as its package does.

A source that cannot be run (pytest missing, a collection error, an import of a missing module, the time limit)
becomes one line in `errors` naming it; nothing here raises.
"""

from __future__ import annotations

import ast
import contextlib
import os
import runpy
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

from tileport.analysis import harness
from tileport.analysis.capture import Capture, _short_error
from tileport.analysis.fakecuda import _patched
from tileport.analysis.mainblock import read_main_block

SOURCE_LIMIT_S = 120.0
BUDGET_S = 30.0  # past this, a test session runs only tests of a new launch signature (see signature_key)


class SourceTimeout(BaseException):
    """Raised by SIGALRM inside a source past its limit (a BaseException: a test's `except Exception` cannot eat it)."""


class SourceExit(BaseException):
    """Raised instead of ending the process when a source calls `os._exit` (a conftest's `pytest_sessionfinish` or
    `pytest_unconfigure` leaving without teardown): the analysis child lives on with the launches recorded so far."""

    def __init__(self, code: Any):
        super().__init__(code)
        self.code = code


_REAL_EXIT = os._exit
_PID = os.getpid()


def _no_exit(code: Any = 0) -> None:
    if os.getpid() != _PID:  # a process the source forked (multiprocessing) ends as it asks
        _REAL_EXIT(code)
    raise SourceExit(code)


@dataclass
class TestTolerance:
    dtype: str
    rtol: float
    atol: float
    where: str  # file:line of the comparison
    test: str  # the test id or script that made it


def _caller() -> str:
    from tileport.analysis import fakearrays

    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename in (__file__, fakearrays.__file__):
        f = f.f_back
    return f"{Path(f.f_code.co_filename).name}:{f.f_lineno}" if f else "?"


class Recorder:
    """Output comparisons that record their tolerance instead of comparing (there is nothing to compare)."""

    def __init__(self, cap: Capture):
        self.cap = cap
        self.tolerances: list[TestTolerance] = []

    def _record(self, actual: Any, rtol: Any, atol: Any) -> None:
        dtype = getattr(actual, "dtype", None)
        if dtype is None or rtol is None or atol is None:
            return
        try:
            r, a = float(rtol), float(atol)
        except (TypeError, ValueError):
            return
        self.tolerances.append(TestTolerance(str(dtype).removeprefix("torch."), r, a, _caller(), self.cap.entry))

    def np_assert_allclose(self, actual: Any, desired: Any, rtol: float = 1e-07, atol: float = 0, *a: Any,
                           **k: Any) -> None:
        """numpy's and CuPy's `testing.assert_allclose` (CuPy arrays are numpy ones under the CPU fake)."""
        self._record(actual, rtol, atol)

    def assert_close(self, actual: Any, expected: Any, *a: Any, rtol: Any = None, atol: Any = None, **k: Any) -> None:
        self._record(actual, rtol, atol)

    def allclose(self, actual: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
        self._record(actual, rtol, atol)
        return True

    def equal(self, *a: Any, **k: Any) -> bool:
        return True

    def isclose(self, actual: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Any:
        import torch

        self._record(actual, rtol, atol)
        return torch.ones(actual.shape, dtype=torch.bool, device=actual.device)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        import torch
        import torch.testing

        from tileport.analysis.fakecuda import _patched

        with contextlib.ExitStack() as stack:
            stack.enter_context(_patched(torch.testing, "assert_close", self.assert_close))
            if hasattr(torch.testing, "assert_allclose"):
                stack.enter_context(_patched(torch.testing, "assert_allclose", self.assert_close))
            stack.enter_context(_patched(torch, "allclose", self.allclose))
            stack.enter_context(_patched(torch, "isclose", self.isclose))
            stack.enter_context(_patched(torch, "equal", self.equal))
            stack.enter_context(_patched(torch.Tensor, "allclose", self.allclose))
            stack.enter_context(_patched(torch.Tensor, "equal", self.equal))
            try:
                import numpy.testing
            except ImportError:  # pragma: no cover - numpy comes with torch
                pass
            else:
                stack.enter_context(_patched(numpy.testing, "assert_allclose", self.np_assert_allclose))
            yield


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    def alarm(signum: int, frame: Any) -> None:
        raise SourceTimeout()

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.5)  # re-armed: code that swallows one gets another
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def kind_of(path: Path) -> str:
    """"test" for pytest files and directories, "bench" for any other script."""
    if path.is_dir() or path.name.startswith("test_") or path.name.endswith("_test.py") or path.name == "conftest.py":
        return "test"
    return "bench"


def _shape_like(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, (tuple, list)) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


def signature_key(item: Any) -> tuple:
    """What a test's launches can differ in besides array extents: its function and the parameters that are not
    sizes (dtypes, flags, modes, providers). Tests sharing a key launch the same kernels with the same argument
    dtypes; their extents change only constants computed from shapes, which the first ones already show."""
    params = getattr(getattr(item, "callspec", None), "params", {}) or {}
    rest = tuple(sorted((k, repr(v)) for k, v in params.items() if not _shape_like(v)))
    return (getattr(item, "originalname", None) or item.name, str(getattr(item, "fspath", "")), rest)


class _Plugin:
    """Names each launch after the test that made it; past the budget, runs only tests of a new signature
    (`signature_key`); stops the session at the time limit."""

    def __init__(self, cap: Capture, errors: list[str], label: str, budget_s: float = float("inf")):
        self.cap, self.errors, self.label = cap, errors, label
        self.ran = 0
        self.skipped = 0
        self.budget_s = budget_s
        self.t0 = time.monotonic()
        self.seen: set[tuple] = set()
        self.collect_errors: list[str] = []

    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
        key = signature_key(item)
        if key in self.seen and time.monotonic() - self.t0 > self.budget_s:
            self.skipped += 1
            return True  # handled: not run, nothing reported
        self.seen.add(key)
        return None

    timed_out: str | None = None
    session: Any = None

    def pytest_sessionstart(self, session: Any) -> None:
        self.session = session

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed and self.timed_out is None and "SourceTimeout" in str(report.longrepr):
            self.timed_out = report.nodeid  # the test running at the limit; no other test gets to start
            if self.session is not None:
                self.session.shouldstop = "tileport: time limit"

    def pytest_runtest_setup(self, item: Any) -> None:
        self.cap.entry = item.nodeid
        self.ran += 1

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            text = str(report.longrepr).strip().splitlines()
            last = next((ln for ln in reversed(text) if ln.strip().startswith("E ")), text[-1] if text else "")
            self.collect_errors.append(f"{report.nodeid or self.label}: collection failed: "
                                       f"{' '.join(last.removeprefix('E').split())[:200]}")


def _run_pytest(cap: Capture, paths: list[Path], errors: list[str], limit: float, budget: float = BUDGET_S) -> None:
    label = ", ".join(p.name for p in paths)
    try:
        import pytest
    except ImportError:
        errors.append(f"tests {label}: pytest is not installed in {sys.executable}; pip install pytest there "
                      "(the op's tests run in the analysis interpreter)")
        return
    plugin = _Plugin(cap, errors, label, budget_s=min(budget, limit / 4))
    args = [str(p) for p in paths] + ["-q", "-s", "-p", "no:cacheprovider", "-o", "addopts=", "--no-header",
                                      "-W", "ignore", "--tb=no", "-rN",
                                      "--continue-on-collection-errors"]
    t0 = time.monotonic()
    try:
        with _time_limit(limit):
            code = pytest.main(args, plugins=[plugin])
    except SourceTimeout:
        errors.extend(plugin.collect_errors)
        errors.append(f"tests {label}: stopped at the {limit:.0f} s time limit in {plugin.timed_out or cap.entry} "
                      f"(after {plugin.ran} tests)")
        return
    except SourceExit as e:
        errors.extend(plugin.collect_errors)
        errors.append(f"tests {label}: the test session called os._exit({e.code!r}) after {plugin.ran} tests; the "
                      "launches before it are kept")
        return
    except (Exception, SystemExit) as e:
        errors.append(f"tests {label}: pytest failed: {_short_error(e)}")
        return
    errors.extend(plugin.collect_errors)
    if plugin.skipped:
        errors.append(f"tests {label}: {plugin.skipped} tests not run: past the {plugin.budget_s:.0f} s budget, only "
                      f"tests of a new launch signature run (function and non-size parameters; {plugin.ran} ran)")
    if plugin.timed_out is not None or time.monotonic() - t0 >= limit:
        errors.append(f"tests {label}: stopped at the {limit:.0f} s time limit in {plugin.timed_out or cap.entry} "
                      f"(after {plugin.ran} tests)")
    if int(code) in (2, 3, 4) and not plugin.collect_errors and plugin.timed_out is None:
        errors.append(f"tests {label}: pytest exited with status {int(code)} (interrupted or usage error)")
    elif int(code) == 5:
        errors.append(f"tests {label}: pytest collected no tests")


MAX_CHOICE_RUNS = 8


def choice_argvs(text: str) -> list[list[str]]:
    """A script's command lines besides its default one: each other value of an `add_argument("--opt",
    choices=[...])` with literal choices (a benchmark picking its kernel or provider by a flag), one at a time."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out: list[list[str]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
                and node.args and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("--")):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        try:
            choices = ast.literal_eval(kw["choices"]) if "choices" in kw else None
            default = ast.literal_eval(kw["default"]) if "default" in kw else None
        except ValueError:
            continue
        if not isinstance(choices, (list, tuple)) or ("nargs" in kw):
            continue
        out.extend([str(node.args[0].value), str(c)] for c in choices if c != default and c is not None)
    return out[:MAX_CHOICE_RUNS]


def _run_script(cap: Capture, label: str, run: Any, errors: list[str], limit: float,
                args: list[str] | None = None) -> None:
    cap.entry = label
    argv = sys.argv
    sys.argv = [label, *(args or [])]
    try:
        with _time_limit(limit):
            run()
    except SourceTimeout:
        errors.append(f"{label}: stopped at the {limit:.0f} s time limit")
    except SourceExit as e:
        errors.append(f"{label}: called os._exit({e.code!r}); the launches before it are kept")
    except SystemExit as e:
        if e.code not in (None, 0):
            errors.append(f"{label}: exited with status {e.code}")
    except Exception as e:  # the script's own code: anything may happen
        errors.append(f"{label}: {_short_error(e)}")
    finally:
        sys.argv = argv


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig", errors="replace")
    except OSError:
        return ""


def run_sources(cap: Capture, module: ModuleType, op_path: Path, tests: list[str], run_main: bool,
                limit_s: float = SOURCE_LIMIT_S, budget_s: float = BUDGET_S
                ) -> tuple[list[str], list[TestTolerance], list[str]]:
    """Run the tests and scripts (then the op's `__main__` block when `run_main`); returns
    (errors, tolerances, labels of the sources run)."""
    errors: list[str] = []
    ran: list[str] = []
    rec = Recorder(cap)
    paths = [Path(t) for t in tests]
    pytest_paths = [p for p in paths if kind_of(p) == "test"]
    scripts = [p for p in paths if kind_of(p) != "test"]
    texts = [_text(p) for p in scripts] + [_text(p) for p in pytest_paths if p.is_file()] + [_text(op_path)]
    global _PID
    _PID = os.getpid()  # the analysis child (forked from the warm server after this module was imported)
    with cap.active(), rec.active(), _patched(os, "_exit", _no_exit), harness.stubbed(cap, errors, texts):
        if pytest_paths:
            cap.source = "test"
            _run_pytest(cap, pytest_paths, errors, limit_s, budget_s)
            ran.extend(str(p) for p in pytest_paths)
        for s in scripts:
            cap.source = "bench"
            for args in [[], *choice_argvs(_text(s))]:
                _run_script(cap, " ".join([s.name, *args]), lambda s=s: runpy.run_path(str(s), run_name="__main__"),
                            errors, limit_s, args)
            ran.append(str(s))
        if run_main:
            block = read_main_block(op_path)
            if block is not None:
                cap.source = "main"
                code = compile(block, str(op_path), "exec")
                for args in [[], *choice_argvs(_text(op_path))]:
                    _run_script(cap, " ".join([f"{op_path.name} __main__", *args]),
                                lambda: exec(code, vars(module)), errors, limit_s, args)
                ran.append(f"{op_path.name} __main__")
    cap.source = "guess"
    return errors, rec.tolerances, ran


__all__ = ["TestTolerance", "kind_of", "run_sources"]
