"""Launch capture on the GPU host (`python -m tileport.analysis.hostcapture`), for `[gpu] command_prefix`.

On a CPU machine capture runs the op's code on fake tensors; what needs real arrays (values read back with
`.item()`, a library only the GPU host has) records no launch there. This runs the same capture where the GPU is:
it imports the op, runs its tests / `__main__` block / entry points with every `ct.launch` recorded and really
launched, and answers with the launches described (kernel by module and name, grid, each argument as
`capture.describe_arg` writes it, where, which test), the comparisons' tolerances and what ran. The analysis child
here turns them back into launches of its own kernel objects (`replayed`), so the plan, the exports and the
configurations are made as for a capture made here.

Imports only the standard library, torch and cuda.tile (and pytest for the op's tests) with this package: the GPU
host needs no pydantic. Request (stdin): {path, tests, run_main, dtypes, ranks, tests_timeout_s, tests_budget_s,
import_timeout}; reply (stdout): {ok, launches, tried, errors, tolerances, sources, mode, seconds} or {ok: false,
error}.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

MODE = "real launches on the GPU host ([gpu] command_prefix)"


def kernel_ref(module: ModuleType, kernel: Any) -> dict[str, Any]:
    """Where a launched kernel object lives: {module, name} of the module attribute holding it (the op module first,
    then its function's own module), or {factory: function name} for one made inside a function."""
    fn = kernel._annotated_function.pyfunc
    for mod in (module, sys.modules.get(fn.__module__)):
        if mod is None:
            continue
        for name, obj in vars(mod).items():
            if obj is kernel:
                return {"module": mod.__name__, "name": name}
    return {"factory": fn.__qualname__}


def describe_launch(module: ModuleType, ln: Any) -> dict[str, Any]:
    from tileport.analysis.capture import describe_arg, launch_hints

    return {"kernel": kernel_ref(module, ln.kernel), "grid": list(ln.grid) if isinstance(ln.grid, (tuple, list))
            else ln.grid, "args": [describe_arg(a) for a in ln.args], "where": ln.where, "entry": ln.entry,
            "via": ln.via, "source": ln.source, "hints": launch_hints(ln.kernel)}


def run(req: dict[str, Any]) -> dict[str, Any]:
    from tileport.analysis.capture import capture
    from tileport.analysis.child import load_module

    path = Path(req["path"]).resolve()
    module = load_module(path, req.get("import_timeout"), "import time limit")
    result = capture(module, list(req.get("dtypes") or []), ranks=req.get("ranks") or {}, tests=req.get("tests"),
                     op_path=path, run_main=bool(req.get("run_main")),
                     tests_limit_s=float(req.get("tests_timeout_s", 120)),
                     tests_budget_s=float(req.get("tests_budget_s", 30)))
    return {"ok": True, "launches": [describe_launch(module, ln) for ln in result["launches"]],
            "tried": result["tried"], "errors": result["errors"], "sources": result["sources"],
            "tolerances": [vars(t) for t in result["tolerances"]],
            "mode": MODE if result["mode"] == "gpu" else f"{result['mode']} on the GPU host (it has no GPU)",
            "seconds": result["seconds"]}


class Described:
    """An argument as the GPU host described it: `capture.describe_arg` returns the description itself."""

    def __init__(self, desc: dict[str, Any]):
        self.desc = desc


def replayed(module: ModuleType, reply: dict[str, Any]) -> tuple[list, list[str]]:
    """The GPU host's launches as `capture.Launch`es of this process' kernel objects, and a note per launch whose
    kernel cannot be found here (one made inside a function: its closure values did not travel)."""
    import importlib

    from tileport.analysis.capture import Launch

    out, notes = [], []
    for d in reply.get("launches") or []:
        ref = d["kernel"]
        kernel = None
        if "module" in ref:
            mod = sys.modules.get(ref["module"]) if ref["module"] != "__main__" else module
            try:
                mod = mod or importlib.import_module(ref["module"])
                kernel = getattr(mod, ref["name"], None)
            except Exception:  # noqa: BLE001 - a module only the GPU host can import: said below
                kernel = None
        if kernel is None:
            what = ref.get("factory") or f"{ref.get('module')}.{ref.get('name')}"
            notes.append(f"{d['where']}: a launch of {what} on the GPU host has no kernel object here "
                         "(made inside a function, or in a module this machine cannot import); not replayed")
            continue
        if d.get("hints"):  # a kernel the op re-wrapped for this launch (`ct.kernel(fn._pyfunc, num_ctas=2)`)
            from tileport.analysis.capture import launch_hints

            if launch_hints(kernel) != d["hints"]:
                kernel = kernel.replace_hints(**d["hints"])
        grid = tuple(d["grid"]) if isinstance(d["grid"], list) else d["grid"]
        out.append(Launch(kernel, grid, tuple(Described(a) for a in d["args"]), d["where"], d["entry"], d["via"],
                          d.get("source", "guess")))
    return out, notes


def main() -> int:
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # the op's prints go to stderr
    sys.stdout = sys.stderr
    from tileport.analysis.child import ChildError, one_line

    try:
        reply = run(json.loads(sys.stdin.read()))
    except ChildError as e:
        reply = {"ok": False, "error": e.message}
    except BaseException as e:  # noqa: BLE001 - the parent gets one line, whatever happened
        reply = {"ok": False, "error": f"{type(e).__name__}: {one_line(e)}"}
    with os.fdopen(reply_fd, "w") as out:
        json.dump(reply, out, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
