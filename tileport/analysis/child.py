"""The child process that imports an op module and exports its kernels (`python -m tileport.analysis.child`).

Reads one JSON request on stdin, writes one JSON reply on stdout. Anything the op module prints
goes to stderr instead, so it cannot corrupt the reply. A module that fails to import, defines
no kernel or has a kernel cuda-tile rejects produces {"ok": false, "error": {...}} with a
one-line message; a crash (segfault, abort) shows up to the parent as a non-zero exit.

Request: {path, static, declaration, targets, bytecode_version, out_dir, kernel}
Reply:   {ok, cuda_tile, plan: Plan, exports: {stem: {symbol, signature, builds: {target: ...}}}, seconds}

`--serve` runs a warm server instead: it imports cuda-tile (and torch with it) once and forks a fresh
process per request, several at a time, so analysing many ops does not pay those imports (about two
seconds) each time while every op still runs in its own process (see `loader.WarmChild`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import select
import signal
import sys
import time
import traceback
import typing
from pathlib import Path
from typing import Any


class ChildError(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


def one_line(text: str, limit: int = 400) -> str:
    text = re.sub(r"\s+", " ", str(text)).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _where_in(path: Path, tb) -> str:
    line = None
    for frame, lineno in traceback.walk_tb(tb):
        if Path(frame.f_code.co_filename).resolve() == path:
            line = lineno
    return f"{path.name}:{line}" if line else path.name


class ImportTimeout(BaseException):
    """Raised by SIGALRM inside a too-slow import (a BaseException: an op's `except Exception` cannot eat it)."""


def _alarm(signum, frame):
    raise ImportTimeout()


def package_root(path: Path) -> tuple[Path, str] | None:
    """(directory to put on sys.path, dotted module name) when the op lives in a package (`__init__.py`)."""
    parts = [path.stem]
    d = path.parent
    while (d / "__init__.py").is_file() and d.name.isidentifier():
        parts.insert(0, d.name)
        d = d.parent
    return (d, ".".join(parts)) if len(parts) > 1 else None


def _standalone_name(path: Path) -> str:
    return "tileport_op_" + re.sub(r"\W", "_", path.stem)


INSTALL_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")


def project_on_path(path: Path) -> None:
    """The op's project root (the nearest ancestor with a pyproject.toml / setup.py / setup.cfg, 6 levels at most) at
    the end of sys.path, as installing the project in development mode puts it: its top-level modules (setuptools
    `py-modules`, a harness beside the ops) import as they do where the project is installed."""
    for d in list(path.resolve().parents)[:6]:
        if any((d / m).is_file() for m in INSTALL_MARKERS):
            if str(d) not in sys.path:
                sys.path.append(str(d))
            return


def load_module(path: Path, timeout: float | None = None, limit_text: str = "import time limit"):
    """Import the op: as part of its package when it has one (relative imports work), else standalone."""
    project_on_path(path)
    pkg = package_root(path)
    if pkg is not None:
        root, dotted = pkg
        sys.path.insert(0, str(root))
        how = f" (imported as {dotted} from {root})"

        def load():
            return importlib.import_module(dotted)
    else:
        name = _standalone_name(path)
        sys.path.insert(0, str(path.parent))
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ChildError("import", f"{path.name}: cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        how = ""

        def load():
            spec.loader.exec_module(module)
            return module
    if timeout:
        signal.signal(signal.SIGALRM, _alarm)
        # re-armed every 0.5 s: library code that swallows one BaseException (a decorator's cleanup) gets another
        signal.setitimer(signal.ITIMER_REAL, timeout, 0.5)
    try:
        try:
            return load()
        finally:
            if timeout:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except ImportTimeout:
        raise ChildError("timeout", f"{path.name}: importing it did not finish within the {limit_text}; move "
                                    "long work at import time into functions, or raise the limit") from None
    except BaseException as e:  # SystemExit and friends included: the module must not end the child
        raise ChildError("import", _import_failure(path, e, how)) from None


NO_TORCH_HINT = ("point tileport at an interpreter that has torch and cuda-tile: tileport analyze --python "
                 "/path/to/python OP.py, or [analysis] python = \"/path/to/python\" in tileport.toml "
                 "(tileport doctor shows which one is used)")


def _import_failure(path: Path, e: BaseException, how: str) -> str:
    where = _where_in(path, e.__traceback__)
    msg = f"{where}: import failed{how}: {type(e).__name__}: {one_line(e)}"
    if isinstance(e, ModuleNotFoundError) and e.name and e.name.split(".")[0] == "torch":
        msg += f"; this interpreter ({sys.executable}) has no torch: {NO_TORCH_HINT}"
    elif isinstance(e, ModuleNotFoundError) and e.name and e.name.split(".")[0] != \
            (package_root(path) or (None, path.stem))[1].split(".")[0]:  # a third-party module, not the op's own
        top = e.name.split(".")[0]
        msg += (f"; the op needs {top}: install it where the op is imported ({sys.executable} -m pip install {top}), "
                "or point tileport at an interpreter that has it (--python, [analysis] python)")
    return msg


def _constant_type(annotation: Any) -> str | None:
    args = typing.get_args(annotation)
    inner = args[0] if args else None
    return {bool: "bool", int: "int", float: "float"}.get(inner)


def kernel_meta(name: str, k) -> dict[str, Any]:
    from cuda.tile._annotated_function import LeafAnnotationNode

    af = k._annotated_function
    fn = af.pyfunc
    hints = typing.get_type_hints(fn, include_extras=True)
    params = []
    for (pname, param), node in zip(af.pysig.parameters.items(), af.parameter_annotations):
        ann = hints.get(pname, param.annotation)
        meta: dict[str, Any] = {"name": pname}
        if ann is not param.empty:
            meta["annotation"] = getattr(ann, "__name__", None) if isinstance(ann, type) else repr(ann)
        if not isinstance(node, LeafAnnotationNode):
            meta["structured"] = True
        else:
            meta["constant"] = bool(node.constant)
            if node.constant:
                meta["constant_type"] = _constant_type(ann)
            if node.array is not None:
                meta["index_dtype"] = node.array.index_dtype.name
                meta["static_shape_dims"] = list(node.array.static_shape_dims)
                meta["static_stride_dims"] = list(node.array.static_stride_dims)
            if node.scalar is not None:
                meta["scalar_dtype"] = node.scalar.dtype.name
            if node.list is not None:
                meta["structured"] = True
        params.append(meta)
    opts = {}
    for key, value in vars(k._compiler_options).items():
        if value is not None and not key.startswith("_"):
            opts[key] = value if isinstance(value, (int, float, bool, str)) else repr(value)
    return {"name": name, "function": fn.__name__, "line": fn.__code__.co_firstlineno, "params": params,
            "compiler_options": opts}


def find_kernels(module, path: Path) -> dict[str, Any]:
    import cuda.tile as ct

    found = {}
    for name, obj in vars(module).items():
        if isinstance(obj, ct.kernel):
            fn = obj._annotated_function.pyfunc
            if Path(fn.__code__.co_filename).resolve() == path:
                found[name] = obj
    # an alias (`gemm_kernel = _gemm_kernel`) is the same kernel: one name each, its def's name when it has one
    by_obj: dict[int, str] = {}
    for name, obj in found.items():
        have = by_obj.get(id(obj))
        if have is None or (name == obj._annotated_function.pyfunc.__name__ and
                            have != obj._annotated_function.pyfunc.__name__):
            by_obj[id(obj)] = name
    return {name: obj for name, obj in found.items() if by_obj[id(obj)] == name}


def export_all(kernels: dict[Any, Any], plan, params_by_kernel: dict[str, list[dict]], req: dict,
               select=None) -> dict:
    """Export every variant of the plan (those `select` accepts). kernels: the kernel object per kernel name, or
    per (kernel, variant name) for captured variants. A variant cuda-tile rejects is dropped with a note; a kernel
    left with none goes to `plan.failed` with the message, so the op's other kernels are still analysed."""
    out_dir = Path(req["out_dir"])
    results: dict[str, Any] = {}
    for v in list(plan.variants):
        if select is not None and not select(v):
            continue
        if len(v.instances) > 1:  # a dtype cuda-tile rejects (a kernel written for one dtype) drops that instance
            for inst in list(v.instances):
                try:
                    results.update(_export_variant(kernels, v.model_copy(update={"instances": [inst]}),
                                                   params_by_kernel, req, out_dir))
                except ChildError as e:
                    for target in req["targets"]:
                        (out_dir / target / f"{inst.stem}.tileirbc").unlink(missing_ok=True)
                    if len(v.instances) > 1:
                        v.instances.remove(inst)
                        plan.notes.append(f"{inst.dtype} instance dropped: {e.message}")
                    else:
                        _drop(plan, v, e, out_dir, req)
            continue
        try:
            results.update(_export_variant(kernels, v, params_by_kernel, req, out_dir))
        except ChildError as e:
            _drop(plan, v, e, out_dir, req)
    return results


def _drop(plan, v, e: "ChildError", out_dir: Path, req: dict) -> None:
    for inst in v.instances:
        for target in req["targets"]:
            (out_dir / target / f"{inst.stem}.tileirbc").unlink(missing_ok=True)
    plan.variants.remove(v)
    if any(x.kernel == v.kernel for x in plan.variants):
        plan.notes.append(f"variant dropped: {e.message}")
    else:
        plan.failed[v.kernel] = e.message


def _export_variant(kernels: dict[Any, Any], v, params_by_kernel: dict[str, list[dict]], req: dict,
                    out_dir: Path) -> dict:
    from cuda.tile import TileError
    from cuda.tile.compilation import export_kernel

    from tileport.analysis.signature import build_signature, describe

    results: dict[str, Any] = {}
    for inst in v.instances:
        sig = build_signature(params_by_kernel[v.kernel], inst.param_dtypes, v.constants, v.function)
        entry = {"symbol": sig.symbol, "signature": [describe(c) for c in sig.parameters], "builds": {}}
        for target in req["targets"]:
            rel = Path(target) / f"{inst.stem}.tileirbc"
            (out_dir / target).mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            try:
                export_kernel(kernels.get((v.kernel, v.name)) or kernels[v.kernel], [sig], str(out_dir / rel),
                              output_format="tileir_bytecode", gpu_code=target,
                              bytecode_version=req["bytecode_version"])
            except TileError as e:
                loc = getattr(e, "loc", None)
                where = f"{Path(loc.filename).name}:{loc.line}" if loc and getattr(loc, "filename", None) else \
                    Path(req["path"]).name
                label = f"{v.kernel}[{v.name}]" if v.name else v.kernel
                raise ChildError("rejected", f"{where}: cuda-tile rejected kernel {label} ({inst.dtype}, "
                                 f"{target}): {type(e).__name__}: {one_line(getattr(e, 'message', e))}") from None
            except Exception as e:
                label = f"{v.kernel}[{v.name}]" if v.name else v.kernel
                raise ChildError("rejected", f"{Path(req['path']).name}: exporting {label} ({inst.dtype}, "
                                 f"{target}) failed: {type(e).__name__}: {one_line(e)}") from None
            entry["builds"][target] = {"path": str(rel), "seconds": round(time.perf_counter() - t0, 4)}
        results[inst.stem] = entry
    return results


def run(req: dict) -> dict:
    t_start = time.perf_counter()
    path = Path(req["path"]).resolve()
    try:
        import cuda.tile as ct
    except Exception as e:  # pragma: no cover - environment problem
        raise ChildError("env", f"cuda-tile is not importable in {sys.executable}: {type(e).__name__}: "
                                f"{one_line(e)}; pip install cuda-tile there, or {NO_TORCH_HINT}") from None
    from tileport.analysis.declaration import OpDeclaration
    from tileport.analysis.fakearrays import faked_in_use, gpu_present
    from tileport.analysis.fakearrays import install as install_array_fakes
    from tileport.analysis.mainblock import has_main_block
    from tileport.analysis.plan import KernelMeta, Plan, build_plan
    from tileport.analysis.static import StaticInfo
    from tileport.errors import UserError

    fakes = not gpu_present()
    if fakes:  # CuPy / cuda.core cannot allocate without a GPU: CPU fakes (fakearrays.py), named in the notes
        install_array_fakes()
    import_notes: list[str] = []
    import_launches: list = []  # a script's launches made while it was imported (on the fake device)
    try:
        module = load_module(path, req.get("import_timeout"), req.get("import_limit", "import time limit"))
    except ChildError as e:  # a module asking the GPU something at import time, on a machine without one
        if not (fakes and e.kind == "import" and any(m in e.message for m in NO_GPU_MARKERS)):
            raise
        module, import_launches, partial = _load_on_fake_device(path, req, e)
        if partial:
            import_notes.append(partial)
        import_notes.append(f"{path.name} queries the GPU when imported ({e.message.split(': ', 2)[-1][:120]}); "
                            "imported again with the fake CUDA device of launch capture")
    t_import = time.perf_counter()
    static = StaticInfo.model_validate(req["static"])
    decl = OpDeclaration.model_validate(req["declaration"])
    kernel_filter = req.get("kernel")
    kernels = find_kernels(module, path)
    metas = [KernelMeta.model_validate(kernel_meta(n, k)) for n, k in kernels.items()]
    try:
        plan = build_plan(metas, static, decl, filename=path.name, kernel_filter=None, collect_failures=True) \
            if metas else Plan(kernels=[], launches=[], variants=[], notes=list(static.notes))
    except UserError as e:
        raise ChildError("plan", str(e)) from None
    objects: dict[Any, Any] = dict(kernels)
    planning_failed = set(plan.failed)
    # Capture runs when static analysis left something open: a kernel it could not plan (or whose planned
    # variants cuda-tile rejects, e.g. an array dtype it assumed), a launch whose kernel it could not name, a
    # kernel defined inside a function (factory), or no module-level kernel.
    open_kernels = set(plan.failed) | {v.kernel for v in plan.variants if "no launch found" in v.sources}
    if kernel_filter is not None:
        plan.variants = [v for v in plan.variants if v.kernel == kernel_filter]
    t_plan = time.perf_counter()
    export = req.get("export", True)
    exports = export_all(objects, plan, _params(plan), req) if export else {}
    open_kernels |= set(plan.failed) - planning_failed
    t_static_export = time.perf_counter() - t_plan
    tests = [str(t) for t in req.get("tests") or []]
    run_main = has_main_block(path)
    # the op's own tests and its `__main__` check run even when static analysis resolved every kernel: they are
    # the launches D and E judge, and their comparisons the tolerances
    need = bool(open_kernels) or not kernels or static.factory_kernels or bool(tests) or run_main or \
        bool(import_launches) or any(ln.kernel is None for ln in static.launches)
    capture_info = None
    t_cap = 0.0
    host = req.get("host_capture")  # launches recorded on the GPU host (hostcapture), replayed here
    if need and req.get("capture", True):
        from tileport.analysis import capture as cap_mod

        why_not = cap_mod.available() if host is None else None
        if why_not is not None:
            hint = f"launch capture needs torch, which {sys.executable} lacks; {NO_TORCH_HINT}"
            plan.failed = {k: f"{msg}; {hint}" if k in planning_failed else msg for k, msg in plan.failed.items()}
            plan.notes.append(hint)
            if not kernels:
                raise ChildError("no_kernel", f"{path.name}: no module-level @ct.kernel; {hint}")
        else:
            t0 = time.perf_counter()
            ranks = {k.function: k.array_ndim for k in static.kernels}
            from tileport.analysis.capture_plan import configurations

            if host is not None:
                from types import SimpleNamespace

                from tileport.analysis.hostcapture import replayed

                launches, host_notes = replayed(module, host)
                import_notes.extend(host_notes)
                result = {"launches": launches, "tried": host.get("tried", []), "errors": host.get("errors", []),
                          "sources": host.get("sources", []), "mode": host.get("mode", "GPU host"),
                          "tolerances": [SimpleNamespace(**t) for t in host.get("tolerances", [])]}
            else:
                result = cap_mod.capture(module, decl.dtypes, ranks=ranks, tests=tests, op_path=path,
                                         run_main=run_main, tests_limit_s=float(req.get("tests_timeout_s", 120)),
                                         tests_budget_s=float(req.get("tests_budget_s", 30)), seed=import_launches)
            t_cap = time.perf_counter() - t0
            plan, objects = _merge_capture(module, path, plan, kernels, metas, static, open_kernels, result,
                                           no_launch=not static.launches and not tests)
            capture_info = {"mode": result["mode"], "calls": len(result["tried"]),
                            "launches": len(result["launches"]), "seconds": round(t_cap, 4),
                            "errors": result["errors"][:8], "sources": result["sources"],
                            "configurations": configurations(module, result["launches"], cap_mod.describe_arg),
                            "tolerances": [vars(x) for x in result["tolerances"]]}
    plan.notes.extend(import_notes)
    faked = faked_in_use() if fakes else []
    if faked:
        plan.notes.append(f"{', '.join(faked)}: tileport's CPU fake (no GPU here; arrays are numpy with a CUDA array "
                          "interface), so shapes, dtypes and constants are the op's own, values are not")
    if not kernels and not plan.variants and not plan.failed:
        raise ChildError("no_kernel", f"{path.name}: no @ct.kernel function found; decorate the device function "
                                      "with @ct.kernel (import cuda.tile as ct)")
    if kernel_filter is not None:
        names = {k.name for k in plan.kernels} | set(plan.failed) | {m.name for m in metas}
        if kernel_filter not in names:
            raise ChildError("plan", f"{path.name}: no kernel named '{kernel_filter}'; kernels: "
                                     f"{', '.join(sorted(names))}")
        plan.variants = [v for v in plan.variants if v.kernel == kernel_filter]
        plan.failed = {k: m for k, m in plan.failed.items() if k == kernel_filter}
    t0 = time.perf_counter()
    if export and capture_info is not None:  # the captured variants
        exports.update(export_all(objects, plan, _params(plan), req, select=lambda v: (v.kernel, v.name) in objects))
        kept = {inst.stem for v in plan.variants for inst in v.instances}
        for stem in [s for s in exports if s not in kept]:  # static variants that capture replaced
            for b in exports.pop(stem)["builds"].values():
                (Path(req["out_dir"]) / b["path"]).unlink(missing_ok=True)
    t_export = t_static_export + time.perf_counter() - t0
    t_end = time.perf_counter()
    from tileport.analysis.signature import ASSUMPTION
    kernel_files: dict[str, str] = {}
    for key, obj in objects.items():  # where each analysed kernel is defined (a wrapper module launches others')
        name = key[0] if isinstance(key, tuple) else key
        try:
            kernel_files.setdefault(name, str(Path(obj._annotated_function.pyfunc.__code__.co_filename).resolve()))
        except AttributeError:
            continue
    return {"ok": True, "cuda_tile": getattr(ct, "__version__", None), "plan": plan.model_dump(mode="json"),
            "kernel_files": kernel_files,
            "assumption": ASSUMPTION, "capture": capture_info,
            "exports": exports,
            "seconds": {"import": round(t_import - t_start, 4), "plan": round(t_plan - t_import, 4),
                        "capture": round(t_cap, 4), "export": round(t_export, 4)}}


NO_GPU_MARKERS = ("NVIDIA driver", "CUDA driver", "no CUDA GPUs", "Torch not compiled with CUDA", "cudaGetDeviceCount",
                  "CUDA_ERROR_NO_DEVICE", "CUDA_ERROR_NOT_INITIALIZED", "libcuda.so")


def _load_on_fake_device(path: Path, req: dict, first: "ChildError"):
    """(module, the launches it made while imported, a note or None): the op imported again on the fake CUDA device
    of launch capture, every `ct.launch` made at import recorded (a script doing its work at module level). A script
    that fails further on (reading a fake tensor's value back) keeps what it defined and launched before: its module
    as far as it ran. Otherwise the first error stands."""
    import types

    try:
        import cuda.tile as ct

        from tileport.analysis.capture import Capture
        from tileport.analysis.fakecuda import _patched, fake_cuda
    except Exception:  # pragma: no cover - the interpreter has no torch: the first error stands
        raise first from None
    cap = Capture(types.ModuleType(path.stem), False)
    cap.source, cap.entry = "main", f"{path.name} (import)"
    try:
        with fake_cuda(), _patched(ct, "launch", cap.launch):
            try:
                return load_module(path, req.get("import_timeout"), req.get("import_limit", "import time limit")), \
                    cap.launches, None
            except ChildError as e:
                partial = sys.modules.get(_standalone_name(path)) if package_root(path) is None else None
                if not (cap.launches and partial is not None):
                    raise
                return partial, cap.launches, (
                    f"{path.name} does its work when imported: on the fake CUDA device it ran up to "
                    f"{e.message.split(': ', 1)[0]} ({e.message.rsplit(': ', 1)[-1][:100]}); its "
                    f"{len(cap.launches)} launch(es) before that are kept")
    except ChildError:
        raise first from None
    except Exception:  # no torch here: the first error stands
        raise first from None


def _params(plan) -> dict[str, list[dict]]:
    return {k.name: [p.model_dump() for p in k.params] for k in plan.kernels}


def _merge_capture(module, path: Path, plan, kernels: dict, metas: list, static, open_kernels: set[str],
                   result: dict, no_launch: bool = False):
    """Static results stay for kernels it resolved; captured launches fill in the rest."""
    from tileport.analysis.capture import describe_arg
    from tileport.analysis.capture_plan import captured_plan

    resolved = {v.kernel for v in plan.variants} - open_kernels
    cplan, cobjects, _ = captured_plan(module, result["launches"], static, kernel_meta, describe_arg, None, path.name)
    seen = sorted({v.kernel for v in cplan.variants})
    take = {k.name for k in cplan.kernels} - resolved
    objects: dict[Any, Any] = dict(kernels)
    objects.update({key: obj for key, obj in cobjects.items() if key[0] in take})
    kinfos = [k for k in plan.kernels if k.name not in take] + [k for k in cplan.kernels if k.name in take]
    variants = [v for v in plan.variants if v.kernel not in take] + [v for v in cplan.variants if v.kernel in take]
    launches = [ln for ln in plan.launches if ln.kernel not in take] + [ln for ln in cplan.launches if ln.kernel in take]
    failed = {k: m for k, m in plan.failed.items() if k not in take}
    notes = [n for n in plan.notes if not any(n.startswith(f"{k}.") or n.startswith(f"{k}:") for k in take)]
    notes += cplan.notes
    for name in [n for n in failed]:
        tried = result["tried"]
        calls = "; ".join(tried[:3]) + (f" and {len(tried) - 3} more" if len(tried) > 3 else "")
        errors = f"; first failure: {result['errors'][0]}" if result["errors"] else ""
        static_why = failed.get(name) or "no launch of it found statically"
        skipped = next((n for n in cplan.notes if f"launch of {name} skipped: " in n), None)
        if skipped:  # its launches were reached, and none makes a variant
            failed[name] = f"{name}: {static_why.removeprefix(path.name + ':')}; capture: {skipped}"
            variants = [v for v in variants if v.kernel != name]
            continue
        failed[name] = (f"{name}: {static_why.removeprefix(path.name + ':')}; capture: no ct.launch of {name} reached "
                        f"(calls tried: {calls or 'none (no public entry point)'}; launches seen: "
                        f"{', '.join(seen) or 'none'}{errors})")
        if no_launch and not result["tried"] and name == next(iter(failed)):
            # a kernel-only module (said once): its launches live in the code that imports it
            failed[name] += (f"; {path.name} launches none of its kernels: pass the tests or a script that launch "
                             f"them: tileport analyze {path.name} --tests tests/test_{path.stem}.py (or a bench "
                             "script), or [analysis] tests in tileport.toml")
        variants = [v for v in variants if v.kernel != name]
    for k in take:
        notes.append(f"{k}: variants from launch capture ({result['mode']})")
    # A kernel static analysis resolved keeps its variants, plus those the op's own tests/scripts launch besides.
    own = [ln for ln in result["launches"] if ln.source != "guess"]
    if own and resolved:
        oplan, oobjects, _ = captured_plan(module, own, static, kernel_meta, describe_arg, resolved, path.name)
        have = {(v.kernel, v.name) for v in variants}
        static_dtypes = {(v.kernel, v.name): {i.dtype for i in v.instances} for v in variants}
        for v in oplan.variants:
            if (v.kernel, v.name) not in have:
                variants.append(v)
                objects[(v.kernel, v.name)] = oobjects[(v.kernel, v.name)]
                notes.append(f"{v.kernel}[{v.name}]: a variant the op's own tests/scripts launch")
            elif not {i.dtype for i in v.instances} <= static_dtypes[(v.kernel, v.name)]:
                target = next(x for x in variants if (x.kernel, x.name) == (v.kernel, v.name))
                known = {i.dtype for i in target.instances}
                target.instances.extend(i for i in v.instances if i.dtype not in known)
                objects.setdefault((v.kernel, v.name), oobjects[(v.kernel, v.name)])
    plan = plan.model_copy(update={"kernels": kinfos, "variants": variants, "launches": launches,
                                   "failed": failed, "notes": notes})
    return plan, objects


def guarded(req: dict) -> dict:
    """run(), with every failure turned into a reply."""
    try:
        return run(req)
    except ChildError as e:
        return {"ok": False, "error": {"kind": e.kind, "message": e.message}}
    except BaseException as e:  # a bug here must still produce a parseable reply
        return {"ok": False, "error": {"kind": "internal", "message": f"{type(e).__name__}: {one_line(e)}"},
                "traceback": traceback.format_exc()}


def _die_with_parent() -> None:
    from tileport.exec.proc import die_with_parent

    die_with_parent()


def main() -> int:
    _die_with_parent()
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # the op module's prints (Python or C) go to stderr
    sys.stdout = sys.stderr
    reply = guarded(json.loads(sys.stdin.read()))
    with os.fdopen(reply_fd, "w") as out:
        json.dump(reply, out)
    return 0


# ---------------------------------------------------------------------------------------------
# Warm server: pay cuda-tile's import once, fork a fresh process per op.


def _forked_job(job: dict) -> None:
    """In the forked process: run one request with its own stdout/stderr file, then _exit."""
    code = 0
    try:
        _die_with_parent()  # the warm server is its parent; the server dies with tileport
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)  # the op must not read the server's job stream
        fd = os.open(job["stderr_file"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.chdir(job["cwd"])
        reply = guarded(job["request"])
        with open(job["reply_file"], "w", encoding="utf-8") as f:
            json.dump(reply, f)
    except BaseException:
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _fork(job: dict) -> int:
    pid = os.fork()
    if pid == 0:
        _forked_job(job)
    return pid


def _finished(pid: int, deadline: float) -> tuple[int, bool, float] | None:
    """(exit code (negative: signal), killed for time, CPU seconds) of a forked job that ended, else None."""
    done, status, usage = os.wait4(pid, os.WNOHANG)
    timed_out = False
    if not done:
        if time.monotonic() <= deadline:
            return None
        os.kill(pid, 9)
        _, status, usage = os.wait4(pid, 0)
        timed_out = True
    return os.waitstatus_to_exitcode(status), timed_out, usage.ru_utime + usage.ru_stime


def serve() -> int:
    """Line-delimited JSON on stdin/stdout: {id, request, reply_file, stderr_file, cwd, timeout} ->
    {id, status, timed_out, cpu_s, seconds}, one reply per job as it ends. Jobs run side by side, each in its own
    forked process; the server itself never imports an op module. End of input: running jobs are killed."""
    _die_with_parent()
    for name in ("cuda.tile", "cuda.tile._compile", "tileport.analysis.plan", "tileport.analysis.signature"):
        importlib.import_module(name)  # the expensive imports (torch among them), done once before any fork

    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    running: dict[int, tuple[Any, float, float]] = {}  # pid -> (job id, start, deadline)
    pending = b""
    while True:
        ready, _, _ = select.select([0], [], [], 0.02 if running else None)
        if ready:
            data = os.read(0, 1 << 16)
            if not data:
                break
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in filter(bytes.strip, lines):
                job = json.loads(line)
                t0 = time.monotonic()
                try:
                    running[_fork(job)] = (job.get("id"), t0, t0 + float(job.get("timeout", 600)))
                except OSError:  # no process left to fork: this job fails, the server goes on
                    out.write(json.dumps({"id": job.get("id"), "status": 71, "timed_out": False, "cpu_s": 0.0,
                                          "seconds": 0.0}) + "\n")
        for pid, (job_id, t0, deadline) in list(running.items()):
            ended = _finished(pid, deadline)
            if ended is None:
                continue
            del running[pid]
            status, timed_out, cpu = ended
            out.write(json.dumps({"id": job_id, "status": status, "timed_out": timed_out, "cpu_s": round(cpu, 4),
                                  "seconds": round(time.monotonic() - t0, 4)}) + "\n")
        out.flush()
    for pid in running:  # the client went away: nobody waits for these any more
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    raise SystemExit(serve() if sys.argv[1:] == ["--serve"] else main())
