"""How well a model fills the draft's holes and fixes compile and IR self-check failures: a fixed task set run
through tileport's own kernel-writer loop (tools, context budget, real cargo + cutile 0.5.0 builds, the real IR
self-check against the op's real reference export).

    python benchmarks/bench_writer.py --model http://127.0.0.1:8000/v1 [--tries 3] [--tasks a,b] [--json FILE]

The same command is what a user with a large model on a GPU host runs (`tileport model serve --model PATH`, then
this with its URL). Task classes:
- holes: the complete draft of an example with one or two statements cut out as TILEPORT-HOLE regions (the model
  gets the draft with the holes, as stage B gives it);
- compile: the draft with a seeded rustc error of a common class (type mismatch, missing annotation, wrong
  method, borrow); the model gets the real diagnostics of the broken file, as a second B attempt does;
- selfcheck: a draft that compiles but computes the wrong thing; the model gets the IR self-check's findings.

A try passes when the file it leaves builds and its IR self-check is PASS or PASS_WITH_NOTES. pass@1: the first
try passed; pass@k: any of k tries passed (k = --tries; sampling as the server's defaults). Prints one row per task
and one per class: pass@1, pass@k, tokens (prompt + completion) and wall seconds per try.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tileport.pipeline.context import ConversionPaths, Limits  # noqa: E402
from tileport.draft import draft_port  # noqa: E402
from tileport.pipeline.stages.write_kernel import _Builder, is_cargo_build  # noqa: E402
from tileport.agents.writers import KernelTask, ModelWriter  # noqa: E402
from tileport.config import load_config  # noqa: E402
from tileport.exec.toolchain import from_config  # noqa: E402
from tileport.local_models.client import ModelClient  # noqa: E402
from tileport.local_models.protocol import CancelToken  # noqa: E402
from tileport.analysis import analyze_op  # noqa: E402

PASSING = ("PASS", "PASS_WITH_NOTES")


@dataclass
class BenchTask:
    name: str
    cls: str  # holes | compile | selfcheck
    op: str
    mutate: Callable[[str, str], str]  # (draft kernel.rs, python source) -> the kernel.rs the model starts from


def _hole(*blocks: tuple[list[str], str], reason: str) -> Callable[[str, str], str]:
    """Cut each block of draft lines (a contiguous run, one regex a line) out as a hole region, with the Python
    line (the first source line matching the block's second element) it stands for."""

    def mutate(rs: str, src: str) -> str:
        out = rs
        for n, (lines, python) in enumerate(blocks, 1):
            text = out.splitlines()
            start = next(i for i, ln in enumerate(text) if re.search(lines[0], ln))
            assert all(re.search(rx, text[start + k]) for k, rx in enumerate(lines)), lines
            indent = text[start][:len(text[start]) - len(text[start].lstrip())]
            py = next(ln.strip() for ln in src.splitlines() if re.search(python, ln))
            region = [f"{indent}// TILEPORT-HOLE h{n} BEGIN {reason}", f"{indent}// python: {py}",
                      f"{indent}let _ = tileport_hole_h{n};", f"{indent}// TILEPORT-HOLE h{n} END"]
            out = "\n".join(text[:start] + region + text[start + len(lines):]) + "\n"
        return out

    mutate.blocks = blocks  # type: ignore[attr-defined]
    return mutate


def _sub(pattern: str, repl: str) -> Callable[[str, str], str]:
    def mutate(rs: str, src: str) -> str:
        out, n = re.subn(pattern, repl, rs, count=1)
        assert n == 1, pattern
        return out
    return mutate


LOAD_B = [r"let b: Tile<E, \{ \[TILE\] \}> = y_tiles\.load\(\[block\]\);"]
LOAD_A = [r"let a: Tile<E, \{ \[TILE\] \}> = x_tiles\.load\(\[block\]\);"]
TASKS = [
    BenchTask("hole_load", "holes", "vector_add",
              _hole((LOAD_B, r"b = ct\.load\(y"), reason="unsupported: ct.load at vector_add.py:24:8 (a tile load)")),
    BenchTask("hole_store", "holes", "vector_add",
              _hole(([r"out\.store\(a \+ b\);"], r"ct\.store\(out"), reason="unsupported: ct.store at vector_add.py:25:4")),
    BenchTask("hole_reduction", "holes", "rms_norm",
              _hole(([r"let tmp_3: .*reduce_sum\(t \* t, 1i32\);", r"let tmp_4: f32", r"let mean_sq: "],
                     r"mean_sq = ct\.sum\(t \* t"), reason="unsupported: ct.sum at rms_norm.py:34:18 (keepdims)")),
    BenchTask("two_holes", "holes", "vector_add",
              _hole((LOAD_A, r"a = ct\.load\(x"), (LOAD_B, r"b = ct\.load\(y"), reason="unsupported: ct.load")),
    BenchTask("type_mismatch", "compile", "vector_add",
              _sub(r"let a: Tile<E, \{ \[TILE\] \}>", "let a: Tile<f32, { [TILE] }>")),
    BenchTask("missing_annotation", "compile", "rms_norm",
              _sub(r"let out_tile: Tile<E, \{ \[1, TILE_N\] \}> = convert_tile\(y\);", "let out_tile = convert_tile(y);")),
    BenchTask("wrong_method", "compile", "vector_add", _sub(r"x_tiles\.load\(\[block\]\)", "x_tiles.load_tile([block])")),
    BenchTask("borrow", "compile", "vector_add", _sub(r"out: &mut Tensor<E", "out: &Tensor<E")),
    BenchTask("selfcheck_sub", "selfcheck", "vector_add", _sub(r"out\.store\(a \+ b\);", "out.store(a - b);")),
]


@dataclass
class TryResult:
    passed: bool
    verdict: str
    tokens: int
    seconds: float
    builds: int
    stop: str


@dataclass
class Row:
    task: BenchTask
    tries: list[TryResult] = field(default_factory=list)
    setup: str = ""


def _judge(check) -> str:
    if check.blocked:
        return "BLOCKED"
    if check.build is None or not check.build.ok:
        return "FAIL_COMPILE"
    return check.report.verdict.value if check.report is not None else "NO_SELFCHECK"


def oracle_writer(t: BenchTask, draft_rs: str, start: str) -> ModelWriter:
    """A named fake (`--oracle`): a scripted model that answers with the draft's own lines (a whole-file write for
    the seeded errors, `replace_region` per hole), so each task is shown solvable through the loop, real cargo and
    the real self-check. Its figure is the task set's, not a model's."""
    from tileport.agents.holes import find_holes
    from tileport.local_models.scripted import ScriptedModel

    def ex(*calls):
        return {"reply": {"content": "", "tool_calls": list(calls), "usage": {"prompt_tokens": 0,
                                                                               "completion_tokens": 0}}}

    holes = find_holes(start)
    if holes:
        orig = draft_rs.splitlines()
        edits = []
        for h, (lines, _) in zip(holes, t.mutate.blocks):  # type: ignore[attr-defined]
            i = next(k for k, ln in enumerate(orig) if re.search(lines[0], ln))
            code = "\n".join(orig[i:i + len(lines)])
            edits.append(ex({"name": "replace_region", "arguments": {"id": h.id, "code": code}}))
    else:
        edits = [ex({"name": "write_kernel", "arguments": {"source": draft_rs}})]
    verdict = {"reply": {"content": json.dumps({"verdict": "COMPILED", "summary": "oracle", "build_attempts": 1})}}
    model = ScriptedModel({"name": f"oracle-{t.name}", "start": "draft", "max_model_len": 32768,
                           "exchanges": edits + [ex({"name": "cargo_build", "arguments": {}}), verdict]})
    return ModelWriter(model, "oracle")


def run_task(t: BenchTask, analysis, draft, writer: ModelWriter | None, cfg, tmp: Path, tries: int, log,
             keep: Path | None = None) -> Row:
    src = (REPO / "examples" / f"{t.op}.py").read_text(encoding="utf-8")
    start = t.mutate(draft.kernel_rs, src)
    row = Row(t)
    paths = ConversionPaths(worktree=tmp / t.name, op=t.op)
    paths.port.mkdir(parents=True, exist_ok=True)
    ctx = SimpleNamespace(paths=paths, toolchain=from_config(cfg), config=cfg, limits=Limits.of(),
                          cancel=CancelToken(), log=log)
    items = []
    if t.cls != "holes":  # the broken file's real diagnostics / findings, as the previous B attempt recorded them
        paths.kernel_rs.write_text(start, encoding="utf-8")
        paths.spec_json.write_text(draft.spec.to_json(), encoding="utf-8")
        first = _Builder(ctx, analysis)()
        row.setup = _judge(first)
        items = first.items()
        if row.setup in PASSING:
            log(f"  {t.name}: the seeded file already passes ({row.setup}); the task is void")
    for k in range(tries):
        paths.kernel_rs.write_text(start, encoding="utf-8")
        paths.spec_json.write_text(draft.spec.to_json(), encoding="utf-8")
        builder = _Builder(ctx, analysis)
        task = KernelTask(op=t.op, op_source=src, kernels=sorted({v.kernel for v in analysis.variants}),
                          analysis_summary="", reference_ir="", kernel_path=paths.kernel_rs,
                          spec_path=paths.spec_json, feedback="", build=builder, analysis=analysis,
                          draft=start if t.cls == "holes" else None, feedback_items=list(items), attempt=2)
        t0 = time.monotonic()
        out = (writer or oracle_writer(t, draft.kernel_rs, start)).write_kernel(ctx, task)
        check = builder()
        verdict = _judge(check)
        if out.fault is not None and verdict not in PASSING:
            verdict = f"{verdict} ({out.fault.kind.value})"
        tr = TryResult(passed=verdict in PASSING, verdict=verdict,
                       tokens=out.tokens.prompt_tokens + out.tokens.completion_tokens,
                       seconds=time.monotonic() - t0, builds=sum(1 for c in builder.commands if is_cargo_build(c)),
                       stop=str(out.details.get("stop", "")))
        row.tries.append(tr)
        if keep is not None and out.transcript is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"{t.name}-{k + 1}.transcript.json").write_text(out.transcript.model_dump_json(indent=1))
            (keep / f"{t.name}-{k + 1}.kernel.rs").write_text(paths.kernel_rs.read_text(encoding="utf-8"))
        log(f"  {t.name} try {k + 1}: {tr.verdict} tokens={tr.tokens} {tr.seconds:.0f}s stop={tr.stop!r}")
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", metavar="URL", help="the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    ap.add_argument("--oracle", action="store_true", help="instead of a model, a named fake that answers with the "
                    "draft's own lines: shows every task is solvable through the loop, builds and self-check")
    ap.add_argument("--served-name", default=None, help="model name to request (default: [model].model)")
    ap.add_argument("--tries", type=int, default=3, help="tries per task (pass@k uses all of them)")
    ap.add_argument("--tasks", help="comma-separated subset of task names or classes")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    ap.add_argument("--keep", metavar="DIR", type=Path, help="write each try's transcript and final kernel.rs here")
    a = ap.parse_args(argv)
    if not a.model and not a.oracle:
        ap.error("pass --model URL (or --oracle to check the task set)")
    cfg = load_config()
    writer: ModelWriter | None = None
    if a.oracle:
        label, ctx_len = "oracle (scripted, the draft's own lines)", 32768
    else:
        ep = cfg.model.model_copy(update={"base_url": a.model.rstrip("/"), **({"model": a.served_name}
                                                                              if a.served_name else {})})
        client = ModelClient.from_endpoint(ep)
        info = client.probe()
        if not info.healthy:
            print(f"error: no model server at {a.model}: {info.error}", file=sys.stderr)
            return 2
        writer = ModelWriter(client, a.model)
        label, ctx_len = f"{ep.model} at {a.model}", info.max_model_len
    want = set(a.tasks.split(",")) if a.tasks else None
    tasks = [t for t in TASKS if want is None or t.name in want or t.cls in want]
    print(f"model {label} (max_model_len {ctx_len}); {len(tasks)} task(s) x {a.tries} tries", flush=True)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-writer-") as tmpd:
        tmp = Path(tmpd)
        prepared: dict[str, tuple] = {}
        for t in tasks:
            if t.op not in prepared:
                analysis = analyze_op(REPO / "examples" / f"{t.op}.py", targets=["sm_90"], out_dir=tmp / "ref" / t.op,
                                      run_tileiras=False, warm=True)
                prepared[t.op] = (analysis, draft_port(analysis))
            rows.append(run_task(t, *prepared[t.op], writer, cfg, tmp, a.tries,
                                 lambda m: print(m, file=sys.stderr, flush=True), a.keep))
    _print(rows, a.tries)
    if a.json:
        Path(a.json).write_text(json.dumps([{"task": r.task.name, "class": r.task.cls, "setup": r.setup,
                                             "tries": [vars(x) for x in r.tries]} for r in rows], indent=1) + "\n")
    return 0


