"""The kernel writer's machinery with scripted models (named fakes replaying transcripts written here) and a fake
build (a named fake standing for cargo: real builds are the benchmark's and the heavy pipeline tests'): holes as the
model's task, the edit tools, the context budget, and the robustness rules of issue 25."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tileport.agents import budget as bd
from tileport.agents.holes import fill_hole, find_holes, search_replace
from tileport.agents.reference.data import load_api, load_worked_ports, similar_ports
from tileport.agents.writers import BuildCheck, KernelTask, KernelWriterLoop, ModelWriter
from tileport.pipeline.context import Limits
from tileport.errors import UserError
from tileport.local_models.protocol import CancelToken
from tileport.local_models.scripted import ScriptedModel

DRAFT = """#[cutile::module]
pub mod clamp {
    use cutile::core::*;

    #[cutile::entry()]
    fn clamp_kernel<const B: i32>(y: &mut Tensor<f32, { [B] }>, x: &Tensor<f32, { [-1] }>, lo: f32) {
        let tx = x.load_like(y);
        // TILEPORT-HOLE h1 BEGIN unsupported: `if` on a run-time value at clamp.py:9:8 (use select)
        // python: if lo > 0: tx = ct.maximum(tx, lo)
        let _ = tileport_hole_h1;
        // TILEPORT-HOLE h1 END
        y.store(tx);
    }
}
"""
LEGACY = """    fn k() {
        let a = 1;
        // TODO(tileport): unsupported: ct.cumsum at op.py:42:8
        //     acc = ct.cumsum(x, axis=1)
        let b = 2;
    }
