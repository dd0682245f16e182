"""`FakeOpenAIServer`: a scripted OpenAI-compatible HTTP server on a real loopback socket.

A test double for fault tests (timeouts, 5xx, truncated streams, a server that dies mid-request)
that need real sockets rather than `FakeTranscriptTransport`. Each POST to
`/v1/chat/completions` consumes the next scripted step; `requests` keeps every request body.
Standard library only; binds 127.0.0.1 on a free port; every wait is bounded.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_STALL_S = 30.0


@dataclass
class Reply:
    """A normal reply; streamed in `chunk_chars` pieces when the request asked for a stream."""

    content: str = ""
    tool_calls: list[dict] = field(default_factory=list)  # [{"name": ..., "arguments": "<json str>"}]
    usage: tuple[int, int] | None = (10, 5)
    finish_reason: str = "stop"
    delay_s: float = 0.0  # before the first byte
    chunk_chars: int = 4
    chunk_delay_s: float = 0.0


@dataclass
class Status:
    code: int
    body: str = ""


@dataclass
class Truncate:
    """Stream `content` (or the first `send_chunks` pieces of it), then close without [DONE]."""

    content: str
    send_chunks: int = 2
    chunk_chars: int = 4


@dataclass
class Stall:
    """Send `first` as one delta, then say nothing until the client goes away (or MAX_STALL_S)."""

    first: str = ""


@dataclass
class Die:
    """Read the request, then drop the connection with no answer; `and_stop` also stops listening."""

    and_stop: bool = False


Step = Reply | Status | Truncate | Stall | Die


class FakeOpenAIServer:
    def __init__(
        self, steps: list[Step] | None = None, *, model: str = "fake-model", max_model_len: int = 4096, port: int = 0
    ):
        self.steps: list[Step] = list(steps or [])
        self.model = model
        self.max_model_len = max_model_len
        self.requests: list[dict] = []
        self.healthy = True
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._stopped = False

    def __enter__(self) -> "FakeOpenAIServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add(self, *steps: Step) -> None:
        with self._lock:
            self.steps.extend(steps)

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self, body: dict) -> Step | None:
        with self._lock:
            self.requests.append(body)
            return self.steps.pop(0) if self.steps else None

    # ----------------------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _json(self, code: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/health":
                    if server.healthy:
                        self.send_response(200)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                    else:
                        self._json(503, {"error": "starting"})
                elif self.path == "/v1/models":
                    self._json(200, {"object": "list", "data": [
                        {"id": server.model, "object": "model", "max_model_len": server.max_model_len}]})
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                if self.path != "/v1/chat/completions":
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                step = server._next(body)
                try:
                    self._act(step, bool(body.get("stream")))
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass  # the client went away (cancel / timeout): nothing to do

            def _act(self, step: Step | None, stream: bool) -> None:
                if step is None:
                    self._json(500, {"error": {"message": "fake server: script exhausted"}})
                elif isinstance(step, Status):
                    self._json(step.code, {"error": {"message": step.body or f"status {step.code}"}})
                elif isinstance(step, Die):
                    if step.and_stop:  # stop listening first, so a retry finds nobody there
                        server.stop()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif isinstance(step, Reply):
                    if step.delay_s and server._stopping.wait(step.delay_s):
                        return
                    if stream:
                        self._stream(step)
                    else:
                        self._json(200, server._completion(step))
                elif isinstance(step, Truncate):
                    self._sse_start()
                    pieces = _chunks(step.content, step.chunk_chars)[: step.send_chunks]
                    for p in pieces:
                        self._event(server._chunk({"content": p}))
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif isinstance(step, Stall):
                    self._sse_start()
                    if step.first:
                        self._event(server._chunk({"content": step.first}))
                    deadline = time.monotonic() + MAX_STALL_S
                    while time.monotonic() < deadline and not server._stopping.wait(0.05):
                        pass

            def _sse_start(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()  # HTTP/1.0: the body ends when the connection closes

            def _event(self, obj: Any) -> None:
                self.wfile.write(f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n".encode())
                self.wfile.flush()

            def _stream(self, step: Reply) -> None:
                self._sse_start()
                self._event(server._chunk({"role": "assistant", "content": ""}))
                for p in _chunks(step.content, step.chunk_chars):
                    if step.chunk_delay_s:
                        time.sleep(step.chunk_delay_s)
                    self._event(server._chunk({"content": p}))
                for i, tc in enumerate(step.tool_calls):
                    self._event(server._chunk({"tool_calls": [{
                        "index": i, "id": f"call-{i}", "type": "function",
                        "function": {"name": tc["name"], "arguments": tc.get("arguments", "{}")}}]}))
                self._event(server._chunk({}, finish=step.finish_reason))
                if step.usage:
                    self._event({"id": "fake", "object": "chat.completion.chunk", "model": server.model,
                                 "choices": [], "usage": _usage(step.usage)})
                self._event("[DONE]")

        return Handler

    def _chunk(self, delta: dict, finish: str | None = None) -> dict:
        return {"id": "fake", "object": "chat.completion.chunk", "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def _completion(self, step: Reply) -> dict:
        msg: dict[str, Any] = {"role": "assistant", "content": step.content or None}
        if step.tool_calls:
            msg["tool_calls"] = [
                {"id": f"call-{i}", "type": "function",
                 "function": {"name": tc["name"], "arguments": tc.get("arguments", "{}")}}
                for i, tc in enumerate(step.tool_calls)
            ]
        out: dict[str, Any] = {"id": "fake", "object": "chat.completion", "model": self.model,
                               "choices": [{"index": 0, "message": msg, "finish_reason": step.finish_reason}]}
        if step.usage:
            out["usage"] = _usage(step.usage)
        return out


def _usage(u: tuple[int, int]) -> dict:
    return {"prompt_tokens": u[0], "completion_tokens": u[1], "total_tokens": u[0] + u[1]}


def _chunks(text: str, n: int) -> list[str]:
    return [text[i : i + n] for i in range(0, len(text), n)] or []
