"""Correctness of a cuTile Python op module on a real GPU, against its plain-torch reference.

Deterministic, no model. An op module (``examples/<op>.py``) provides, besides its kernels:

* the host wrapper, a function named like the module (``softmax`` in ``softmax.py``);
* ``reference(...)`` — the same signature and outputs as the wrapper, in plain torch;
* ``make_inputs(shape, dtype, device, seed)`` — deterministic keyword arguments for one
  ``TILEPORT`` shape;
* optionally ``check_variants()`` — a list of extra keyword-argument dicts; each shape is checked
  once per entry (structural variants such as ``causal=True``).

For every declared dtype x shape (x variant) :func:`check_example` builds the inputs, runs the
reference, then runs the wrapper with **poisoned allocations** (every floating tensor the wrapper
allocates with ``torch.empty``/``empty_like``/``empty_strided`` is filled with NaN first, so an
element the kernel never writes stays NaN), synchronises, and compares (:func:`compare`):

* a non-finite output element fails (unwritten poison, overflow); a non-finite reference fails too;
* an output that is all zeros fails (nothing was computed);
* elementwise ``|out - ref| <= atol + rtol * |ref|`` must hold everywhere;
* the norm-wise relative error ``||out - ref|| / ||ref||`` must be ``<= rtol`` — this catches
  outputs whose values are all smaller than ``atol`` (softmax rows of 4096: ~2e-4 each, under a
  float16 ``atol`` of 1e-2) being wrong or missing wholesale.

Tolerances are the module's ``TILEPORT["tolerances"]`` for the dtype, else tileport's defaults
(``tileport.config._default_tolerances``). The ``TILEPORT`` dict is read from the source with
``ast.literal_eval``; this module imports neither torch (lazily, inside functions) nor pydantic
(the defaults fall back to a copy kept equal to the config's by a test), so it imports on a CPU
machine without torch and runs on a GPU machine that has only torch and cuda-tile.

CLI: ``python -m tileport.validators.correctness examples/*.py [--json] [--json-out FILE] [--device cuda]``
prints one line per case and a summary (JSON objects with ``--json``; ``--json-out`` also writes them to FILE); exit 0 when all pass, 1 on any failure, 2 when it cannot run.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import importlib.util
import json
import math
import sys
import time
import traceback
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

DECLARATION_NAME = "TILEPORT"
DEFAULT_DTYPES = ("float16", "float32")  # as in tileport.analysis.declaration
_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "bf16": "bfloat16",
            "fp16": "float16", "fp32": "float32", "f16": "float16", "f32": "float32"}

# A copy of tileport.config._default_tolerances() as (atol, rtol), used only where pydantic (and so
# tileport.config) is absent, e.g. the GPU machine. tests/validators/test_correctness.py keeps the two equal.
FALLBACK_TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
    "float32": (1e-4, 1e-4),
    "float64": (1e-8, 1e-8),
}

_POISONED_ALLOCATORS = ("empty", "empty_like", "empty_strided")


class CorrectnessError(Exception):
    """The module cannot be checked (missing wrapper/reference/make_inputs, bad TILEPORT)."""


# ---------------------------------------------------------------------------------------------
# comparison (works on numpy arrays and torch tensors alike: only operators, abs, .max/.sum/.any)


@dataclass
class Comparison:
    ok: bool
    reason: str  # "ok" or why it failed
    numel: int = 0
    max_abs_err: float | None = None
    max_rel_err: float | None = None  # max |out-ref|/|ref| over elements with |ref| > atol
    rel_l2_err: float | None = None  # ||out-ref|| / ||ref||
    mismatches: int = 0  # elements outside atol + rtol*|ref|
    nonfinite: int = 0


def _count(mask: Any) -> int:
    return int(mask.sum())


def compare(out: Any, ref: Any, atol: float, rtol: float) -> Comparison:
    """Compare an output with its reference; both floating arrays (numpy) or tensors (torch).

    Pass them already widened (float32/float64) so that the arithmetic here does not round.
    """
    out_shape, ref_shape = tuple(out.shape), tuple(ref.shape)
    if out_shape != ref_shape:
        return Comparison(False, f"shape {out_shape} != reference shape {ref_shape}")
    numel = math.prod(out_shape)
    if numel == 0:
        return Comparison(False, "empty output", numel=0)
    inf = float("inf")
    ref_bad = _count((ref != ref) | (abs(ref) == inf))
    if ref_bad:
        return Comparison(False, f"reference has {ref_bad} non-finite values (bad inputs or reference)",
                          numel=numel)
    out_bad = _count((out != out) | (abs(out) == inf))
    if out_bad:
        return Comparison(False, f"{out_bad} of {numel} output values are non-finite "
                                 "(NaN poison left unwritten, or overflow)", numel=numel, nonfinite=out_bad)
    if not bool((out != 0).any()):
        return Comparison(False, "output is all zeros", numel=numel)
    diff = abs(out - ref)
    aref = abs(ref)
    max_abs = float(diff.max())
    big = aref > atol
    max_rel = float((diff[big] / aref[big]).max()) if bool(big.any()) else 0.0
    err_sq, ref_sq = float((diff * diff).sum()), float((ref * ref).sum())
    rel_l2 = math.sqrt(err_sq / ref_sq) if ref_sq > 0 else (0.0 if err_sq == 0 else inf)
    mismatches = _count(diff > atol + rtol * aref)
    common = dict(numel=numel, max_abs_err=max_abs, max_rel_err=max_rel, rel_l2_err=rel_l2,
                  mismatches=mismatches)
    if mismatches:
        return Comparison(False, f"{mismatches} of {numel} values outside atol={atol:g} + rtol={rtol:g}*|ref| "
                                 f"(max abs err {max_abs:.3g})", **common)
    if rel_l2 > rtol:
        return Comparison(False, f"norm-wise relative error {rel_l2:.3g} > rtol={rtol:g}", **common)
    return Comparison(True, "ok", **common)


# ---------------------------------------------------------------------------------------------
# the declaration and tolerances (no pydantic)


def _normalize_dtype(name: str) -> str:
    return _ALIASES.get(name, name)


_ARITH = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
          ast.FloorDiv: lambda a, b: a // b, ast.LShift: lambda a, b: a << b}


def _plain_literal(node: ast.AST) -> Any:
    """literal_eval plus the small integer arithmetic declarations use (``1 << 20``, ``4 * 1024``)."""
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        a, b = _plain_literal(node.left), _plain_literal(node.right)
        if not all(type(x) is int for x in (a, b)) or (isinstance(node.op, ast.LShift) and not 0 <= b <= 64):
            raise ValueError("unsupported arithmetic")
        return _ARITH[type(node.op)](a, b)
    if isinstance(node, ast.Dict):
        return {_plain_literal(k): _plain_literal(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_plain_literal(e) for e in node.elts]
    return ast.literal_eval(node)


def read_plain_declaration(module_path: str | Path) -> dict[str, Any]:
    """The module's ``TILEPORT`` dict read from the source without pydantic ({} when absent)."""
    tree = ast.parse(Path(module_path).read_text(), filename=str(module_path))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
        if any(isinstance(t, ast.Name) and t.id == DECLARATION_NAME for t in targets):
            try:
                value = _plain_literal(node.value)
            except (ValueError, TypeError, SyntaxError):
                raise CorrectnessError(f"{module_path}: {DECLARATION_NAME} is not a literal dict") from None
            if not isinstance(value, dict):
                raise CorrectnessError(f"{module_path}: {DECLARATION_NAME} is not a dict")
            return value
    return {}


