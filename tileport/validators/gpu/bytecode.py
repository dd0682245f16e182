"""The IR each side really ran, diffed: evidence for a slow configuration that passed the IR self-check.

The GPU runner keeps, per timed configuration, the Tile IR bytecode cuTile Python's JIT compiled for the
reference (`CUDA_TILE_DUMP_BYTECODE`) and the bytecode cutile handed tileiras for the port (a `CUTILE_TILEIRAS_PATH`
wrapper), in results.json (`bytecode` by hash, each row's `bytecode` naming its kernels'; runner.bytecode_evidence).
The IR self-check of stage B compares the port with the reference IR exported at analysis time under assumed
constraints; this compares what the two JITs compiled for the configuration that was timed, through one printer
(tileirdisasm) and the same IR gate (tileport.validators.tileir), so stage F can say "passes the IR self-check,
N x slower" with the finding that explains it.

    python -m tileport.validators.gpu.bytecode OUT/*.json [--write]   # print per row; --write keeps it in the file
"""

from __future__ import annotations

import argparse
import base64
import re
import sys
import tempfile
from pathlib import Path

from tileport.errors import EnvironmentBlocked, UserError
from tileport.validators.tileir.diff import Severity, diff_modules
from tileport.validators.tileir.report import load_module

MAX_FINDINGS = 12  # per row, the most severe first


def row_diff(row: dict, store: dict, target: str | None = None, tileirdisasm: str | None = None) -> dict | None:
    """The IR gate's verdict and findings between the bytecode each side compiled for one timed configuration
    (kernels paired in launch order), or None when the row carries no bytecode; a side's missing bytecode or
    a tool failure is said in `missing` / `error`, never raised."""
    bc = row.get("bytecode")
    if not isinstance(bc, dict) or ("ref" not in bc and "port" not in bc):
        return None if not bc else {"missing": bc.get("missing", "no bytecode recorded")}
    ref, port = bc.get("ref") or [], bc.get("port") or []
    if not ref or not port or any(h is None or h not in store for h in (*ref, *port)):
        which = [s for s, hs in (("reference", ref), ("port", port)) if not hs or any(h not in store for h in hs)]
        return {"missing": f"no bytecode from the {' and '.join(which)} for this configuration"}
    out = {"pairs": []}
    worst = "PASS"
    with tempfile.TemporaryDirectory(prefix="tp-bcdiff-") as d:
        for i, (hr, hp) in enumerate(zip(ref, port)):
            paths = []
            for side, h in (("ref", hr), ("port", hp)):
                p = Path(d) / f"{i}-{side}-{h}.tileirbc"
                p.write_bytes(base64.b64decode(store[h]))
                paths.append(p)
            try:
                rep = diff_modules(load_module(paths[0], tileirdisasm), load_module(paths[1], tileirdisasm), target)
            except (EnvironmentBlocked, UserError) as e:
                return {"error": _newer_bytecode_hint(str(e))}
            except Exception as e:  # evidence only: a tool or parse failure never fails the report it annotates
                return {"error": f"{type(e).__name__}: {str(e)[:280]}"}
            findings = sorted(rep.findings, key=lambda f: _rank(f.severity))
            pair = {"ref": hr, "port": hp, "verdict": rep.verdict.value,
                    "identical": rep.stats.get("identical_entries", 0) == rep.stats.get("ref_entries", -1),
                    "findings": [{"check": f.check, "severity": f.severity.value, "message": f.message[:300]}
                                 for f in findings[:MAX_FINDINGS]],
                    "left_out": max(0, len(findings) - MAX_FINDINGS)}
            out["pairs"].append(pair)
            if _verdict_rank(pair["verdict"]) > _verdict_rank(worst):
                worst = pair["verdict"]
    out["verdict"] = worst
    if bc.get("port_tileiras_args"):
        out["port_tileiras_args"] = bc["port_tileiras_args"]
    if bc.get("ref_by"):  # the reference's file found by its kernel name: another specialisation may have been taken
        out["ref_by"] = bc["ref_by"]
    return out


