"""Fault behaviour of the model client against a fake OpenAI-compatible server on a real socket."""

from __future__ import annotations

import json
import threading
import time

import pytest
from pydantic import BaseModel, Field

from tileport.local_models.client import ModelClient
from tileport.local_models.fake_server import Die, FakeOpenAIServer, Reply, Stall, Status, Truncate
from tileport.local_models.protocol import CancelToken, FaultKind
from tileport.local_models.structured import ToolSpec
from tileport.local_models.transport import HttpTransport

USER = [{"role": "user", "content": "hello"}]


class Verdict(BaseModel):
    verdict: str = Field(pattern="^(COMPILED|FAIL_COMPILE)$")
    summary: str


class WriteFile(BaseModel):
    path: str
    content: str


WRITE_FILE = ToolSpec("write_file", "Write a file in the crate", WriteFile)


@pytest.fixture
def server():
    with FakeOpenAIServer(model="tileport-coder") as srv:
        yield srv


def client_for(srv: FakeOpenAIServer, **kw) -> ModelClient:
    kw.setdefault("timeout_s", 5.0)
    kw.setdefault("backoff_s", 0.01)
    return ModelClient(HttpTransport(srv.base_url), "tileport-coder", base_url=srv.base_url, **kw)


def test_plain_chat_counts_tokens_and_records_the_call(server):
    server.add(Reply("hi there", usage=(42, 7)))
    r = client_for(server).chat(USER)
    assert r.ok and r.text == "hi there"
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (42, 7)
    assert len(r.calls) == 1 and r.calls[0].usage.prompt_tokens == 42
    assert r.model_id == "tileport-coder"
    assert server.requests[0]["model"] == "tileport-coder"


def test_timeout_becomes_a_timeout_fault_quickly(server):
    server.add(Reply("late", delay_s=3))
    t0 = time.monotonic()
    r = client_for(server, timeout_s=0.3, max_retries=0).chat(USER)
    assert time.monotonic() - t0 < 2
    assert r.fault and r.fault.kind == FaultKind.TIMEOUT
    assert "0.3 s" in r.fault.message


def test_a_request_past_its_deadline_is_not_resent_while_the_server_may_still_serve_it(server):
    server.add(Reply("late", delay_s=2), Reply("on time"))
    r = client_for(server, timeout_s=0.3, max_retries=2).chat(USER)
    assert r.fault and r.fault.kind == FaultKind.TIMEOUT and "timeout_s" in r.fault.message
    assert len(r.calls) == 1 and len(server.requests) == 1


def test_http_500_then_success_is_retried(server):
    server.add(Status(500, "engine hiccup"), Reply("fine", usage=(3, 2)))
    r = client_for(server).chat(USER)
    assert r.ok and r.text == "fine"
    assert [c.error is None for c in r.calls] == [False, True]
    assert len(server.requests) == 2


def test_persistent_500_is_a_server_error_after_bounded_retries(server):
    server.add(*[Status(503, "overloaded")] * 5)
    r = client_for(server, max_retries=2).chat(USER)
    assert r.fault.kind == FaultKind.SERVER_ERROR
    assert "overloaded" in r.fault.message and "3 attempts" in r.fault.message
    assert len(server.requests) == 3


def test_http_400_is_not_retried_and_keeps_the_servers_message(server):
    server.add(Status(400, '"auto" tool choice requires --enable-auto-tool-choice'), Reply("never"))
    r = client_for(server).chat(USER)
    assert r.fault.kind == FaultKind.HTTP_ERROR
    assert "--enable-auto-tool-choice" in r.fault.message
    assert len(server.requests) == 1


def test_structured_request_uses_response_format_json_schema(server):
    server.add(Reply(json.dumps({"verdict": "COMPILED", "summary": "ok"})))
    r = client_for(server).structured(USER, Verdict)
    assert r.ok and r.value == Verdict(verdict="COMPILED", summary="ok")
    fmt = server.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Verdict"
    assert "verdict" in fmt["json_schema"]["schema"]["properties"]
    assert "guided_json" not in json.dumps(server.requests[0])


def test_invalid_json_then_valid_retries_with_the_error_fed_back(server):
    server.add(
        Reply('{"verdict": "COMPILED", "summary": '),  # cut JSON
        Reply(json.dumps({"verdict": "DONE", "summary": "x"})),  # valid JSON, wrong verdict word
        Reply(json.dumps({"verdict": "FAIL_COMPILE", "summary": "E0308"}), usage=(100, 20)),
    )
    r = client_for(server, schema_retries=2).structured(USER, Verdict)
    assert r.ok and r.value.verdict == "FAIL_COMPILE"
    assert r.schema_retries_used == 2
    second, third = server.requests[1]["messages"], server.requests[2]["messages"]
    assert second[-2] == {"role": "assistant", "content": '{"verdict": "COMPILED", "summary": '}
    assert "not valid JSON" in second[-1]["content"]
    assert "verdict" in third[-1]["content"] and "pattern" in third[-1]["content"]
    # Failed attempts cost tokens too: 10+10+100 prompt tokens.
    assert r.usage.prompt_tokens == 120 and r.usage.completion_tokens == 30


