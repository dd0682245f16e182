"""The scripted model replays a kernel writer's transcript through the real client code."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel

from tileport.local_models.protocol import FaultKind
from tileport.local_models.scripted import ScriptedModel, TranscriptMismatch, load_transcript
from tileport.local_models.structured import ToolSpec

TRANSCRIPT = "kernel_writer_vector_add_rustc_fix"


class WriteKernel(BaseModel):
    source: str


class CargoBuild(BaseModel):
    pass


class KernelWriterVerdict(BaseModel):
    verdict: Literal["COMPILED", "FAIL_COMPILE", "FAIL_FIXABLE", "BLOCKED"]
    summary: str
    build_attempts: int


TOOLS = [
    ToolSpec("write_kernel", "Replace src/kernel.rs with `source`", WriteKernel),
    ToolSpec("cargo_build", "Build the crate; returns rustc diagnostics or OK", CargoBuild),
]
PROMPT = [
    {"role": "system", "content": "You port cuTile Python kernels to cutile-rs. Write only the device kernel."},
    {"role": "user", "content": "Port `vector_add_kernel` from examples/vector_add.py (variant f32_b1024, sm_90)."},
]


def drive(model: ScriptedModel, **kw):
    """A minimal writer loop: call tools until a build says OK, then ask for the verdict.

    Tool results come from the transcript's recorded environment (`tool_results`).
    """
    messages = list(PROMPT)
    written: list[str] = []
    for _ in range(8):
        r = model.call_tool(messages, TOOLS, tool_choice="required", **kw)
        assert r.ok, r.fault
        env = model.transport.exchanges[model.transport.position - 1]["tool_results"]
        messages.append({
            "role": "assistant", "content": r.text or None,
            "tool_calls": [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
                           for c in r.tool_calls],
        })
        build_ok = False
        for c in r.tool_calls:
            if c.name == "write_kernel":
                written.append(c.arguments["source"])
            out = env[c.name]
            build_ok |= c.name == "cargo_build" and out.splitlines()[-1].startswith("OK:")
            messages.append({"role": "tool", "tool_call_id": c.id, "content": out})
        if build_ok:
            return model.structured(messages, KernelWriterVerdict, **kw), written
    raise AssertionError("writer loop did not finish")


def transcript_tokens() -> tuple[int, int]:
    t = load_transcript(TRANSCRIPT)
    usages = [ex["reply"]["usage"] for ex in t["exchanges"]]
    return sum(u["prompt_tokens"] for u in usages), sum(u["completion_tokens"] for u in usages)


def test_writer_fixes_a_rustc_error_and_reports_compiled():
    model = ScriptedModel(TRANSCRIPT)
    verdict, written = drive(model)
    model.assert_finished()
    assert verdict.ok and verdict.value.verdict == "COMPILED" and verdict.value.build_attempts == 2
    # The first attempt carried the bug, the fix replaced it.
    assert "Tile<f16" in written[0] and "Tile<f32" in written[1]
    # The real rustc diagnostics were fed back to the model before its fix.
    fed_back = model.transport.requests[2]["messages"][-1]["content"]
    assert "error[E0308]: mismatched types" in fed_back and "src/kernel.rs:13:39" in fed_back


def test_replay_streams_and_counts_tokens_like_a_server():
    model = ScriptedModel(TRANSCRIPT)
    deltas: list[str] = []
    verdict, _ = drive(model, on_delta=deltas.append)
    assert verdict.ok and verdict.value.verdict == "COMPILED"
    assert "annotated the sum as f16" in "".join(deltas)
    assert (verdict.usage.prompt_tokens, verdict.usage.completion_tokens) == (2702, 64)
    assert all(req.get("stream") for req in model.transport.requests)


def test_total_tokens_of_a_run_add_up_per_call():
    model = ScriptedModel(TRANSCRIPT)
    results = []
    orig = model.call_tool

    def spy(*a, **kw):
        results.append(orig(*a, **kw))
        return results[-1]

    model.call_tool = spy  # type: ignore[method-assign]
    verdict, _ = drive(model)
    total = sum((r.usage for r in results), verdict.usage)
    assert (total.prompt_tokens, total.completion_tokens) == transcript_tokens()


def test_a_request_the_transcript_does_not_expect_fails_loudly():
    model = ScriptedModel(TRANSCRIPT)
    with pytest.raises(TranscriptMismatch, match="tool_choice 'auto', expected 'required'"):
        model.call_tool(PROMPT, TOOLS, tool_choice="auto")


def test_exhausted_transcript_fails_loudly():
    t = {"name": "one", "exchanges": [{"reply": {"content": "hi"}}]}
    model = ScriptedModel(t)
    assert model.chat(PROMPT).text == "hi"
    with pytest.raises(TranscriptMismatch, match="exhausted"):
        model.chat(PROMPT)


def test_scripted_faults_go_through_the_client_retry_policy():
    t = {"name": "faults", "exchanges": [
        {"fault": "broken"},
        {"error": {"status": 503, "body": "loading"}},
        {"reply": {"content": json.dumps({"verdict": "BLOCKED", "summary": "no cutile", "build_attempts": 0}),
                   "usage": {"prompt_tokens": 5, "completion_tokens": 3}}},
        {"error": {"status": 400, "body": "max_tokens is too large"}},
    ]}
    model = ScriptedModel(t, max_retries=2)
    r = model.structured(PROMPT, KernelWriterVerdict)
    assert r.ok and r.value.verdict == "BLOCKED" and len(r.calls) == 3
    r = model.chat(PROMPT)
    assert r.fault.kind == FaultKind.HTTP_ERROR and "max_tokens is too large" in r.fault.message
    model.assert_finished()


def test_a_scripted_timeout_is_not_resent():
    model = ScriptedModel({"name": "late", "exchanges": [{"fault": "timeout"}, {"reply": {"content": "x"}}]},
                          max_retries=2)
    r = model.chat(PROMPT)
    assert r.fault.kind == FaultKind.TIMEOUT and len(model.transport.requests) == 1


def test_probe_of_a_scripted_model():
    info = ScriptedModel(TRANSCRIPT).probe()
    assert info.healthy and info.models == ["tileport-coder"] and info.max_model_len == 32768


def test_run_tokens_are_stored_with_the_stage_run(tmp_path):
    """Token usage of every call in a writer run lands on its stage-B record in the store."""
    from tileport.records import Stage, StageResult
    from tileport.store import Store, queries

    model = ScriptedModel(TRANSCRIPT)
    results = []
    orig = model.call_tool
    model.call_tool = lambda *a, **kw: results.append(orig(*a, **kw)) or results[-1]  # type: ignore[method-assign]
    verdict, _ = drive(model)
    usage = sum((r.usage for r in results), verdict.usage)

    store = Store(tmp_path / "tileport.db")
    cid = store.add_conversion("examples/vector_add.py", "vector_add_kernel")
    store.record_stage(cid, StageResult(stage=Stage.WRITE_KERNEL, verdict=verdict.value.verdict, tokens=usage,
                                        model_id=load_transcript(TRANSCRIPT)["model"]))
    [run] = queries.stage_runs(store, cid)
    assert (run.prompt_tokens, run.completion_tokens) == transcript_tokens()
    assert run.verdict == "COMPILED" and run.model_id == "tileport-coder"