def _newer_bytecode_hint(message: str) -> str:
    """The tool's first line; when it cannot read the bytecode's version (the GPU host's cutile writes the version
    of the tileiras it found there, 13.5 from the bundle, newer than this machine's pinned tileirdisasm), what to
    pass instead."""
    line = next((ln for ln in message.splitlines() if "unsupported Tile version" in ln),
                (message.splitlines() or ["?"])[0])
    got = re.search(r"unsupported Tile version (\d+)\.(\d+)", line)
    if got:
        line += (f" -- the GPU host's JIT wrote Tile IR {got[1]}.{got[2]}: pass --tileirdisasm from "
                 f"nvidia-cuda-tileiras=={got[1]}.{got[2]}.* (pip download --no-deps; nvidia/cu13/bin/tileirdisasm)")
    return line[:400]


def _rank(sev: Severity) -> int:
    return {Severity.ERROR: 0, Severity.WARNING: 1}.get(sev, 2)


def _verdict_rank(v: str) -> int:
    return {"PASS": 0, "PASS_WITH_NOTES": 1}.get(v, 2)


def annotate(results: dict, target: str | None = None, tileirdisasm: str | None = None) -> list[str]:
    """Add `ir_diff` to every perf row of a results.json that carries bytecode; one line per row for people.
    Without tileirdisasm here nothing is added (the rows keep their bytecode for a later ingest)."""
    store = results.get("bytecode") or {}
    if tileirdisasm is None:  # resolved once: a host without it (the GPU host) leaves the diff to ingest
        try:
            from tileport.exec.toolchain import from_config
            tileirdisasm = from_config().tileirdisasm
        except Exception:
            tileirdisasm = None
        if tileirdisasm is None:
            return []
    if target is None:
        cap = (results.get("env") or {}).get("capability")
        target = f"sm_{cap[0]}{cap[1]}" if isinstance(cap, (list, tuple)) and len(cap) == 2 else None
    lines = []
    op = (results.get("gate") or {}).get("op") or "?"
    for row in (results.get("perf") or {}).get("rows") or []:
        d = row_diff(row, store, target, tileirdisasm)
        if d is None:
            continue
        row["ir_diff"] = d
        ratio = row.get("ratio")
        head = f"{op} {row.get('config')}" + (f" {ratio:.3f}x" if isinstance(ratio, (int, float)) else "")
        lines.append(f"{head}: {summary(d)}")
    return lines


def summary(d: dict) -> str:
    """One line: what the IR gate says about the bytecode both JITs compiled for a configuration."""
    if "missing" in d:
        return f"not compared ({d['missing']})"
    if "error" in d:
        return f"not compared ({d['error']})"
    found = [f for p in d.get("pairs", []) for f in p["findings"] if f["severity"] != "note"]
    notes = [f for p in d.get("pairs", []) for f in p["findings"] if f["severity"] == "note"]
    by_name = " [reference bytecode found by kernel name]" if d.get("ref_by") else ""
    if not found:
        same = all(p.get("identical") for p in d.get("pairs", []))
        return (f"the compiled IR of both sides is {'identical' if same else 'equivalent'} ({d['verdict']}"
                + (f"; {len(notes)} note(s): {notes[0]['check']}" if notes else "") + ")" + by_name)
    return f"{d['verdict']}: " + "; ".join(f"{f['check']}: {f['message'][:160]}" for f in found[:3]) + by_name


def main(argv: list[str] | None = None) -> int:
    import json

    ap = argparse.ArgumentParser(description="diff the bytecode each side's JIT compiled per timed configuration")
    ap.add_argument("results", nargs="+", help="results.json files of `tileport gpu run`")
    ap.add_argument("--write", action="store_true", help="keep each row's ir_diff in its results file")
    ap.add_argument("--target", default=None, help="GPU target the hints are judged for (default: the run's)")
    ap.add_argument("--tileirdisasm", default=None,
                    help="the disassembler (default: the toolchain's); bytecode written by a newer tileiras needs one "
                         "at least as new")
    args = ap.parse_args(argv)
    for path in args.results:
        try:
            results = json.loads(Path(path).read_text())
        except (OSError, ValueError) as e:
            print(f"{path}: cannot read: {e}", file=sys.stderr)
            return 2
        for line in annotate(results, args.target, args.tileirdisasm):
            print(line)
        if args.write:
            Path(path).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