def read_declaration(module_path: str | Path) -> dict[str, Any]:
    """dtypes, shapes and tolerances of the module's ``TILEPORT``, as plain data.

    Validated by tileport's own declaration reader where pydantic is importable; elsewhere (the GPU
    machine) read by :func:`read_plain_declaration`. A test keeps the two in agreement on examples/.
    """
    try:
        from tileport.analysis.declaration import read_declaration as validated
    except ImportError:
        raw = read_plain_declaration(module_path)
        return {"dtypes": [_normalize_dtype(d) for d in raw.get("dtypes", DEFAULT_DTYPES)],
                "shapes": [dict(s) for s in raw.get("shapes", [])],
                "tolerances": {_normalize_dtype(k): dict(v) for k, v in (raw.get("tolerances") or {}).items()}}
    path = Path(module_path)
    decl = validated(ast.parse(path.read_text(), filename=str(path)), str(path))
    return {"dtypes": list(decl.dtypes), "shapes": [dict(s) for s in decl.shapes],
            "tolerances": {k: {n: float(x) for n, x in t.model_dump(exclude_none=True).items()}
                           for k, t in decl.tolerances.items()}}


def default_tolerances() -> dict[str, tuple[float, float]]:
    """tileport's default per-dtype (atol, rtol); the config's when importable, else the fallback copy."""
    try:
        from tileport.config import _default_tolerances
    except ImportError:  # no pydantic (the GPU machine): the copy kept equal by a test
        return dict(FALLBACK_TOLERANCES)
    return {k: (float(t.atol), float(t.rtol)) for k, t in _default_tolerances().items()}