"""
PYTHON = "import cuda.tile as ct\n\n@ct.kernel\ndef clamp_kernel(y, x, lo, B: ct.Constant[int]):\n" \
         "    tx = ct.load(x, index=(ct.bid(0),), shape=(B,))\n    ct.store(y, index=(ct.bid(0),), tile=tx)\n"


# ----------------------------------------------------------------------------------------------------- holes


def test_find_holes_reads_the_contract_and_todays_todo_holes():
    [h] = find_holes(DRAFT)
    assert (h.id, h.start_line, h.end_line) == ("h1", 8, 11)
    assert h.reason.startswith("unsupported: `if` on a run-time value at clamp.py:9:8")
    assert h.python == "if lo > 0: tx = ct.maximum(tx, lo)" and "tileport_hole_h1" in h.body
    [old] = find_holes(LEGACY)
    assert (old.id, old.python, old.start_line, old.end_line) == ("h1", "acc = ct.cumsum(x, axis=1)", 3, 4)
    assert find_holes("fn main() {}\n") == []


def test_fill_hole_replaces_the_region_at_its_indentation_and_leaves_no_hole():
    out = fill_hole(DRAFT, "h1", "let lo_t = tx.shape();\nlet tx = max_tile(tx, tx);")
    assert find_holes(out) == [] and "TILEPORT-HOLE" not in out
    assert "        let lo_t = tx.shape();\n        let tx = max_tile(tx, tx);\n        y.store(tx);" in out
    assert "let a = 1;\n        let acc = 0;\n        let b = 2;" in fill_hole(LEGACY, "h1", "let acc = 0;")
    with pytest.raises(UserError, match="no hole 'h7'.*h1"):
        fill_hole(DRAFT, "h7", "x")


def test_search_replace_exact_then_ignoring_indentation_else_a_clear_refusal():
    assert "y.store(tz);" in search_replace(DRAFT, "y.store(tx);", "y.store(tz);")
    out = search_replace(DRAFT, "let tx = x.load_like(y);\n// TILEPORT-HOLE h1 BEGIN unsupported: `if` on a run-time "
                                "value at clamp.py:9:8 (use select)", "let tx = x.load_like(y);")
    assert "        let tx = x.load_like(y);\n        // python:" in out
    numbered = search_replace(DRAFT, "  12 |         y.store(tx);", "  12 |         y.store(tz);")
    assert "        y.store(tz);\n    }" in numbered
    with pytest.raises(UserError, match="matches no lines"):
        search_replace(DRAFT, "let q = 1;", "")
    with pytest.raises(UserError, match="matches 2 places"):
        search_replace("a\nb\na\n", "a", "c")


# ----------------------------------------------------------------------------------------------------- budget


def test_budget_fills_by_priority_and_drops_whole_parts_never_cuts_them():
    parts = [bd.Part("task", 0, "", "T" * 300), bd.Part("examples", 5, "Examples", items=["E" * 900, "F" * 90]),
             bd.Part("feedback", 1, "Fix", items=["D" * 300])]
    text, taken, dropped = bd.fill(parts, 250)
    assert "D" * 300 in text and "F" * 90 in text and "EEE" not in text  # the big example left out whole
    assert dropped == {"examples": 1} and set(taken) == {"task", "feedback", "examples"}
    assert text.index("T") < text.index("## Examples") < text.index("## Fix")  # reading order kept


def test_the_shipped_reference_covers_the_draft_mappings_and_picks_similar_ports():
    api = load_api()
    names = {f.name for f in api.functions}
    assert {"reduce_sum", "mma", "exp", "select", "convert_tile"} <= names
    assert all(n in names for rs in api.ct_map.values() for n in rs)  # every mapped name has a signature
    assert api.ct_map["sum"] == ["reduce_sum"] and "mma" in api.ct_map["mma"]
    assert {p.name for p in load_worked_ports()} >= {"softmax", "vector_add", "matmul"}
    mm = similar_ports("ct.mma(a, b, acc); ct.load(x); ct.num_tiles(x)", op="x")
    assert mm[0].name == "matmul"
    assert all(p.name != "softmax" for p in similar_ports(Path("examples/softmax.py").read_text(), "softmax"))


# ----------------------------------------------------------------------------------------------------- the loop


class FakeBuild:
    """A named fake for cargo: OK when kernel.rs has no hole placeholder and no `BUG`; the same sources give the
    same result marked reused (as the stage's builder does)."""

    def __init__(self, kernel: Path):
        self.kernel = kernel
        self.last: tuple[str, BuildCheck] | None = None
        self.calls = 0

    def __call__(self) -> BuildCheck:
        self.calls += 1
        src = self.kernel.read_text()
        if self.last and self.last[0] == src:
            return BuildCheck(self.last[1].ok, self.last[1].text, reused=True)
        ok = "tileport_hole_" not in src and "BUG" not in src
        text = "OK: 0 error(s)" if ok else ("error[E0425]: cannot find value `tileport_hole_h1`\n  --> "
                                            "src/kernel.rs:10:17\n\nFAILED at rustc: 1 error(s)")
        check = BuildCheck(ok, text)
        self.last = (src, check)
        return check


def _task(tmp_path: Path, kernel: str | None = DRAFT, **kw) -> KernelTask:
    port = tmp_path / "ports" / "clamp"
    port.mkdir(parents=True)
    k = port / "kernel.rs"
    if kernel is not None:
        k.write_text(kernel)
    spec = port / "spec.json"
    spec.write_text('{"module": "clamp", "entries": [], "targets": ["sm_90"]}\n')
    return KernelTask(op="clamp", op_source=PYTHON, kernels=["clamp_kernel"], analysis_summary="", reference_ir="",
                      kernel_path=k, spec_path=spec, feedback="", build=FakeBuild(k), draft=kernel, **kw)


def _call(name, **args):
    return {"name": name, "arguments": args}


def _ex(*calls, expect=None, content="", usage=(500, 40)):
    return {"expect": expect or {}, "reply": {"content": content, "tool_calls": list(calls),
                                              "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}}}


VERDICT = {"expect": {"response_format": "KernelWriterVerdict"},
           "reply": {"content": json.dumps({"verdict": "COMPILED", "summary": "filled h1", "build_attempts": 1}),
                     "usage": {"prompt_tokens": 700, "completion_tokens": 20}}}


def _model(exchanges, max_model_len=8192) -> ScriptedModel:
    return ScriptedModel({"name": "t", "model": "tileport-coder", "max_model_len": max_model_len, "start": "draft",
                          "exchanges": exchanges})


def _ctx():
    return SimpleNamespace(cancel=CancelToken(), limits=Limits.of())


def test_the_model_fills_the_drafts_hole_then_builds_and_the_verdict_keeps_the_tools(tmp_path):
    task = _task(tmp_path)
    model = _model([
        _ex(_call("replace_region", id="h1", code="let tx = max_tile(tx, tx);"),
            expect={"tool_choice": "required", "tools": ["replace_region", "edit_kernel", "write_kernel",
                                                         "cargo_build"], "last_message_contains": "h1 (kernel.rs"}),
        _ex(_call("cargo_build"), expect={"last_message_contains": "no unfilled holes"}),
        VERDICT])
    out = ModelWriter(model, "scripted:t").write_kernel(_ctx(), task)
    model.assert_finished()
    assert "max_tile(tx, tx)" in task.kernel_path.read_text() and find_holes(task.kernel_path.read_text()) == []
    assert out.details["tool_calls"] == ["replace_region", "cargo_build"] and out.details["stop"] == "compiled"
    assert out.details["model_verdict"] == "COMPILED"
    reqs = model.transport.requests
    # every request has max_tokens from the budget; the verdict is asked with the same tools, calling none
    assert all(0 < r["max_tokens"] <= bd.MAX_REPLY for r in reqs)
    assert [t["function"]["name"] for t in reqs[-1]["tools"]] == [t["function"]["name"] for t in reqs[0]["tools"]]
    assert reqs[-1]["tool_choice"] == "none"
    # the first prompt: the holes, the kernel, the API entries in play; tokens per part reported
    first = reqs[0]["messages"][1]["content"]
    assert "TILEPORT-HOLE h1 BEGIN" in first and "ct.bid -> program_id" in first
    assert "pub fn program_id(axis: i32) -> i32" in first  # the signature, from the crate
    ctx = out.details["context"]
    assert ctx["max_model_len"] == 8192 and ctx["parts"]["holes"] > 0 and ctx["parts"]["kernel"] > 0
    # the transcript keeps every request and reply
    tr = out.transcript
    assert [c.kind for c in tr.calls] == ["tool_call", "tool_call", "verdict"]
    assert tr.calls[0].tool_calls[0]["name"] == "replace_region" and tr.messages[-1]["role"] == "tool"


def test_a_complete_draft_on_a_first_attempt_skips_the_model(tmp_path):
    task = _task(tmp_path, kernel=fill_hole(DRAFT, "h1", "let tx = tx;"))
    model = _model([])
    out = ModelWriter(model, "scripted:t").write_kernel(_ctx(), task)
    assert out.details["model_skipped"] == "the draft is complete" and model.transport.requests == []


def test_a_model_that_never_builds_is_stopped_by_the_turn_cap_with_that_reason(tmp_path):
    task = _task(tmp_path)
    edits = [_ex(_call("edit_kernel", search="y.store(tx);", replace="y.store(tx);")) for _ in range(3)]
    model = _model(edits + [VERDICT])
    loop = KernelWriterLoop(model, max_model_len=8192)
    loop.max_turns = 3
    r = loop.run(task)
    model.assert_finished()
    assert r.stop == "turn cap reached (3 turns) without a cargo_build" and task.build.calls == 0


def test_an_identical_rebuild_does_not_use_up_the_build_budget(tmp_path):
    task = _task(tmp_path)
    edit = _ex(_call("edit_kernel", search="y.store(tx);", replace="y.store(tx); // BUG"),
               expect={"last_message_contains": "unchanged since the last build"})
    fix = _ex(_call("edit_kernel", search="y.store(tx); // BUG", replace="y.store(tx);"))
    hole = _ex(_call("replace_region", id="h1", code="let tx = tx;"))
    build = _ex(_call("cargo_build"))
    model = _model([build, build, edit, build, fix, hole, build, VERDICT])
    loop = KernelWriterLoop(model, max_model_len=8192)
    r = loop.run(task)
    model.assert_finished()
    # four build calls, one of unchanged sources: three builds, and the third (the budget, max_builds=3, had the
    # rebuild counted it would have ended the loop one build earlier) compiles
    assert r.tool_calls.count("cargo_build") == 4 and loop.builds == 3 and loop.compiled and r.stop == "compiled"


def test_a_model_that_only_rebuilds_unchanged_sources_is_stopped_saying_so(tmp_path):
    task = _task(tmp_path)
    model = _model([_ex(_call("cargo_build")) for _ in range(3)] + [VERDICT])
    r = KernelWriterLoop(model, max_model_len=8192).run(task)
    model.assert_finished()
    assert r.stop == "2 rebuilds in a row of unchanged sources (the model is not editing)"
    assert task.build.calls == 3


def test_a_spec_that_does_not_match_the_schema_is_refused_and_the_old_one_kept(tmp_path):
    task = _task(tmp_path, kernel=None)
    before = task.spec_path.read_text()
    model = _model([_ex(_call("write_kernel", source=fill_hole(DRAFT, "h1", ""), spec='{"anyOf": []}'),
                        expect={"tools": ["write_kernel", "cargo_build"]}),
                    _ex(_call("cargo_build"), expect={"last_message_contains": "spec NOT written"}), VERDICT])
    KernelWriterLoop(model, max_model_len=8192).run(task)
    model.assert_finished()
    assert task.spec_path.read_text() == before and task.kernel_path.is_file()


def test_a_tool_call_written_as_text_is_repaired_once_and_noted(tmp_path):
    task = _task(tmp_path)
    text_call = '<tool_call>{"name": "replace_region", "arguments": {"id": "h1", "code": "let tx = tx;"}}</tool_call>'
    model = _model([_ex(content=text_call), _ex(_call("cargo_build")), VERDICT])
    r = KernelWriterLoop(model, max_model_len=8192).run(task)
    model.assert_finished()
    assert r.tool_calls == ["replace_region", "cargo_build"] and r.verdict is not None
    assert any("salvaged" in n for n in r.transcript.calls[0].notes)


def test_garbled_arguments_are_repaired_from_a_fence_or_trailing_text():
    from tileport.local_models.structured import decode_arguments

    assert decode_arguments('```json\n{"id": "h1", "code": "x"}\n```') == ({"id": "h1", "code": "x"}, None)
    assert decode_arguments('{"id": "h1"} and then some') == ({"id": "h1"}, None)
    assert decode_arguments("not json")[0] is None


def test_a_small_context_keeps_the_task_and_drops_examples_and_max_tokens_never_overflow(tmp_path):
    task = _task(tmp_path)
    model = _model([_ex(_call("replace_region", id="h1", code="let tx = tx;")), _ex(_call("cargo_build")), VERDICT],
                   max_model_len=3000)
    out = ModelWriter(model, "scripted:t").write_kernel(_ctx(), task)
    ctx = out.details["context"]
    assert "examples" not in ctx["parts"] and ctx["dropped"].get("examples", 0) >= 1
    assert {"task", "python", "holes", "kernel"} <= set(ctx["parts"])
    for req in model.transport.requests:
        est = bd.messages_tokens(req["messages"], req.get("tools"))
        assert est + req["max_tokens"] <= 3000


def test_a_context_too_small_for_a_reply_stops_the_loop_instead_of_a_rejected_request(tmp_path):
    task = _task(tmp_path)
    model = _model([], max_model_len=900)
    r = KernelWriterLoop(model, max_model_len=900).run(task)
    assert r.stop.startswith("context full") and model.transport.requests == []


def test_a_second_attempt_sees_the_kernel_its_diagnostics_point_at(tmp_path):
    from tileport.agents.feedback import FeedbackItem

    broken = fill_hole(DRAFT, "h1", "let tx = BUG;")
    item = FeedbackItem(kind="diagnostic", where="src/kernel.rs:8:18", code="E0425",
                        message="error: cannot find value `BUG` in this scope", source="8 |  let tx = BUG;")
    task = _task(tmp_path, kernel=broken, feedback_items=[item])
    task.draft = None
    model = _model([_ex(_call("edit_kernel", search="let tx = BUG;", replace="let tx = tx;"),
                        expect={"tools": ["edit_kernel", "write_kernel", "cargo_build"]}),
                    _ex(_call("cargo_build"), expect={"last_message_contains": "applied"}), VERDICT])
    out = ModelWriter(model, "scripted:t").write_kernel(_ctx(), task)
    first = model.transport.requests[0]["messages"][1]["content"]
    assert "let tx = BUG;" in first and "E0425" in first and first.index("src/kernel.rs (current") < first.index(
        "What to fix")
    assert out.details["tool_calls"] == ["edit_kernel", "cargo_build"] and "BUG" not in task.kernel_path.read_text()


def test_a_first_attempt_gets_no_what_to_fix_section_from_stage_a():
    from tileport.pipeline.stages.write_kernel import _feedback

    from tileport.records import Stage, StageResult
    from tileport.store.queries import StageRunRow

    a = StageRunRow.of(StageResult(stage=Stage.ANALYZE, verdict="PASS", summary="analysis PASS: 2 kernels"))
    ctx = SimpleNamespace(history=[a], latest=lambda: a, last=lambda s: a if s == "A" else None)
    assert _feedback(ctx) == ("", [])


def test_a_stages_transcript_is_kept_as_a_pinned_artifact(tmp_path):
    from tileport.pipeline.context import ConversionPaths
    from tileport.agents.transcripts import keep_transcript
    from tileport.records import sha256_file

    task = _task(tmp_path / "w")
    model = _model([_ex(_call("replace_region", id="h1", code="let tx = tx;")), _ex(_call("cargo_build")), VERDICT])
    out = ModelWriter(model, "scripted:t").write_kernel(_ctx(), task)
    paths = ConversionPaths(worktree=tmp_path, op="clamp")
    [art] = keep_transcript(paths, "B-1", out.transcript)
    f = Path(art.path)
    assert art.kind == "transcript" and f.name == "B-1.transcript.json" and art.sha256 == sha256_file(f)
    data = json.loads(f.read_text())
    assert [c["kind"] for c in data["calls"]] == ["tool_call", "tool_call", "verdict"]
    assert data["messages"][0]["role"] == "system" and "TILEPORT-HOLE h1" in data["messages"][1]["content"]
    assert keep_transcript(paths, "B-2", None) == []


def test_a_request_the_server_finds_too_long_is_sent_once_more_within_its_count(tmp_path):
    """The estimate is pessimistic, but a tokenizer can still count more: the server's 400 names its count; the
    loop learns it and retries once with a max_tokens that fits, instead of ending the attempt BLOCKED."""
    task = _task(tmp_path)
    too_long = {"error": {"status": 400, "body": "This model's maximum context length is 8192 tokens. However, you "
                                                 "requested 9000 tokens (7000 in the messages, 2000 in the completion)."}}
    model = _model([too_long, _ex(_call("replace_region", id="h1", code="let tx = tx;")), _ex(_call("cargo_build")),
                    VERDICT])
    loop = KernelWriterLoop(model, max_model_len=8192)
    r = loop.run(task)
    model.assert_finished()
    assert r.fault is None and r.stop == "compiled" and loop.scale > 1
    first, second = model.transport.requests[:2]
    assert second["max_tokens"] <= 8192 - 7000 < first["max_tokens"]


def test_the_shipped_reference_data_is_what_the_generator_makes_from_the_crate_and_the_ports():
    from tileport.agents.reference import generate
    from tileport.errors import UserError

    try:
        generate.find_crate()
    except UserError as e:
        pytest.skip(str(e))
    assert generate.main(["--check"]) == 0, "run python -m tileport.agents.reference.generate"


# ----------------------------------------------------------------------------------------------------- end to end

from tests.e2e.test_pipeline import _gpu_gates, project, runs, status, tileport  # noqa: E402,F401


@pytest.mark.heavy
@pytest.mark.slow
@pytest.mark.skipif(_gpu_gates(), reason="a GPU and the gates are here: D is not BLOCKED(env)")
def test_with_a_model_b_starts_from_the_draft_and_a_complete_draft_needs_no_model(project):
    """`tileport run --model scripted:...` (a model that must never be asked: its transcript is empty): B drafts,
    the draft of vector_add is complete, the model is skipped, the real build and IR self-check judge it."""
    t = project.parent / "never_asked.json"
    t.write_text(json.dumps({"name": "never_asked", "start": "draft", "exchanges": []}))
    r = tileport(project, "run", "vector_add.py", "--model", f"scripted:{t}")
    assert r.returncode == 3, r.stdout + r.stderr
    detail = status(project, 1)
    assert runs(detail)[:2] == [("A", 1, "PASS"), ("B", 1, "COMPILED")]
    b = detail["stage_runs"][1]
    assert b["details"]["model_skipped"] == "the draft is complete" and b["details"]["draft_holes"] == []
    assert (b["prompt_tokens"], b["completion_tokens"]) == (0, 0)
    assert not any(a["kind"] == "transcript" for a in b["artifacts"])
    wt = Path(detail["conversion"]["worktree"])
    assert "Draft port of vector_add.py" in (wt / "ports" / "vector_add" / "kernel.rs").read_text()
