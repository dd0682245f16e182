"""Stage E for captured launches, in a child process on the GPU host (travels as `tp_replay.py`; standard library,
torch and cuda.tile, plus the gate's `runner.py` and `tp_testchild.py`).

    python tp_replay.py PACK_DIR --project DIR --lib SO --inputs DIR --out rows.json

For each configuration the pack chose (`gate.json` `perf_configs`: kernel, grid, arguments as dtype[shape] or
values): the arguments the reference run of the op's tests launched it with (`--inputs`, saved during D), else
tensors made from the shapes and dtypes (floating: normal values; integers: zeros, flagged). The kernel is found
in the op's modules by name. Both sides launch exactly those arguments on torch's current stream: the reference
through the real `ct.launch`, the port through `runner.PortLauncher`. Correctness of the replay first (each side on
its own copy; every argument the reference changed must match within the pack's tolerance for its dtype), then
device time from CUPTI with the L2 flushed before each call (`runner._profile`, `Flusher`, kernel names learnt
from one traced call and asserted per call), launch attributes and idle gaps as the harness records them, and each
side's host wall time per call: `call_us` (from the call to the end of a synchronise after it) and `return_us`
(until the call returns), each call after a synchronise, and `burst_us` (until it returns, calls back to back),
medians over warm calls (`runner.host_times`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

def make_args(cfg: dict, torch, seed: int):
    """Arguments from the shapes and dtypes capture recorded: floating tensors normal, integer tensors zeros."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    out, flags = [], []
    for text in cfg["args"]:
        p = _parse(text)
        if p["kind"] == "tensor":
            dt = getattr(torch, p["dtype"])
            if dt.is_floating_point:
                out.append(torch.randn(p["shape"], generator=g, device="cuda", dtype=torch.float32).to(dt))
            else:
                out.append(torch.zeros(p["shape"], device="cuda", dtype=dt))
                flags.append("integer inputs made as zeros")
        elif p["kind"] in ("bool", "int", "float"):
            out.append(p["value"])
        elif p["kind"] == "none":
            out.append(None)
        else:
            raise ValueError(f"argument {text!r} cannot be made from its description")
    return out, sorted(set(flags))


def _parse(text: str) -> dict:
    import re

    m = re.match(r"^([A-Za-z0-9_]+)\[([0-9x]*)\]$", text)
    if m:
        return {"kind": "tensor", "dtype": m.group(1),
                "shape": [int(x) for x in m.group(2).split("x")] if m.group(2) else []}
    if text in ("True", "False"):
        return {"kind": "bool", "value": text == "True"}
    for kind, conv in (("int", int), ("float", float)):
        try:
            return {"kind": kind, "value": conv(text)}
        except ValueError:
            pass
    return {"kind": "none"} if text == "none" else {"kind": "other"}


def parse_grid(text) -> tuple[int, ...]:
    """A grid as capture wrote it: `(4, 1, 1)`, `(4,)` or `4`."""
    import ast

    g = ast.literal_eval(text) if isinstance(text, str) else text
    return tuple(int(x) for x in (g if isinstance(g, (tuple, list)) else (g,)))


def find_kernel(name: str, modules: list, prefix: str | None):
    import cuda.tile as ct

    pools = list(modules)
    if prefix:
        pools += [m for n, m in list(sys.modules.items()) if m is not None and (n == prefix or n.startswith(prefix + "."))]
    for m in pools:
        v = vars(m).get(name)
        if isinstance(v, ct.kernel):
            return v
    for m in pools:
        for v in list(vars(m).values()):
            if isinstance(v, ct.kernel) and getattr(getattr(v, "_annotated_function", None), "pyfunc", None) is not None \
                    and v._annotated_function.pyfunc.__name__ == name:
                return v
    return None


def _clone(args, torch):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def _unchanged(before, after) -> bool:
    """Whether a tensor argument came back as it went in, NaN for NaN; in float64 for floats, so that dtypes
    without NaN arithmetic on the device (float8: no nan_to_num there) compare too."""
    if before.is_floating_point():
        b, a = before.double(), after.double()
        return bool(((b == a) | (b.isnan() & a.isnan())).all())
    return bool((before == after).all())


