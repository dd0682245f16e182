"""A scripted model: `FakeTranscriptTransport` replays a recorded conversation (a JSON transcript).

It plugs into `ModelClient` like `HttpTransport`, so agent machinery runs deterministically with
no server: each chat request consumes the next exchange, is checked against that exchange's
`expect` (a mismatch raises `TranscriptMismatch`, an AssertionError), and gets the recorded reply,
streamed when the request asked for a stream. `ScriptedModel` is a `ModelClient` over it.

Transcript format (see transcripts/*.json):

    {"name": ..., "description": ..., "model": "tileport-coder",
     "exchanges": [
       {"expect": {"tool_choice": "required", "tools": ["write_kernel", ...],
                   "response_format": "KernelWriterVerdict", "last_role": "tool",
                   "last_message_contains": "error[E0308]"},
        "reply": {"content": "...", "tool_calls": [{"name": ..., "arguments": {...}}],
                  "finish_reason": "tool_calls", "usage": {"prompt_tokens": 900, "completion_tokens": 150}},
        "tool_results": {"write_kernel": "..."}},      # what the environment answered (for test drivers)
       {"error": {"status": 500, "body": "..."}},      # or a transport fault:
       {"fault": "timeout" | "unreachable" | "broken" | "truncated"}
     ]}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from tileport import limits
from tileport.errors import UserError
from tileport.local_models.client import ModelClient
from tileport.local_models.protocol import (
    CancelToken,
    HTTPStatusError,
    RequestCancelled,
    StreamTruncated,
    TransportBroken,
    TransportTimeout,
    TransportUnreachable,
)

TRANSCRIPTS_DIR = Path(__file__).parent / "transcripts"
_FAULTS = {
    "timeout": TransportTimeout,
    "unreachable": TransportUnreachable,
    "broken": TransportBroken,
    "truncated": StreamTruncated,
}


class TranscriptMismatch(AssertionError):
    """The code under test sent a request the transcript did not expect."""


def load_transcript(name_or_path: str | Path) -> dict:
    """A transcript by file path, or by name from the packaged transcripts/ folder."""
    p = Path(name_or_path)
    if not p.suffix:
        p = TRANSCRIPTS_DIR / f"{p}.json"
    data = limits.read_json(p, "a scripted-model transcript (.json)")
    if not isinstance(data, dict):
        raise UserError(f"{p}: a transcript is a JSON object; this one is a {type(data).__name__}")
    return data


def _tool_choice_name(choice: Any) -> Any:
    if isinstance(choice, dict):
        return (choice.get("function") or {}).get("name")
    return choice


class FakeTranscriptTransport:
    """A `Transport` that answers from a transcript instead of a server."""

    def __init__(self, transcript: dict, *, base_url: str = "scripted://transcript"):
        self.transcript = transcript
        self.name = transcript.get("name", "transcript")
        self.model = transcript.get("model", "tileport-coder")
        self.exchanges: list[dict] = list(transcript["exchanges"])
        self.position = 0
        self.requests: list[dict] = []
        self.base_url = base_url

    @property
    def finished(self) -> bool:
        return self.position >= len(self.exchanges)

    def assert_finished(self) -> None:
        if not self.finished:
            raise TranscriptMismatch(
                f"transcript {self.name!r}: only {self.position} of {len(self.exchanges)} exchanges were used"
            )

    def current(self) -> dict:
        """The exchange the next request will consume (for drivers that read `tool_results`)."""
        return self.exchanges[self.position]

    # ---- Transport interface -------------------------------------------------------------

    def get_json(self, path: str, *, timeout: float) -> Any:
        if path == "/health":
            return None
        if path == "models":
            return {"object": "list", "data": [{"id": self.model, "max_model_len": self.transcript.get("max_model_len", 32768)}]}
        raise HTTPStatusError(404, f"scripted transport has no {path}")

    def post_json(self, path: str, body: dict, *, timeout: float, cancel: CancelToken | None = None) -> Any:
        ex = self._take(path, body, cancel)
        return self._completion(ex["reply"])

    def post_stream(self, path: str, body: dict, *, timeout: float, cancel: CancelToken | None = None) -> Iterator[dict]:
        ex = self._take(path, body, cancel)
        reply = ex["reply"]
        model = self.model
        content = reply.get("content") or ""
        for i in range(0, len(content), 16):
            if cancel is not None and cancel.cancelled:
                raise RequestCancelled("cancelled by the caller")
            yield {"model": model, "choices": [{"index": 0, "delta": {"content": content[i : i + 16]}, "finish_reason": None}]}
        for i, tc in enumerate(reply.get("tool_calls") or []):
            fn = {"name": tc["name"], "arguments": _args_text(tc.get("arguments"))}
            yield {"model": model, "choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": i, "id": tc.get("id") or f"{self.name}-{self.position}-{i}", "type": "function", "function": fn}]},
                "finish_reason": None}]}
        yield {"model": model, "choices": [{"index": 0, "delta": {}, "finish_reason": _finish(reply)}]}
        if reply.get("usage"):
            yield {"model": model, "choices": [], "usage": reply["usage"]}

    def close(self) -> None:
        pass

    # ---- internals -----------------------------------------------------------------------

    def _take(self, path: str, body: dict, cancel: CancelToken | None) -> dict:
        if cancel is not None and cancel.cancelled:
            raise RequestCancelled("cancelled by the caller")
        if path != "chat/completions":
            raise TranscriptMismatch(f"transcript {self.name!r}: unexpected POST {path}")
        self.requests.append(body)
        if self.finished:
            raise TranscriptMismatch(
                f"transcript {self.name!r} is exhausted ({len(self.exchanges)} exchanges); "
                f"one more request came: last message {body['messages'][-1]!r:.300}"
            )
        ex = self.exchanges[self.position]
        self.position += 1
        self._check(ex.get("expect") or {}, body, self.position)
        if "error" in ex:
            raise HTTPStatusError(int(ex["error"].get("status", 500)), json.dumps({"error": {"message": ex["error"].get("body", "")}}))
        if "fault" in ex:
            raise _FAULTS[ex["fault"]](f"scripted {ex['fault']}")
        return ex

    def _check(self, expect: dict, body: dict, n: int) -> None:
        where = f"transcript {self.name!r}, exchange {n}"
        msgs = body.get("messages") or []
        last = msgs[-1] if msgs else {}
        if "tool_choice" in expect and _tool_choice_name(body.get("tool_choice")) != expect["tool_choice"]:
            raise TranscriptMismatch(f"{where}: tool_choice {body.get('tool_choice')!r}, expected {expect['tool_choice']!r}")
        if "tools" in expect:
            sent = [t["function"]["name"] for t in body.get("tools") or []]
            if sent != expect["tools"]:
                raise TranscriptMismatch(f"{where}: tools {sent}, expected {expect['tools']}")
        if "response_format" in expect:
            fmt = body.get("response_format") or {}
            name = (fmt.get("json_schema") or {}).get("name")
            if fmt.get("type") != "json_schema" or name != expect["response_format"]:
                raise TranscriptMismatch(f"{where}: response_format {fmt!r:.200}, expected json_schema {expect['response_format']!r}")
        if "last_role" in expect and last.get("role") != expect["last_role"]:
            raise TranscriptMismatch(f"{where}: last message role {last.get('role')!r}, expected {expect['last_role']!r}")
        if "last_message_contains" in expect:
            text = last.get("content") or ""
            if expect["last_message_contains"] not in text:
                raise TranscriptMismatch(
                    f"{where}: last message does not contain {expect['last_message_contains']!r}: {text!r:.300}"
                )

    def _completion(self, reply: dict) -> dict:
        msg: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
        if reply.get("tool_calls"):
            msg["tool_calls"] = [
                {"id": tc.get("id") or f"{self.name}-{self.position}-{i}", "type": "function",
                 "function": {"name": tc["name"], "arguments": _args_text(tc.get("arguments"))}}
                for i, tc in enumerate(reply["tool_calls"])
            ]
        out: dict[str, Any] = {"object": "chat.completion", "model": self.model,
                               "choices": [{"index": 0, "message": msg, "finish_reason": _finish(reply)}]}
        if reply.get("usage"):
            out["usage"] = reply["usage"]
        return out


def _args_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args if args is not None else {})


def _finish(reply: dict) -> str:
    return reply.get("finish_reason") or ("tool_calls" if reply.get("tool_calls") else "stop")


class ScriptedModel(ModelClient):
    """A `ModelClient` whose answers come from a transcript (a named fake: no server, no model)."""

    transport: FakeTranscriptTransport

    def __init__(self, transcript: dict | str | Path, **kw: Any):
        data = transcript if isinstance(transcript, dict) else load_transcript(transcript)
        fake = FakeTranscriptTransport(data)
        kw.setdefault("backoff_s", 0.0)
        super().__init__(fake, fake.model, base_url=fake.base_url, **kw)

    def assert_finished(self) -> None:
        self.transport.assert_finished()