def tolerance_for(declaration: dict[str, Any], dtype: str,
                  defaults: dict[str, tuple[float, float]] | None = None) -> tuple[float, float]:
    defaults = default_tolerances() if defaults is None else defaults
    declared = {_normalize_dtype(k): v for k, v in (declaration.get("tolerances") or {}).items()}
    base = defaults.get(dtype)
    if dtype in declared:
        spec = declared[dtype]
        atol = spec.get("atol", base[0] if base else None)
        rtol = spec.get("rtol", base[1] if base else None)
        if atol is None or rtol is None:
            raise CorrectnessError(f"no default tolerance for {dtype}; declare both atol and rtol")
        return float(atol), float(rtol)
    if base is None:
        raise CorrectnessError(f"no tolerance for dtype {dtype}: declare it in {DECLARATION_NAME}['tolerances']")
    return base


# ---------------------------------------------------------------------------------------------
# running an op module


@dataclass
class CaseResult:
    op: str
    dtype: str
    shape: dict[str, int]
    variant: dict[str, Any] = field(default_factory=dict)
    ok: bool = False
    reason: str = ""
    atol: float = 0.0
    rtol: float = 0.0
    numel: int = 0
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    rel_l2_err: float | None = None
    mismatches: int = 0
    poisoned: int = 0  # tensors the wrapper allocated that were NaN-filled before the launch
    seconds: float = 0.0  # wrapper call incl. first-launch JIT, synchronised

    def label(self) -> str:
        shape = ",".join(f"{k}={v}" for k, v in self.shape.items())
        var = "".join(f" {k}={v}" for k, v in self.variant.items())
        return f"{self.op} {self.dtype} [{shape}]{var}"

    def line(self) -> str:
        if self.max_abs_err is None:
            return f"{'PASS' if self.ok else 'FAIL'} {self.label()}: {self.reason}"
        return (f"{'PASS' if self.ok else 'FAIL'} {self.label()}: max_abs={self.max_abs_err:.3g} "
                f"max_rel={self.max_rel_err:.3g} rel_l2={self.rel_l2_err:.3g} (atol={self.atol:g} rtol={self.rtol:g}) "
                f"poisoned={self.poisoned} {self.seconds:.2f}s" + ("" if self.ok else f": {self.reason}"))


@contextlib.contextmanager
def poisoned_allocations(torch_module: Any):
    """Within the block, floating tensors from ``torch.empty*`` come back NaN-filled; yields a counter."""
    count = [0]
    originals = {name: getattr(torch_module, name) for name in _POISONED_ALLOCATORS
                 if hasattr(torch_module, name)}

    def wrap(fn):
        @functools.wraps(fn)
        def poisoned(*args, **kwargs):
            t = fn(*args, **kwargs)
            if t.is_floating_point():
                t.fill_(float("nan"))
                count[0] += 1
            return t
        return poisoned

    for name, fn in originals.items():
        setattr(torch_module, name, wrap(fn))
    try:
        yield count
    finally:
        for name, fn in originals.items():
            setattr(torch_module, name, fn)


