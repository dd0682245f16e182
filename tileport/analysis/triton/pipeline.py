"""Stage A for a Triton op: `analyze_triton_op` -> the same `Analysis` record, `source.kind == "triton"`.

Static reading (`static.inspect_triton`) gives kernels, parameters, constexpr branches, memory ops and the
`kernel[grid](...)` launches; the child (`child.py`, in the analysis interpreter: torch + triton) imports the op
and captures its launches with fake tensors, which gives what only running the wrapper shows: constexprs from
heuristics and wrapper code, every autotune config, the grid a lambda computes, argument dtypes and ranks.

Variants are the distinct (kernel, constexprs, options) the captured launches used, else the autotune configs,
else the literal constexprs of the static launches. Instances carry no Tile IR builds: a Triton kernel has Tile IR
only through a Triton-to-Tile-IR backend (`backend.py`); without one `triton.tile_ir_gap` says so.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from tileport.config import Config
from tileport.errors import UserError
from tileport.records import sha256_file
from tileport.analysis.declaration import read_declaration
from tileport.analysis.loader import child_env, child_timeout, interpret, with_limits
from tileport.analysis.outdir import check_output_dir, staged_dir
from tileport.analysis.pipeline import read_source
from tileport.analysis.schema import (Analysis, CaptureInfo, Instance, KernelInfo, LaunchInfo, SourceInfo,
                                                 Timings, ToleranceSpec, ToolInfo, Variant)
from tileport.analysis.triton.backend import NO_BACKEND_GAP, TileIRBackend
from tileport.analysis.triton.detect import is_triton_source
from tileport.analysis.triton.schema import TritonInfo
from tileport.analysis.triton.static import inspect_triton
from tileport.exec.proc import run_command

CHILD_MODULE = "tileport.analysis.triton.child"
OPTION_ORDER = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def default_triton_out_dir(op_path: str | Path) -> Path:
    """Beside a cuTile Python op's `out/<op>/`, never on it: `out/<op>.triton/`."""
    return Path("out") / f"{Path(op_path).stem}.triton"