def check(cfg, kernel, args, sides, torch, tol) -> tuple[bool, str]:
    """Both sides on their own copy; every argument the reference changed must match."""
    base = _clone(args, torch)
    outs = {}
    for side, call in sides.items():
        a = _clone(args, torch)
        call(a)
        torch.cuda.synchronize()
        outs[side] = a
    changed = [i for i, (b, r) in enumerate(zip(base, outs["ref"])) if isinstance(b, torch.Tensor)
               and not _unchanged(b, r)]
    if not changed:
        return True, "the reference changed no argument (nothing to compare)"
    for i in changed:
        r, p = outs["ref"][i], outs["port"][i]
        atol, rtol = tol.get(str(r.dtype).removeprefix("torch."), (1e-2, 1e-2))
        if r.is_floating_point():
            bad = ~torch.isclose(p.double(), r.double(), rtol=rtol, atol=atol, equal_nan=True)
        else:
            bad = p != r
        n = int(bad.sum())
        if n:
            return False, f"argument {i}: {n} of {r.numel()} values differ from the reference (atol={atol:g}, rtol={rtol:g})"
    return True, f"{len(changed)} output argument(s) match"


def time_config(R, torch, flusher, sides, args, warmup: int, reps: int, evidence=None, library=None) -> dict:
    """One configuration's stage-E row; `evidence(ref_kernels)`, when given, is called once the reference's kernel
    names are known and returns what the row keeps as `bytecode` (the IR each side really compiled)."""
    row: dict = {"flags": []}
    expect = {}
    call_ms = 0.0  # the slower side's device time per call
    for side, call in sides.items():
        expect[side], ms = R.learn_call(lambda call=call: call(args), flusher)
        call_ms = max(call_ms, ms)
        row[f"{side}_kernels"] = expect[side]
        if not expect[side]:
            row["flags"].append(f"{side}: no kernel in the trace")
            row["failed"] = True
    if evidence is not None and expect.get("ref"):
        row["bytecode"] = evidence(expect["ref"])
    if row.get("failed"):
        return row
    plan = R.plan_row(row, call_ms, warmup, reps)
    for side, call in sides.items():
        for _ in range(plan.warmup):
            call(args)
    torch.cuda.synchronize()
    # the reference and the port, each timed twice, sides alternating call by call (R.side_streams, R.time_rotating)
    timed = R.time_rotating(R.side_streams(lambda side: lambda r: sides[side](args)), expect, plan.rounds, flusher)
    R.fold_timed(row, timed)
    row["host_us"] = {
        "ref": R.host_times(lambda: sides["ref"](args), torch.cuda.synchronize, n=plan.host_calls),
        "port": R.port_host_times(library, lambda: sides["port"](args), torch.cuda.synchronize, n=plan.host_calls)}
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("pack_dir")
    ap.add_argument("--project", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", help="the configurations to time (default: gate.json's perf_configs)")
    a = ap.parse_args(argv)
    pack_dir = Path(a.pack_dir).resolve()
    sys.path.insert(0, str(pack_dir))
    import torch
    import cuda.tile as ct
    import runner as R
    import tp_testchild as T

    gate = json.loads((pack_dir / "gate.json").read_text())
    out = Path(a.out)
    data: dict = {"rows": []}

    def save():
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, default=str))
        tmp.replace(out)

    project = Path(a.project).resolve()
    module = T.import_op(gate, project)
    prefix = (gate["tests"].get("module") or "").split(".")[0] if gate.get("tests") else None
    real = ct.launch
    library = R.PortLibrary(a.lib)
    dumps = R.BytecodeDumps.attached()  # the runner's dumps, when it keeps the IR each side compiled
    library.dumps = dumps
    port = R.PortLauncher(library)
    stream = torch.cuda.current_stream()
    tol = {k: tuple(v) for k, v in (gate.get("tolerances") or {}).items()}
    p = gate.get("perf") or {}
    warmup, reps = int(p.get("warmup", 5)), max(20, int(p.get("repetitions", 20)))
    flusher = R.Flusher(torch)
    configs = json.loads(Path(a.configs).read_text()) if a.configs else (gate.get("perf_configs") or [])
    for cfg in configs:
        row = {"config": cfg["config"], "source": "capture", "kernel": cfg["kernel"], "dtype": cfg["dtype"],
               "size_class": cfg.get("size_class"), "tests": cfg.get("origins", []), "flags": [], "ref_ms": None,
               "port_ms": None, "ratio": None, "ref_samples": [], "port_samples": []}
        phases = row.setdefault("phase_s", {})  # where a configuration's wall time goes (a replay runs under a limit)
        lap = R.phase_timer(phases)
        try:
            kernel = find_kernel(cfg["kernel"], [module], prefix)
            if kernel is None:
                raise LookupError(f"no kernel named {cfg['kernel']} in the op's modules")
            if cfg.get("hints") and R.launch_hints(kernel) != cfg["hints"]:
                # the op re-wrapped it for this launch (`ct.kernel(fn._pyfunc, num_ctas=2)`): so does E, and the
                # port serves it with the entry drafted for those hints
                kernel = kernel.replace_hints(**cfg["hints"])
            saved = Path(a.inputs) / f"{cfg.get('inputs_key') or cfg['id']}.pt"
            if saved.exists():
                blob = torch.load(saved, weights_only=False)
                args = []
                for x, st in zip(blob["args"], blob.get("strides") or [None] * len(blob["args"])):
                    if isinstance(x, torch.Tensor):
                        y = x.to("cuda")
                        if st is not None and list(y.stride()) != list(st):
                            y = torch.empty_strided(tuple(x.shape), tuple(st), dtype=x.dtype, device="cuda").copy_(x)
                        args.append(y)
                    else:
                        args.append(x)
                row["inputs"] = f"recorded from {blob.get('origin') or 'the reference run of the tests'}"
            else:
                args, flags = make_args(cfg, torch, cfg["id"] + 1)
                row["inputs"] = "made from the captured shapes and dtypes"
                row["flags"] += flags
            lap("inputs")
            grid = parse_grid(cfg["grid"])
            sides = {"ref": lambda xs: real(stream, grid, kernel, tuple(xs)),
                     "port": lambda xs: port(stream, grid, kernel, tuple(xs))}
            before = dumps.reference_files() if dumps else set()
            ok, why = check(cfg, kernel, args, sides, torch, tol)  # the reference's first call of this configuration
            # the reference bytecode that call compiled (or an earlier one of the same specialisation did)
            ref_files = dumps.compiled_since(before, R.specialisation(kernel, args)) if dumps else []
            row["check"] = why
            lap("check")
            if not ok:
                row["failed"] = True
                row["flags"].append(f"replay outputs differ: {why}")
            else:
                def evidence(ref_kernels, args=args, sides=sides, ref_files=ref_files):
                    port.clear()  # the port's launches of one call: which bytecode each compiled
                    sides["port"](args)
                    torch.cuda.synchronize()
                    return R.bytecode_evidence(dumps, library, ref_kernels, port.calls,
                                               data.setdefault("bytecode", {}), ref_files)

                timed = time_config(R, torch, flusher, sides, args, warmup, reps, evidence, library)
                lap("timed")
                flags = row["flags"] + timed.pop("flags", [])
                row.update(timed)
                row["flags"] = flags
        except Exception as e:  # noqa: BLE001 - one configuration's failure is that row's
            row["failed"] = True
            row["flags"].append(f"replay failed: {type(e).__name__}: {str(e)[:300]}")
        if row.get("ref_ms") and row.get("port_ms"):
            row["ratio"] = row["port_ms"] / row["ref_ms"]
            if max(row["ref_ms"], row["port_ms"]) * 1000 < R.TINY_US:  # both sides (reports.is_tiny judges it)
                row["flags"].append(f"tiny: both sides under {R.TINY_US:g} us, not in the geomean unless over "
                                    "config_max")
                row["tiny"] = True
        elif not row.get("failed"):
            row["failed"] = True
        data["rows"].append(row)
        print(f"PERF {row['config']}: ref {row['ref_ms']} ms port {row['port_ms']} ms ratio "
              f"{row['ratio'] and round(row['ratio'], 3)} host us {row.get('host_us')} {row['flags']} s {phases}", flush=True)
        save()
        if any(T.sticky(f) for f in row["flags"]):
            data["error"] = "a CUDA error ended the replay (the context is lost)"
            save()
            return 1
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