def load_module(module_path: str | Path):
    path = Path(module_path).resolve()
    spec = importlib.util.spec_from_file_location(f"tileport_check_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise CorrectnessError(f"{path}: cannot import")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def case_seed(op: str, dtype: str, shape: dict[str, int], variant: dict[str, Any]) -> int:
    key = json.dumps([op, dtype, sorted(shape.items()), sorted(variant.items())], default=str)
    return zlib.crc32(key.encode()) & 0x7FFFFFFF


def _outputs(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _short_error(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
    return " | ".join(line.strip() for line in text if line.strip())[:600]


def check_example(module_path: str | Path, device: str = "cuda") -> list[CaseResult]:
    """Run every declared dtype x shape (x variant) of an op module and compare with its reference."""
    import torch

    path = Path(module_path)
    op = path.stem
    declaration = read_declaration(path)
    dtypes, shapes = declaration["dtypes"], declaration["shapes"]
    if not shapes:
        raise CorrectnessError(f"{path}: {DECLARATION_NAME} declares no shapes to check")
    module = load_module(path)
    wrapper = getattr(module, op, None)
    missing = [n for n, v in (("host wrapper " + op, wrapper), ("reference", getattr(module, "reference", None)),
                              ("make_inputs", getattr(module, "make_inputs", None))) if not callable(v)]
    if missing:
        raise CorrectnessError(f"{path}: no {', '.join(missing)} function")
    variants = module.check_variants() if callable(getattr(module, "check_variants", None)) else [{}]
    defaults = default_tolerances()

    results = []
    for dtype in dtypes:
        atol, rtol = tolerance_for(declaration, dtype, defaults)
        for shape in shapes:
            for variant in variants:
                result = CaseResult(op, dtype, dict(shape), dict(variant), atol=atol, rtol=rtol)
                try:
                    _run_case(torch, module, wrapper, result, device)
                except Exception as exc:  # one bad case must not hide the others
                    result.ok, result.reason = False, _short_error(exc)
                results.append(result)
    return results


def _run_case(torch, module, wrapper, result: CaseResult, device: str) -> None:
    seed = case_seed(result.op, result.dtype, result.shape, result.variant)
    inputs = module.make_inputs(dict(result.shape), result.dtype, device=device, seed=seed)
    expected = _outputs(module.reference(**inputs, **result.variant))
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    with poisoned_allocations(torch) as poisoned:
        got = _outputs(wrapper(**inputs, **result.variant))
    torch.cuda.synchronize(device)
    result.seconds = time.perf_counter() - start
    result.poisoned = poisoned[0]
    if len(got) != len(expected):
        result.ok, result.reason = False, f"{len(got)} outputs, reference has {len(expected)}"
        return
    comparisons = []
    for i, (out, ref) in enumerate(zip(got, expected)):
        if out.dtype != ref.dtype:
            result.ok, result.reason = False, f"output {i} dtype {out.dtype} != reference dtype {ref.dtype}"
            return
        c = compare(out.double(), ref.double(), result.atol, result.rtol)
        if not c.ok and len(got) > 1:
            c.reason = f"output {i}: {c.reason}"
        comparisons.append(c)
    failing = [c for c in comparisons if not c.ok]
    worst = failing[0] if failing else max(comparisons, key=lambda c: c.rel_l2_err or 0.0)
    for name in ("numel", "max_abs_err", "max_rel_err", "rel_l2_err", "mismatches"):
        setattr(result, name, getattr(worst, name))
    result.ok, result.reason = worst.ok, worst.reason


# ---------------------------------------------------------------------------------------------
# CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tileport.validators.correctness",
                                     description="Run op modules on the GPU and compare with their torch reference.")
    parser.add_argument("modules", nargs="+", help="op module files, e.g. examples/*.py")
    parser.add_argument("--json", action="store_true", help="one JSON object per line, then a summary object")
    parser.add_argument("--json-out", metavar="FILE", help="also write the JSON lines to FILE (stdout stays as chosen)")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("correctness: torch is not installed; nothing can run", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("correctness: torch sees no CUDA device; nothing can run", file=sys.stderr)
        return 2

    sink = open(args.json_out, "w") if args.json_out else None

    def emit(obj: dict, text: str) -> None:
        print(json.dumps(obj) if args.json else text, flush=True)
        if sink:
            print(json.dumps(obj), file=sink, flush=True)

    results: list[CaseResult] = []
    errors: dict[str, str] = {}
    started = time.perf_counter()
    for module_path in args.modules:
        try:
            cases = check_example(module_path, device=args.device)
        except Exception as exc:
            errors[module_path] = _short_error(exc)
            emit({"module": module_path, "error": errors[module_path]}, f"ERROR {module_path}: {errors[module_path]}")
            continue
        for case in cases:
            emit(asdict(case), case.line())
        results.extend(cases)

    per_op: dict[str, list[int]] = {}
    for r in results:
        per_op.setdefault(r.op, [0, 0])[0 if r.ok else 1] += 1
    failed = sum(not r.ok for r in results)
    summary = {"summary": True, "cases": len(results), "passed": len(results) - failed, "failed": failed,
               "module_errors": errors, "per_op": {k: {"passed": p, "failed": f} for k, (p, f) in per_op.items()},
               "device": torch.cuda.get_device_name(args.device), "torch": torch.__version__,
               "seconds": round(time.perf_counter() - started, 1)}
    emit(summary, f"{summary['passed']}/{summary['cases']} cases passed, {len(errors)} module errors "
                  f"on {summary['device']} in {summary['seconds']} s")
    if sink:
        sink.close()
    return 0 if failed == 0 and not errors and results else 1


if __name__ == "__main__":
    sys.exit(main())