def _print(rows: list[Row], k: int) -> None:
    def stats(rs: list[Row]) -> tuple[str, str, float, float]:
        n = len(rs)
        p1 = sum(r.tries[0].passed for r in rs if r.tries)
        pk = sum(any(x.passed for x in r.tries) for r in rs)
        tries = [x for r in rs for x in r.tries]
        tok = sum(x.tokens for x in tries) / max(1, len(tries))
        sec = sum(x.seconds for x in tries) / max(1, len(tries))
        return f"{p1}/{n}", f"{pk}/{n}", tok, sec

    print(f"\n{'task':<20} {'class':<10} {'setup':<14} {'pass@1':>6} {f'pass@{k}':>6} {'tok/try':>8} {'s/try':>6}  "
          "verdicts")
    for r in rows:
        p1, pk, tok, sec = stats([r])
        print(f"{r.task.name:<20} {r.task.cls:<10} {r.setup or '-':<14} {p1:>6} {pk:>6} {tok:>8.0f} {sec:>6.0f}  "
              + ", ".join(x.verdict for x in r.tries))
    print()
    print(f"{'class':<10} {'tasks':>5} {'pass@1':>7} {f'pass@{k}':>7} {'tok/try':>8} {'s/try':>6}")
    for cls in ("holes", "compile", "selfcheck"):
        rs = [r for r in rows if r.task.cls == cls]
        if rs:
            p1, pk, tok, sec = stats(rs)
            print(f"{cls:<10} {len(rs):>5} {p1:>7} {pk:>7} {tok:>8.0f} {sec:>6.0f}")


if __name__ == "__main__":
    raise SystemExit(main())
