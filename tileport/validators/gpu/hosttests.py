"""Stages D and E for any analysed op on the GPU host, judged by the op's own tests (travels as `tp_hosttests.py`;
standard library, torch, cuda.tile and pytest only, plus the gate's `runner.py`).

D: the op's tests (pytest files, scripts, its `__main__` block: what stage A ran, carried under `project/`) run
twice, each in child processes (`tp_testchild.py`): first plain, on the cuTile Python reference, then with every
`ct.launch` of the kernels under conversion served by the port. A per-test time limit: the child is killed past
it, that test fails (on the port) or is not evaluated (on the reference), and the rest go on in a fresh child; a
crash fails the test in flight the same way. Per test one line: id, reference verdict, port verdict, port
launches, seconds. A test the reference fails, errors or skips is "not evaluated (reference: ...)"; one that
launched nothing the port serves is "not evaluated (no port launch)"; never a pass. D passes when at least one
test was evaluated and every evaluated test passed.

E: the configurations stage A captured (kernel, grid, argument dtypes/shapes, constants; merged and bounded when
packed) are replayed on both sides in a child (`tp_replay.py`) with the CUPTI / L2-flush / paired harness of
`runner.py`, on the inputs the reference run of the tests launched with (saved during D) or, when none was seen,
inputs made from the shapes and dtypes; each side's host wall time per call is recorded beside device time.

The examples' make_inputs/reference harness (`hostrun.HostRun`) runs too when the pack has it.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_TEST_TIMEOUT_S = 300.0
POLL_S = 0.2


def _read_events(path: Path, offset: int) -> tuple[list[dict], int]:
    if not path.exists():
        return [], offset
    with open(path, encoding="utf-8") as f:
        f.seek(offset)
        data = f.read()
    lines = data.split("\n")
    complete, rest = lines[:-1], lines[-1]
    out = []
    for ln in complete:
        try:
            out.append(json.loads(ln))
        except json.JSONDecodeError:
            continue
    return out, offset + len(data) - len(rest)


_LIVE: set[subprocess.Popen] = set()  # children started in their own sessions, not yet reaped


def _spawn(argv: list[str], **kw) -> subprocess.Popen:
    """A child in its own session (so a hung test is killed whole), remembered until it is reaped."""
    proc = subprocess.Popen(argv, start_new_session=True, **kw)
    _LIVE.add(proc)
    return proc


def reap_children_on_termination() -> None:
    """A runner stopped from outside (a pack's time limit: `timeout` sends SIGTERM) takes its children with it.
    They run in sessions of their own, so nothing else would: one left behind keeps its GPU memory (measured on an
    H100: a replay of a 32768^2 GEMM held 70 GiB after its pack was killed, and the next pack's large rows ran out
    of memory)."""
    def stop(signum, frame):
        for proc in list(_LIVE):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        raise SystemExit(128 + signum)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _LIVE.discard(proc)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


class SideRun:
    """Run one kind of source on one side until every test has an outcome, restarting the child after a hang or a
    crash with the tests still to run."""

    def __init__(self, pack_dir: Path, project: Path, side: str, work: Path, limit_s: float, lib: str | None,
                 inputs: str | None, log, python: str | None = None):
        self.python = python or sys.executable
        self.pack_dir, self.project, self.side, self.work, self.limit = pack_dir, project, side, work, limit_s
        self.lib, self.inputs, self.log = lib, inputs, log
        self.results: dict[str, dict] = {}
        self.order: list[str] = []
        self.collect_errors: list[dict] = []
        self.n = 0

    def _argv(self, source_args: list[str], select: Path | None, progress: Path) -> list[str]:
        argv = [self.python, str(self.pack_dir / "tp_testchild.py"), str(self.pack_dir), "--project",
                str(self.project), "--side", self.side, "--progress", str(progress)]
        if select is not None:
            argv += ["--select", str(select)]
        if self.lib:
            argv += ["--lib", self.lib]
        if self.inputs:
            argv += ["--inputs", self.inputs]
        return argv + source_args

    def run(self, source_args: list[str], label: str) -> None:
        remaining: list[str] | None = None
        for _ in range(10000):
            self.n += 1
            progress = self.work / f"{self.side}-{self.n}.jsonl"
            select = None
            if remaining is not None:
                select = self.work / f"{self.side}-{self.n}.select.json"
                select.write_text(json.dumps(remaining))
            out = open(self.work / f"{self.side}-{self.n}.log", "wb")
            proc = _spawn(self._argv(source_args, select, progress), cwd=str(self.project), stdout=out,
                          stderr=subprocess.STDOUT, env=self._env())
            offset, current, started, collected = 0, None, None, None
            timed_out = False
            while True:
                rc = proc.poll()
                events, offset = _read_events(progress, offset)
                for ev in events:
                    kind = ev.get("ev")
                    if kind == "collected":
                        collected = list(ev["ids"])
                        for i in collected:
                            if i not in self.order:
                                self.order.append(i)
                    elif kind == "start":
                        current, started = ev["id"], time.monotonic()
                    elif kind == "done":
                        self.results[ev["id"]] = ev
                        current = None
                    elif kind == "collect_error":
                        self.collect_errors.append(ev)
                if rc is not None:
                    break
                if current is not None and time.monotonic() - started > self.limit:
                    _kill(proc)
                    timed_out = True
                    break
                time.sleep(POLL_S)
            out.close()
            events, offset = _read_events(progress, offset)
            for ev in events:
                if ev.get("ev") == "done":
                    self.results[ev["id"]] = ev
                    current = None if ev["id"] == current else current
            if current is not None and current not in self.results:
                tail = (self.work / f"{self.side}-{self.n}.log").read_bytes()[-600:].decode("utf-8", "replace")
                why = (f"timed out after {self.limit:g} s (the child was killed)" if timed_out else
                       f"the test process died (status {proc.returncode}): {tail.strip().splitlines()[-1] if tail.strip() else ''}")
                self.results[current] = {"id": current, "outcome": "failed" if self.side == "port" else "error",
                                         "message": why[:600], "seconds": round(time.monotonic() - started, 3),
                                         "launches": None, "port_attempts": None, "port_launches": None,
                                         "fail_class": "kernel" if self.side == "port" else None,
                                         "crashed": True}
                self.log(f"{self.side} {current}: {why[:200]}")
            if collected is None:
                if not self.collect_errors or proc.returncode not in (0, 1, 5):
                    tail = (self.work / f"{self.side}-{self.n}.log").read_bytes()[-800:].decode("utf-8", "replace")
                    self.collect_errors.append({"where": label, "message": f"status {proc.returncode}: "
                                                f"{' | '.join(tail.strip().splitlines()[-3:])}"[:600]})
                return
            remaining = [i for i in collected if i not in self.results]
            if not remaining:
                return

    def _env(self) -> dict:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.pack_dir)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env["PYTHONUNBUFFERED"] = "1"
        env.setdefault("CUTILE_MAX_LAUNCH_TIMEOUT_SEC", "60")
        return env


def _reference_verdict(r: dict | None) -> str:
    if r is None:
        return "not run"
    if r["outcome"] == "passed":
        return "passed"
    return f"{r['outcome']}: {r.get('message') or ''}".strip().rstrip(":")


def judge(test_id: str, ref: dict | None, port: dict | None) -> dict:
    """One test's line: its verdict from both runs (see the module docstring)."""
    line = {"id": test_id, "reference": _reference_verdict(ref), "port": _reference_verdict(port),
            "port_launches": (port or {}).get("port_launches"), "launches": (ref or {}).get("launches"),
            "seconds": {"ref": (ref or {}).get("seconds"), "port": (port or {}).get("seconds")},
            "status": "NOT_EVALUATED", "fail_class": None, "message": ""}
    if ref is None or ref["outcome"] != "passed":
        line["message"] = f"not evaluated (reference: {line['reference'][:300]})"
        if (ref or {}).get("output"):
            line["output"] = ref["output"]  # what the reference printed as its own check failed
        return line
    if port is None:
        line["message"] = "not evaluated (the port run never reached it)"
        return line
    attempts = port.get("port_attempts")
    if not port.get("crashed") and not attempts:
        line["message"] = "not evaluated (no port launch)"
        return line
    if port["outcome"] == "passed":
        line.update(status="PASS", message=f"ok ({port.get('port_launches')} port launch(es))")
    else:
        line.update(status="FAIL", fail_class=port.get("fail_class") or "kernel",
                    message=f"port: {line['port'][:600]}")
        if port.get("output"):
            line["output"] = port["output"]  # the test's own diagnostics (mismatched indices, its diffs)
    return line


def run_tests(pack_dir: Path, gate: dict, project: Path, lib: str, inputs: Path, work: Path, log) -> dict:
    """Both sides of every source; returns {"tests": [lines], "collect_errors": [...]}."""
    t = gate["tests"]
    limit = float(t.get("timeout_s") or DEFAULT_TEST_TIMEOUT_S)
    pytest_paths = [s["path"] for s in t["sources"] if s["kind"] == "pytest"]
    others = [s for s in t["sources"] if s["kind"] != "pytest"]
    sides = {}
    for side in ("ref", "port"):
        run = SideRun(pack_dir, project, side, work, limit, lib if side == "port" else None,
                      str(inputs) if side == "ref" else None, log)
        if pytest_paths:
            run.run(["--pytest", *pytest_paths], "pytest " + " ".join(pytest_paths))
        for s in others:
            run.run(["--script", s["path"]] if s["kind"] == "script" else ["--main"], f"{s['kind']} {s['path']}")
        sides[side] = run
        done = sum(1 for r in run.results.values() if r["outcome"] == "passed")
        log(f"{side}: {done}/{len(run.order)} test(s) pass"
            + (f"; {len(run.collect_errors)} collection error(s)" if run.collect_errors else ""))
    ref, port = sides["ref"], sides["port"]
    ids = list(dict.fromkeys(ref.order + port.order))
    lines = [judge(i, ref.results.get(i), port.results.get(i)) for i in ids]
    errors = [{"side": s, **e} for s, r in sides.items() for e in r.collect_errors]
    return {"tests": lines, "collect_errors": errors}


def cases_from(lines: list[dict]) -> list[dict]:
    """The tests as results.json cases (what ingest records per test)."""
    return [{"name": ln["id"], "dtype": "", "shape": {}, "status": ln["status"], "max_abs_err": None,
             "fail_class": ln["fail_class"], "message": ln["message"], "source": "tests",
             "reference": ln["reference"], "port_launches": ln["port_launches"],
             "seconds": (ln["seconds"] or {}).get("port"), **({"output": ln["output"]} if ln.get("output") else {})}
            for ln in lines]


REPLAY_POLL_S = 1.0  # how often the runner takes the replay child's rows into results.json


def _read_rows(out: Path) -> dict:
    try:
        return json.loads(out.read_text())
    except (OSError, json.JSONDecodeError):  # not written yet (the child replaces it whole, never half)
        return {}


def run_replay(pack_dir: Path, project: Path, lib: str, inputs: Path, out: Path, timeout_s: float, log,
               configs: Path, progress=None) -> dict:
    """Stage E's replay in a child: a crash keeps the rows written before it. `progress(data)` is called with
    the child's file each time it changes, so that rows measured before the pack's own time limit stops the
    runner are in results.json already (found on an H200: two cutile-rs GEMM packs killed at their limit had
    timed configurations and kept none)."""
    argv = [sys.executable, str(pack_dir / "tp_replay.py"), str(pack_dir), "--project", str(project), "--lib", lib,
            "--inputs", str(inputs), "--out", str(out), "--configs", str(configs)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(pack_dir)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTHONUNBUFFERED"] = "1"
    proc = _spawn(argv, cwd=str(project), env=env)
    deadline = time.monotonic() + timeout_s
    seen = None
    while True:
        try:
            proc.wait(timeout=REPLAY_POLL_S)
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline:
                _kill(proc)
                break
        try:
            stamp = out.stat().st_mtime_ns
        except OSError:
            continue
        if progress is not None and stamp != seen:
            seen = stamp
            progress(_read_rows(out))
    data = _read_rows(out) if out.exists() else {}
    if proc.returncode not in (0,):
        data.setdefault("rows", [])
        data["error"] = (f"the replay child ended with status {proc.returncode}" if proc.returncode is not None
                         else f"the replay child was killed after {timeout_s:g} s")
        log(data["error"])
    return data


def run(runner, perf: bool = True, project: str | None = None) -> int:
    """The whole gate for a pack with the op's tests and/or captured configurations (runner: hostrun.HostRun)."""
    import lzma
    import shutil

    reap_children_on_termination()
    missing = runner.env()
    if missing:
        return runner.missing_env(missing)
    gate, pack_dir = runner.gate, runner.dir
    proj = Path(project).resolve() if project else pack_dir / "project"
    work = Path(tempfile.mkdtemp(prefix="tp-tests-"))
    lib = work / "libport.so"
    with lzma.open(pack_dir / gate["library"]) as f, open(lib, "wb") as out:
        shutil.copyfileobj(f, out, 1 << 20)
    inputs = work / "inputs"
    inputs.mkdir()

    def log(line: str) -> None:
        print(line, flush=True)

    runner.results["mode"] = "tests"
    runner.results["project"] = str(proj)
    rc = 0
    if gate.get("harness"):  # the examples' make_inputs/reference cases, as one source among others
        try:
            runner.load()
        except Exception as e:  # noqa: BLE001 - the harness is one source; its failure is a host fault
            runner.results["cases"].append({"name": "harness: load", "dtype": "", "shape": {}, "status": "FAIL",
                                            "fail_class": getattr(e, "fail_class", "host"), "message": str(e)[:800]})
        else:
            for d in gate["dtypes"]:
                for s in gate["shapes"]:
                    for v in runner.variants:
                        case = runner.correctness(d, s, v)
                        case["source"] = "harness"
                        runner.results["cases"].append(case)
                        runner.save()
    if gate.get("tests"):
        got = run_tests(pack_dir, gate, proj, str(lib), inputs, work, log)
        runner.results["tests"] = got["tests"]
        runner.results["collect_errors"] = got["collect_errors"]
        runner.results["cases"].extend(cases_from(got["tests"]))
        env_lines = [ln for ln in got["tests"] if ln["status"] == "NOT_EVALUATED" and
                     runner_mod(runner).classify_message(ln["reference"], "kernel") == "env"]
        evaluated = [ln for ln in got["tests"] if ln["status"] != "NOT_EVALUATED"]
        if not evaluated and env_lines:
            return runner.missing_env(f"the reference tests could not run here: {env_lines[0]['reference'][:300]}")
        for ln in got["tests"]:
            log(f"{ln['status']} {ln['id']}: {ln['message'][:200]}")
            if ln["status"] != "PASS" and ln.get("output"):
                log("    " + "\n    ".join(ln["output"].splitlines()[-12:]))  # the test's own last words
        runner.save()
    cases = runner.results["cases"]
    evaluated = [c for c in cases if c["status"] != "NOT_EVALUATED"]
    d_pass = bool(evaluated) and all(c["status"] == "PASS" for c in evaluated)
    if not d_pass:
        rc = 1
    if not perf or not d_pass:
        return rc
    import torch

    R = runner_mod(runner)
    runner.flusher = R.Flusher(torch)
    hw = R.measure_hw(torch, runner.flusher)
    runner.results["perf"]["hw"] = hw
    runner.save()
    if gate.get("harness"):
        for case in [c for c in cases if c.get("source") == "harness"]:
            try:
                row = runner.perf(case["dtype"], case["shape"], case.get("variant") or {}, hw)
            except Exception as exc:  # noqa: BLE001
                row = {"config": f"{case['dtype']} {case['shape']}", "failed": True,
                       "flags": [f"measurement failed: {exc}"[:300]], "ref_ms": None, "port_ms": None, "ratio": None,
                       "ref_samples": [], "port_samples": []}
            row["source"] = "harness"
            runner.results["perf"]["rows"].append(row)
            runner.save()
    configs, left, origin = perf_configs(gate, inputs)
    runner.results["perf"]["configs_from"] = origin
    if configs:
        del runner.flusher  # the replay child makes its own
        torch.cuda.empty_cache()
        cfile = work / "perf_configs.json"
        cfile.write_text(json.dumps(configs))
        before = list(runner.results["perf"]["rows"])

        def take(data: dict) -> None:  # the child's rows so far (and the bytecode they name) into results.json
            runner.results["perf"]["rows"] = before + (data.get("rows") or [])
            if data.get("bytecode"):
                runner.results.setdefault("bytecode", {}).update(data["bytecode"])
            runner.save()

        data = run_replay(pack_dir, proj, str(lib), inputs, work / "replay.json",
                          float(gate.get("perf_timeout_s") or 1800), log, cfile, progress=take)
        take(data)
        if data.get("error"):
            runner.results["perf"]["replay_error"] = data["error"]
        if data.get("hw_flush") and not (hw.get("flush") or {}).get("verified"):
            hw["flush"] = data["hw_flush"]
    runner.results["perf"]["left_out"] = left
    runner.save()
    return rc


def perf_configs(gate: dict, inputs: Path) -> tuple[list[dict], list[dict], str]:
    """What E replays: the configurations stage A captured (chosen when packed), else those the reference run of
    the tests launched here (chosen now by the same rule), with the inputs D kept for them."""
    import tp_testchild as T

    own = [c for c in gate.get("perf_configs") or [] if c.get("source") != "guess"]
    if own or (gate.get("perf_configs") and not (inputs / T.LAUNCHES_FILE).exists()):
        return list(gate["perf_configs"]), list(gate.get("perf_left_out") or []), "stage A's launch capture"
    import tp_perfconfigs as P

    seen: dict[str, dict] = {}
    f = inputs / T.LAUNCHES_FILE
    for ln in (f.read_text().splitlines() if f.exists() else []):
        try:
            c = json.loads(ln)
        except json.JSONDecodeError:
            continue
        seen.setdefault(c["key"], c)
    chosen, left = P.select(list(seen.values()), set(gate.get("kernels") or []))
    left += [{"config": c["config"], "why": "made by stage A's guessed inputs; the launches the tests made here "
              "were timed instead"} for c in gate.get("perf_configs") or []]
    keys = {(c["kernel"], c["grid"], tuple(c["args"])): k for k, c in seen.items()}
    for c in chosen:
        c["inputs_key"] = keys.get((c["kernel"], c["grid"], tuple(c["args"])))
    return chosen, left, "the reference run of the op's tests (D)"


def runner_mod(runner):
    return sys.modules[type(runner).__module__]


__all__ = ["judge", "run", "run_tests", "cases_from"]