def _fmt(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _label(constants: dict[str, Any], options: dict[str, Any]) -> str:
    parts = [f"{k}={_fmt(v)}" for k, v in sorted(constants.items())]
    parts += [f"{k}={_fmt(options[k])}" for k in OPTION_ORDER if k in options]
    return ",".join(parts)


def _scalar_dtype(desc: dict) -> str:
    return {"int": "int32", "float": "float32", "bool": "bool_"}.get(desc.get("kind", ""), "other")


def _instances(kernel: KernelInfo, launches: list[dict], dtypes: list[str]) -> list[Instance]:
    """One instance per op dtype the launches used (the first array argument's dtype), else per declared dtype."""
    by_dtype: dict[str, dict] = {}
    for ln in launches:
        arrays = [d for d in ln["args"].values() if d.get("kind") == "tensor"]
        if arrays:
            by_dtype.setdefault(arrays[0]["dtype"], ln)
    out = []
    for dtype in (list(by_dtype) or dtypes):
        ln = by_dtype.get(dtype)
        param_dtypes, signature = {}, []
        for p in kernel.params:
            if p.kind == "constant":
                continue
            d = (ln or {}).get("args", {}).get(p.name, {})
            if d.get("kind") == "tensor":
                param_dtypes[p.name] = d["dtype"]
                signature.append({"param": p.name, "kind": "pointer", "dtype": d["dtype"], "ndim": d.get("ndim")})
            elif d:
                param_dtypes[p.name] = _scalar_dtype(d)
                signature.append({"param": p.name, "kind": "scalar", "dtype": _scalar_dtype(d)})
            else:
                param_dtypes[p.name] = dtype if p.kind == "array" else "int32"
                signature.append({"param": p.name, "kind": "pointer" if p.kind == "array" else "scalar",
                                  "dtype": param_dtypes[p.name]})
        out.append(Instance(dtype=dtype, param_dtypes=param_dtypes, symbol=kernel.name, signature=signature,
                            builds=[]))
    return out


def _params_from_capture(kernel: KernelInfo, launches: list[dict]) -> KernelInfo:
    """A parameter the captured launches passed a tensor is an array (with its rank), a number a scalar."""
    if not launches:
        return kernel
    first = launches[0]["args"]
    params = []
    for p in kernel.params:
        d = first.get(p.name)
        if p.kind == "constant" or d is None:
            params.append(p)
        elif d.get("kind") == "tensor":
            params.append(p.model_copy(update={"kind": "array", "ndim": d.get("ndim")}))
        else:
            params.append(p.model_copy(update={"kind": "scalar", "dtype": _scalar_dtype(d)}))
    return kernel.model_copy(update={"params": params})


def _variants(static, metas: dict[str, dict], launches: list[dict], dtypes: list[str],
              kernels: dict[str, KernelInfo]) -> tuple[list[Variant], dict[str, dict]]:
    variants: list[Variant] = []
    options_by_label: dict[str, dict] = {}
    for kinfo in static.kernels:
        name = kinfo.name
        mine = [ln for ln in launches if ln["kernel"] == name]
        groups: dict[str, tuple[dict, dict, list[dict], list[str]]] = {}
        for ln in mine:
            consts = {k: v for k, v in ln["constexprs"].items() if isinstance(v, (bool, int, float))}
            label = _label(consts, ln["options"])
            g = groups.setdefault(label, (consts, ln["options"], [], []))
            g[2].append(ln)
            src = f"capture {ln['where']}" + (f" (autotune config {ln['config']})" if ln.get("config") is not None
                                               else "")
            if src not in g[3]:
                g[3].append(src)
        if not groups:  # no capture: autotune configs, else literal launch constexprs
            meta = metas.get(name) or {}
            for i, cfg in enumerate((meta.get("autotune") or {}).get("configs") or []):
                consts = {k: v for k, v in cfg["kwargs"].items() if isinstance(v, (bool, int, float))}
                groups.setdefault(_label(consts, cfg["options"]), (consts, cfg["options"], [], [f"autotune config {i}"]))
            for ln in (x for x in static.launches if x.kernel == name):
                consts = {k: v for k, v in ln.constants.items() if v is not None}
                groups.setdefault(_label(consts, {}), (consts, {}, [], [f"launch {ln.function}:{ln.line}"]))
        # A constexpr bool the wrapper passes as a run-time value (`FUSE_SCALE=fuse`) is analysed both ways, as
        # for a ct.Constant[bool]: capture with conventional inputs may have reached only one of them.
        runtime = {k for ln in static.launches if ln.kernel == name for k, v in ln.constants.items() if v is None}
        for k in sorted(runtime):
            for label, (consts, options, lns, sources) in list(groups.items()):
                if isinstance(consts.get(k), bool):
                    flipped = {**consts, k: not consts[k]}
                    groups.setdefault(_label(flipped, options),
                                      (flipped, options, lns, [f"enumerated {k} (a run-time bool at the launch)"]))
        for label, (consts, options, lns, sources) in groups.items():
            full = f"{name}[{label}]" if label else name
            options_by_label[full] = options
            variants.append(Variant(kernel=name, name=label, constants=consts, sources=sources,
                                    instances=_instances(kernels[name], lns, dtypes)))
    return variants, options_by_label


def run_triton_child(path: Path, dtypes: list[str], python: str | None, cwd: Path):
    request = {"path": str(path.resolve()), "dtypes": dtypes}
    timeout = child_timeout()
    argv = [python or sys.executable, "-m", CHILD_MODULE]
    res = run_command(argv, cwd=cwd, env=child_env(), timeout=timeout, input=json.dumps(with_limits(request)).encode())
    try:
        reply = json.loads(res.stdout)
    except json.JSONDecodeError:
        reply = None
    return interpret(reply, res, request, timeout), res


def analyze_triton_op(path: str | Path, *, out_dir: str | Path | None = None, kernel: str | None = None,
                      config: Config | None = None, python: str | None = None) -> Analysis:
    """Analyse one Triton op; returns the Analysis also written to `<out_dir>/analysis.json`.

    Bad input is a one-line UserError, a missing triton an EnvironmentBlocked; nothing is left at `out_dir`."""
    t0 = time.perf_counter()
    config = config or Config()
    path = Path(path)
    text, tree = read_source(path)
    if not is_triton_source(tree):
        raise UserError(f"{path}: no @triton.jit kernel found; a Triton op imports triton and decorates its "
                        "kernels with @triton.jit")
    decl = read_declaration(tree, path.name)
    static = inspect_triton(tree, text)
    if kernel is not None and kernel not in {k.name for k in static.kernels}:
        raise UserError(f"{path.name}: no @triton.jit kernel {kernel!r}; it has "
                        f"{', '.join(k.name for k in static.kernels)}")
    python = python or config.analysis.python
    t_static = time.perf_counter()
    final = Path(out_dir if out_dir is not None else default_triton_out_dir(path)).absolute()
    check_output_dir(final)
    with staged_dir(final) as stage:
        t_child = time.perf_counter()
        reply, child = run_triton_child(path, list(decl.dtypes), python, stage)
        t_child = time.perf_counter() - t_child
        metas = {m["name"]: m for m in reply["kernels"]}
        cap = reply.get("capture") or {}
        launches = [ln for ln in cap.get("launches", []) if kernel is None or ln["kernel"] == kernel]
        kernels = {k.name: _params_from_capture(k, [ln for ln in launches if ln["kernel"] == k.name])
                   for k in static.kernels if kernel is None or k.name == kernel}
        static_sel = static.model_copy(update={"kernels": list(kernels.values())})
        variants, options = _variants(static_sel, metas, launches, list(decl.dtypes), kernels)
        notes = []
        if not decl.present:
            notes.append("no TILEPORT declaration: dtypes float16/float32, constexprs from launches, no shapes")
        if reply.get("capture_unavailable"):
            notes.append(f"launch capture did not run ({reply['capture_unavailable']}): variants from the source only")
        backend = TileIRBackend.model_validate(reply.get("backend") or {})
        gap = None if backend.usable else NO_BACKEND_GAP
        if gap:
            notes.append(f"{gap} ({backend.describe()})")
        captured = [LaunchInfo(function=ln["entry"].split("(")[0], line=int(ln["where"].split(":")[1].split()[0])
                               if ":" in ln["where"] else 0, kernel=ln["kernel"], grid=str(tuple(ln["grid"])),
                               args=[f"{k}={_describe(v)}" for k, v in ln["args"].items()],
                               constants={k: v for k, v in ln["constexprs"].items()
                                          if isinstance(v, (bool, int, float)) or v is None},
                               constant_exprs={}, captured=True, entry=ln["entry"]) for ln in launches]
        tolerances = {d: ToleranceSpec(atol=t.atol, rtol=t.rtol) for d, t in config.tolerances.items()
                      if d in decl.dtypes}
        tolerances.update(decl.tolerances)
        analysis = Analysis(
            op=path.stem,
            source=SourceInfo(path=str(path.resolve()), sha256=sha256_file(path), bytes=path.stat().st_size,
                              kind="triton"),
            out_dir=str(final), targets=list(config.targets), bytecode_version=config.toolchain.bytecode_version,
            tools=ToolInfo(python=sys.version.split()[0]), declared=decl.present, dtypes=decl.dtypes,
            shapes=decl.shapes, tolerances=tolerances,
            assumptions=["pointers as torch passes them: contiguous tensors, 16-byte aligned"],
            kernels=list(kernels.values()),
            launches=[ln for ln in static.launches if ln.kernel in kernels] + captured,
            variants=variants, commands=[child.record], notes=notes,
            capture=CaptureInfo(mode=cap["mode"], calls=len(cap.get("tried", [])), launches=len(launches),
                                seconds=cap.get("seconds", 0.0), errors=cap.get("errors", [])[:5]) if cap else None,
            triton=TritonInfo(version=reply.get("triton"), kernels=[t for t in static.triton if t.kernel in kernels],
                              variant_options=options, tile_ir_backend=backend.describe(), tile_ir_gap=gap),
            timings=Timings(static_s=round(t_static - t0, 4), child_s=round(t_child, 4),
                            capture_s=float(cap.get("seconds", 0.0))))
        if not analysis.variants:
            raise UserError(f"{path.name}: no launch of {', '.join(kernels)} was found or captured; call the kernel "
                            "from a host function (kernel[grid](...)) or define tileport_inputs(op, device)")
        analysis.timings.total_s = round(time.perf_counter() - t0, 4)
        (stage / "analysis.json").write_text(analysis.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return analysis


def _describe(d: dict) -> str:
    if d.get("kind") == "tensor":
        return f"{d['dtype']}[{'x'.join(map(str, d['shape']))}]"
    return repr(d.get("value", d.get("kind")))


__all__ = ["analyze_triton_op", "default_triton_out_dir"]