def test_schema_never_valid_is_a_model_fault_result_not_an_exception(server):
    server.add(*[Reply("I think the kernel is fine!")] * 3)
    r = client_for(server, schema_retries=2).structured(USER, Verdict)
    assert not r.ok and r.fault.kind == FaultKind.SCHEMA_INVALID and r.fault.is_model_fault
    assert "3 attempt(s)" in r.fault.message and "not valid JSON" in r.fault.message
    assert r.fault.detail == "I think the kernel is fine!"
    assert len(server.requests) == 3 and len(r.calls) == 3


def test_streaming_delivers_deltas_live_and_counts_tokens(server):
    server.add(Reply("fn main() {}", usage=(11, 6), chunk_chars=3))
    seen: list[str] = []
    r = client_for(server).chat(USER, on_delta=seen.append)
    assert r.ok and r.text == "fn main() {}"
    assert seen == ["fn ", "mai", "n()", " {}"]
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (11, 6)
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["stream_options"] == {"include_usage": True}


def test_stream_iterator_yields_deltas_then_result(server):
    server.add(Reply('{"verdict": "COMPILED", "summary": "s"}', chunk_chars=8))
    stream = client_for(server).stream(USER, schema=Verdict)
    deltas = list(stream)
    assert len(deltas) > 1 and "".join(deltas) == '{"verdict": "COMPILED", "summary": "s"}'
    assert stream.result.ok and stream.result.value.verdict == "COMPILED"


def test_truncated_stream_is_retried_and_the_dashboard_is_told_to_restart(server):
    server.add(Truncate("partial answer", send_chunks=2), Reply("whole answer"))
    seen, restarts = [], []
    r = client_for(server).chat(USER, on_delta=seen.append, on_restart=restarts.append)
    assert r.ok and r.text == "whole answer"
    assert len(restarts) == 1 and "StreamTruncated" in restarts[0]
    assert "".join(seen).endswith("whole answer")


def test_stream_truncated_every_time_is_a_truncated_fault(server):
    server.add(*[Truncate("partial answer")] * 3)
    r = client_for(server, max_retries=2).chat(USER, on_delta=lambda s: None)
    assert r.fault.kind == FaultKind.TRUNCATED and "ended early" in r.fault.message


def test_server_dying_mid_request(server):
    server.add(Die(and_stop=True))
    r = client_for(server, max_retries=2).chat(USER)
    assert r.fault.kind == FaultKind.UNREACHABLE
    assert "tileport model serve" in r.fault.message
    assert "TransportBroken" in r.calls[0].error  # the first attempt saw the connection drop
    assert all("TransportUnreachable" in c.error for c in r.calls[1:])


def test_connection_dropped_once_then_success(server):
    server.add(Die(), Reply("back"))
    r = client_for(server).chat(USER)
    assert r.ok and r.text == "back"


def test_nothing_listening_is_unreachable_and_probe_says_so():
    with FakeOpenAIServer() as srv:
        url = srv.base_url
    c = ModelClient(HttpTransport(url), "m", timeout_s=1, max_retries=0, base_url=url)
    r = c.chat(USER)
    assert r.fault.kind == FaultKind.UNREACHABLE and url in r.fault.message
    info = c.probe()
    assert not info.reachable and not info.healthy and info.error


def test_probe_reports_health_models_and_max_model_len(server):
    server.max_model_len = 2048
    info = client_for(server).probe()
    assert info.healthy and info.models == ["tileport-coder"] and info.max_model_len == 2048
    server.healthy = False
    info = client_for(server).probe()
    assert info.reachable and not info.healthy and "not ready" in info.error


def test_cancel_aborts_a_stalled_stream_promptly(server):
    server.add(Stall(first="thinking"))
    cancel = CancelToken()
    seen: list[str] = []

    def on_delta(s: str) -> None:
        seen.append(s)
        threading.Timer(0.2, cancel.cancel).start()

    t0 = time.monotonic()
    r = client_for(server, timeout_s=20).chat(USER, on_delta=on_delta, cancel=cancel)
    assert time.monotonic() - t0 < 3
    assert r.fault.kind == FaultKind.CANCELLED and seen == ["thinking"]
    assert len(server.requests) == 1  # a cancel is never retried


def test_cancel_aborts_a_request_waiting_for_headers(server):
    server.add(Reply("slow", delay_s=10))
    cancel = CancelToken()
    threading.Timer(0.3, cancel.cancel).start()
    t0 = time.monotonic()
    r = client_for(server, timeout_s=20).chat(USER, cancel=cancel)
    assert time.monotonic() - t0 < 3
    assert r.fault.kind == FaultKind.CANCELLED


def test_cancel_during_backoff_stops_retrying(server):
    server.add(Status(500), Reply("never"))
    cancel = CancelToken()
    threading.Timer(0.2, cancel.cancel).start()
    r = client_for(server, backoff_s=5).chat(USER, cancel=cancel)
    assert r.fault.kind == FaultKind.CANCELLED and len(server.requests) == 1


