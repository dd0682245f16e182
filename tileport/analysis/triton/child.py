"""The child process that imports a Triton op and captures its launches
(`python -m tileport.analysis.triton.child`).

Request (stdin, JSON): {path, dtypes, import_timeout, import_limit}
Reply (stdout, JSON):  {ok, triton, kernels: [{name, line, params, autotune, heuristics}], capture, backend}
The op's own prints go to stderr; failures are {"ok": false, "error": {kind, message}} as for cuTile Python.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from tileport.analysis.child import ChildError, load_module, one_line


def _kernel_meta(name: str, obj: Any) -> dict[str, Any]:
    from triton.runtime.autotuner import Autotuner, Heuristics

    from tileport.analysis.triton.capture import OPTION_NAMES, _value, chain, jit_function

    fn = jit_function(obj)
    links = chain(obj)
    tuner = next((x for x in links if isinstance(x, Autotuner)), None)
    heur = [k for x in links if isinstance(x, Heuristics) for k in x.values]
    params = [{"name": p.name, "constexpr": bool(p.is_constexpr),
               "annotation": None if p.annotation in (None, "") else str(p.annotation),
               "default": _value(p.default) if p.has_default else None} for p in fn.params]
    autotune = None
    if tuner is not None:
        autotune = {"key": list(tuner.keys), "configs": [
            {"kwargs": {k: _value(v) for k, v in c.kwargs.items()},
             "options": {k: getattr(c, k) for k in OPTION_NAMES if getattr(c, k, None) is not None}}
            for c in tuner.configs]}
    return {"name": fn.fn.__name__, "attr": name, "line": int(getattr(fn, "starting_line_number", 0) or 0),
            "params": params, "autotune": autotune, "heuristics": heur}


def find_kernels(module) -> dict[str, Any]:
    from tileport.analysis.triton.capture import jit_function

    out = {}
    for name, obj in vars(module).items():
        fn = jit_function(obj) if hasattr(obj, "fn") or type(obj).__name__ == "JITFunction" else None
        if fn is not None and getattr(fn.fn, "__module__", None) == module.__name__:
            out[name] = obj
    return out


def run(req: dict) -> dict:
    try:
        import triton
    except Exception as e:
        raise ChildError("env", f"this interpreter ({sys.executable}) cannot import triton ({type(e).__name__}: "
                                f"{one_line(e, 120)}); run scripts/setup-torch-venv.sh and pass its python with "
                                "--python (tileport doctor shows the one in use)") from None
    path = Path(req["path"]).resolve()
    module = load_module(path, req.get("import_timeout"), req.get("import_limit", "import time limit"))
    kernels = find_kernels(module)
    if not kernels:
        raise ChildError("kernel", f"{path.name}: no @triton.jit kernel found after import")
    metas = [_kernel_meta(n, k) for n, k in kernels.items()]
    from tileport.analysis import capture as ct_capture
    from tileport.analysis.triton import backend
    from tileport.analysis.triton.capture import capture

    cap = None
    why = ct_capture.available()
    if why is None:
        cap = capture(module, list(req.get("dtypes") or ["float16"]))
    return {"ok": True, "triton": triton.__version__, "kernels": metas, "capture": cap,
            "capture_unavailable": why, "backend": backend.detect_here().model_dump(mode="json")}


def guarded(req: dict) -> dict:
    try:
        return run(req)
    except ChildError as e:
        return {"ok": False, "error": {"kind": e.kind, "message": e.message}}
    except BaseException as e:
        return {"ok": False, "error": {"kind": "internal", "message": f"{type(e).__name__}: {one_line(e)}"},
                "traceback": traceback.format_exc()}


def main() -> int:
    from tileport.exec.proc import die_with_parent

    die_with_parent()
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    reply = guarded(json.loads(sys.stdin.read()))
    with os.fdopen(reply_fd, "w") as out:
        json.dump(reply, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