def test_tool_call_required_is_sent_and_validated(server):
    server.add(Reply(tool_calls=[{"name": "write_file", "arguments": json.dumps({"path": "src/lib.rs", "content": "x"})}]))
    r = client_for(server).call_tool(USER, [WRITE_FILE], tool_choice="required")
    assert r.ok and r.tool_calls[0].name == "write_file"
    assert r.tool_calls[0].arguments == {"path": "src/lib.rs", "content": "x"}
    req = server.requests[0]
    assert req["tool_choice"] == "required"
    assert req["tools"][0]["function"]["parameters"]["required"] == ["path", "content"]
    assert req["tools"][0]["function"]["strict"] is True  # vLLM pins arguments only for strict tools


def test_named_tool_choice_is_sent_in_openai_shape(server):
    server.add(Reply(tool_calls=[{"name": "write_file", "arguments": '{"path": "a", "content": "b"}'}]))
    client_for(server).call_tool(USER, [WRITE_FILE], tool_choice="write_file")
    assert server.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "write_file"}}


def test_bad_tool_arguments_are_fed_back_as_tool_messages(server):
    server.add(
        Reply(tool_calls=[{"name": "write_file", "arguments": '{"path": "src/lib.rs"}'}]),
        Reply(tool_calls=[{"name": "write_file", "arguments": '{"path": "src/lib.rs", "content": "ok"}'}]),
    )
    r = client_for(server).call_tool(USER, [WRITE_FILE])
    assert r.ok and r.tool_calls[0].arguments["content"] == "ok"
    fed = server.requests[1]["messages"]
    assert fed[-2]["role"] == "assistant" and fed[-2]["tool_calls"][0]["function"]["name"] == "write_file"
    assert fed[-1]["role"] == "tool" and "content: Field required" in fed[-1]["content"]


def test_tool_call_as_text_is_reported_as_a_parser_fault(server):
    text = 'I will write the file.\n```json\n{"name": "write_file", "arguments": {"path": "src/lib.rs", "content": "fn a() {}"}}\n```'
    server.add(Reply(text))
    r = client_for(server).call_tool(USER, [WRITE_FILE], tool_choice="auto")
    assert r.fault.kind == FaultKind.TOOL_CALL_AS_TEXT
    assert "--tool-call-parser hermes" in r.fault.message
    assert len(server.requests) == 1  # a misconfigured server is not retried


def test_tool_call_as_text_can_be_salvaged_and_is_marked(server):
    server.add(Reply('<tool_call>\n{"name": "write_file", "arguments": {"path": "a.rs", "content": "b"}}\n</tool_call>'))
    r = client_for(server).call_tool(USER, [WRITE_FILE], tool_choice="auto", salvage_text_tool_calls=True)
    assert r.ok and r.salvaged_from_text
    assert r.tool_calls[0].arguments == {"path": "a.rs", "content": "b"}
    assert any("plain text" in n for n in r.notes)


def test_auto_without_a_tool_call_is_plain_text(server):
    server.add(Reply("No file needs changing."))
    r = client_for(server).call_tool(USER, [WRITE_FILE], tool_choice="auto")
    assert r.ok and r.tool_calls == [] and r.text == "No file needs changing."


def test_required_tool_never_called_is_a_no_tool_call_fault(server):
    server.add(*[Reply("I refuse.")] * 2)
    r = client_for(server, schema_retries=1).call_tool(USER, [WRITE_FILE])
    assert r.fault.kind == FaultKind.NO_TOOL_CALL and "write_file" in r.fault.message
    assert "You must call a tool" in server.requests[1]["messages"][-1]["content"]


def test_streamed_tool_calls_are_assembled(server):
    server.add(Reply(tool_calls=[{"name": "write_file", "arguments": '{"path": "p", "content": "c"}'}], usage=(9, 4)))
    r = client_for(server).call_tool(USER, [WRITE_FILE], on_delta=lambda s: None)
    assert r.ok and r.tool_calls[0].arguments == {"path": "p", "content": "c"}
    assert r.usage.completion_tokens == 4


def test_unwrap_raises_for_a_fault(server):
    server.add(Status(400, "bad"))
    r = client_for(server).chat(USER)
    with pytest.raises(Exception, match="http_error"):
        r.unwrap()
    # The result is a serialisable record for the store.
    assert json.loads(r.model_dump_json())["fault"]["kind"] == "http_error"


def test_client_from_config_endpoint_uses_its_limits(server):
    from tileport.config import ModelEndpoint

    ep = ModelEndpoint(base_url=server.base_url, model="tileport-coder", timeout_s=0.3, max_retries=0, schema_retries=0)
    server.add(Reply("late", delay_s=2), Reply("not valid json"))
    with ModelClient.from_endpoint(ep) as c:
        assert c.chat(USER).fault.kind == FaultKind.TIMEOUT
        assert c.structured(USER, Verdict).fault.kind == FaultKind.SCHEMA_INVALID
    assert len(server.requests) == 2  # no retries of either kind
