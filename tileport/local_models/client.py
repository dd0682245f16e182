"""`ModelClient`: chat, structured replies and tool calls against an OpenAI-compatible server.

Three calls cover what the agents need:

- `chat(messages)`                      free text
- `structured(messages, Schema)`        a validated pydantic instance (`response_format` json_schema)
- `call_tool(messages, tools, ...)`     validated tool calls (`tool_choice` "required", "auto" or a name)

Each takes `on_delta` (stream text deltas to a dashboard as they arrive; `stream()` gives the same
as an iterator) and `cancel` (a `CancelToken` that aborts the request in flight). Each returns a
`ModelResult`; nothing a server or a model does escapes as an exception.

Failure policy:
- transport errors, 5xx/429 and truncated streams are retried `max_retries` times with exponential backoff;
  4xx are not (the request or the server's flags are wrong), nor a request past its deadline (the server may
  still be serving it: a resent copy would queue behind it);
- a reply that fails validation is sent back with the validation error, at most `schema_retries`
  times, then becomes a `schema_invalid` fault;
- a tool call that came back as plain text is a `tool_call_as_text` fault (the server's parser
  is misconfigured), or is salvaged with `salvage_text_tool_calls=True` and marked as such.
"""

from __future__ import annotations

import json
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from pydantic import BaseModel

from tileport.config import ModelEndpoint
from tileport.local_models.protocol import (
    CallRecord,
    CancelToken,
    EndpointInfo,
    FaultKind,
    HTTPStatusError,
    ModelFault,
    ModelResult,
    RequestCancelled,
    StreamTruncated,
    ToolCall,
    Transport,
    TransportError,
    TransportTimeout,
    TransportUnreachable,
)
from tileport.local_models.structured import (
    TOOL_CALL_AS_TEXT_MESSAGE,
    ToolSpec,
    decode_arguments,
    find_text_tool_calls,
    parse_structured,
    response_format_for,
    schema_feedback,
    schema_name,
    tool_feedback,
)
from tileport.records import TokenUsage

DeltaCallback = Callable[[str], None]
RestartCallback = Callable[[str], None]
DETAIL_CAP = 4000


class _BadResponse(Exception):
    pass


@dataclass
class _Turn:
    """One assistant reply as the server sent it."""

    text: str = ""
    tool_calls: list[dict] = field(default_factory=list)  # {"id", "name", "arguments" (raw str)}
    finish_reason: str | None = None
    usage: TokenUsage | None = None
    model_id: str | None = None


@dataclass
class _Run:
    """Requests made for one logical call: their records and token usage."""

    calls: list[CallRecord] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)
    notes: list[str] = field(default_factory=list)

    def result(self, turn: _Turn | None = None, **kw: Any) -> ModelResult:
        if turn is not None:
            kw.setdefault("text", turn.text)
            kw.setdefault("finish_reason", turn.finish_reason)
            kw.setdefault("model_id", turn.model_id)
        return ModelResult(usage=self.usage, calls=self.calls, notes=self.notes, **kw)


def _usage(raw: Any) -> TokenUsage | None:
    if not isinstance(raw, dict):
        return None
    return TokenUsage(
        prompt_tokens=int(raw.get("prompt_tokens") or 0), completion_tokens=int(raw.get("completion_tokens") or 0)
    )


def _error_message(body: str) -> str:
    """vLLM/OpenAI error bodies look like {"error": {"message": ...}} or {"message": ...}."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:300]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
        if isinstance(err, str):
            return err[:300]
    return body.strip()[:300]


class ModelClient:
    def __init__(
        self,
        transport: Transport,
        model: str,
        *,
        timeout_s: float = 1800.0,
        max_retries: int = 2,
        schema_retries: int = 2,
        backoff_s: float = 0.5,
        backoff_max_s: float = 8.0,
        base_url: str = "",
    ):
        self.transport = transport
        self.model = model
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.schema_retries = schema_retries
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.base_url = base_url or getattr(transport, "base_url", "")

    @classmethod
    def from_endpoint(cls, endpoint: ModelEndpoint, **kw: Any) -> "ModelClient":
        from tileport.local_models.transport import HttpTransport

        return cls(
            HttpTransport(endpoint.base_url, endpoint.api_key),
            endpoint.model,
            timeout_s=endpoint.timeout_s,
            max_retries=endpoint.max_retries,
            schema_retries=endpoint.schema_retries,
            base_url=endpoint.base_url,
            **kw,
        )

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> "ModelClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------
    # Public calls

    def chat(
        self,
        messages: Sequence[dict],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        on_delta: DeltaCallback | None = None,
        on_restart: RestartCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> ModelResult:
        run = _Run()
        body = self._body(messages, max_tokens=max_tokens, temperature=temperature)
        turn = self._request(body, run, on_delta, on_restart, cancel)
        if isinstance(turn, ModelFault):
            return run.result(fault=turn)
        return run.result(turn)

    def structured(
        self,
        messages: Sequence[dict],
        schema: type[BaseModel],
        *,
        name: str | None = None,
        tools: Sequence[ToolSpec] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        on_delta: DeltaCallback | None = None,
        on_restart: RestartCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> ModelResult:
        """A reply that validates against `schema`; `result.value` is the instance.

        `tools`: the tools of the conversation so far, sent with tool_choice "none" (no call is made): the request
        then renders like the tool-call requests before it, so a prefix-caching server reuses their prefix."""
        run = _Run()
        sname = schema_name(schema, name)
        fmt = response_format_for(schema, name)
        msgs = list(messages)
        last_err, turn = "", None
        for k in range(self.schema_retries + 1):
            body = self._body(msgs, max_tokens=max_tokens, temperature=temperature, response_format=fmt,
                              tools=[t.to_openai() for t in tools] if tools else None,
                              tool_choice="none" if tools else None)
            got = self._request(body, run, on_delta, on_restart, cancel)
            if isinstance(got, ModelFault):
                return run.result(turn, fault=got, schema_retries_used=k)
            turn = got
            value, err = parse_structured(schema, turn.text)
            if value is not None:
                return run.result(turn, value=value, schema_retries_used=k)
            last_err = err or ""
            msgs += [
                {"role": "assistant", "content": turn.text},
                {"role": "user", "content": schema_feedback(last_err, sname, turn.finish_reason == "length")},
            ]
        fault = ModelFault(
            kind=FaultKind.SCHEMA_INVALID,
            message=(
                f"the model's reply did not match schema '{sname}' in {self.schema_retries + 1} "
                f"attempt(s): {last_err}"
            ),
            detail=(turn.text if turn else "")[:DETAIL_CAP],
        )
        return run.result(turn, fault=fault, schema_retries_used=self.schema_retries)

    def call_tool(
        self,
        messages: Sequence[dict],
        tools: Sequence[ToolSpec],
        *,
        tool_choice: str = "required",
        salvage_text_tool_calls: bool = False,
        max_tokens: int | None = None,
        temperature: float | None = None,
        on_delta: DeltaCallback | None = None,
        on_restart: RestartCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> ModelResult:
        """Validated tool calls. `tool_choice`: "required", "auto", or the name of one tool.

        With "auto" a reply without a tool call is a plain text result (`tool_calls` empty).
        """
        by_name = {t.name: t for t in tools}
        if tool_choice in ("required", "auto"):
            choice: Any = tool_choice
        elif tool_choice in by_name:
            choice = {"type": "function", "function": {"name": tool_choice}}
        else:
            raise ValueError(f"tool_choice {tool_choice!r} is not 'required', 'auto' or one of {sorted(by_name)}")
        run = _Run()
        msgs = list(messages)
        last_err, last_kind, turn = "", FaultKind.SCHEMA_INVALID, None
        for k in range(self.schema_retries + 1):
            body = self._body(
                msgs, max_tokens=max_tokens, temperature=temperature,
                tools=[t.to_openai() for t in tools], tool_choice=choice,
            )
            got = self._request(body, run, on_delta, on_restart, cancel)
            if isinstance(got, ModelFault):
                return run.result(turn, fault=got, schema_retries_used=k)
            turn = got
            salvaged = False
            raw_calls = turn.tool_calls
            if not raw_calls:
                text_calls = find_text_tool_calls(turn.text, list(by_name))
                if text_calls and not salvage_text_tool_calls:
                    fault = ModelFault(
                        kind=FaultKind.TOOL_CALL_AS_TEXT, message=TOOL_CALL_AS_TEXT_MESSAGE, detail=turn.text[:DETAIL_CAP]
                    )
                    return run.result(turn, fault=fault, schema_retries_used=k)
                if text_calls:
                    run.notes.append("salvaged tool call(s) from plain text: " + TOOL_CALL_AS_TEXT_MESSAGE)
                    raw_calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in text_calls]
                    salvaged = True
                elif tool_choice == "auto":
                    return run.result(turn, schema_retries_used=k)
                else:
                    last_err, last_kind = f"no tool was called; call one of: {', '.join(by_name)}", FaultKind.NO_TOOL_CALL
                    msgs += [
                        {"role": "assistant", "content": turn.text},
                        {"role": "user", "content": f"You must call a tool. {last_err}."},
                    ]
                    continue
            calls, errors = self._check_calls(raw_calls, by_name)
            if not errors:
                return run.result(turn, tool_calls=calls, schema_retries_used=k, salvaged_from_text=salvaged)
            last_err, last_kind = "; ".join(e for e in errors if e), FaultKind.SCHEMA_INVALID
            msgs += self._tool_feedback_messages(raw_calls, errors, turn.text)
        fault = ModelFault(
            kind=last_kind,
            message=f"no usable tool call in {self.schema_retries + 1} attempt(s): {last_err}",
            detail=(turn.text if turn else "")[:DETAIL_CAP] or json.dumps(turn.tool_calls if turn else [])[:DETAIL_CAP],
        )
        return run.result(turn, fault=fault, schema_retries_used=self.schema_retries)

    def stream(self, messages: Sequence[dict], **kw: Any) -> "ChatStream":
        """`for delta in client.stream(msgs): ...`; then `.result` holds the ModelResult.

        Keyword arguments are those of `chat`; pass `schema=` for `structured`, `tools=` for `call_tool`.
        """
        schema = kw.pop("schema", None)
        tools = kw.pop("tools", None)
        if schema is not None:
            return ChatStream(lambda cb: self.structured(messages, schema, on_delta=cb, **kw))
        if tools is not None:
            return ChatStream(lambda cb: self.call_tool(messages, tools, on_delta=cb, **kw))
        return ChatStream(lambda cb: self.chat(messages, on_delta=cb, **kw))

    def probe(self, timeout_s: float = 5.0) -> EndpointInfo:
        """Health, served models and max_model_len; never raises."""
        info = EndpointInfo(base_url=self.base_url)
        try:
            self.transport.get_json("/health", timeout=timeout_s)
            info.reachable = info.healthy = True
        except HTTPStatusError as e:
            info.reachable = True
            info.error = f"/health answered HTTP {e.status}: the server is up but not ready"
            return info
        except TransportError as e:
            info.error = str(e)
            return info
        try:
            data = self.transport.get_json("models", timeout=timeout_s) or {}
            for m in data.get("data", []):
                info.models.append(str(m.get("id")))
                n = m.get("max_model_len")
                if n is not None and info.max_model_len is None:
                    if type(n) is not int or not 0 < n < 1 << 40:
                        raise ValueError(f"max_model_len {str(n)[:40]} is not a positive integer")
                    info.max_model_len = n
        except (TransportError, AttributeError, TypeError, ValueError) as e:
            info.error = f"/v1/models failed: {e}"
        return info

    # ----------------------------------------------------------------------------------------
    # Internals

    def _body(self, messages: Sequence[dict], **kw: Any) -> dict:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        body.update({k: v for k, v in kw.items() if v is not None})
        return body

    def _backoff(self, retry: int) -> float:
        return min(self.backoff_max_s, self.backoff_s * 2 ** (retry - 1)) * (0.5 + random.random() / 2)

    def _request(
        self,
        body: dict,
        run: _Run,
        on_delta: DeltaCallback | None,
        on_restart: RestartCallback | None,
        cancel: CancelToken | None,
    ) -> _Turn | ModelFault:
        """One reply, with transport retries. Records every request in `run`."""
        if on_delta is not None:
            body = dict(body, stream=True, stream_options={"include_usage": True})
        for i in range(self.max_retries + 1):
            if i:
                delay = self._backoff(i)
                if cancel is not None:
                    if cancel.wait(delay):
                        return self._fault(RequestCancelled("cancelled by the caller"), i)
                else:
                    time.sleep(delay)
            emitted: list[bool] = [False]
            t0 = time.monotonic()
            try:
                if on_delta is not None:
                    turn = self._stream_turn(body, on_delta, emitted, cancel)
                else:
                    turn = self._parse(self.transport.post_json("chat/completions", body, timeout=self.timeout_s, cancel=cancel))
            except _BadResponse as e:
                run.calls.append(self._record(run, on_delta, t0, error=str(e)))
                return ModelFault(kind=FaultKind.BAD_RESPONSE, message=f"the server's answer is not an OpenAI chat completion: {e}")
            except TransportError as e:
                run.calls.append(self._record(run, on_delta, t0, error=f"{type(e).__name__}: {e}"))
                if not e.retryable or i == self.max_retries:
                    return self._fault(e, i + 1)
                if emitted[0] and on_restart is not None:
                    on_restart(f"{type(e).__name__}: {e}; retrying")
                continue
            if turn.usage is None:
                run.notes.append("the server reported no token usage for a request")
            else:
                run.usage = run.usage + turn.usage
            run.calls.append(
                self._record(run, on_delta, t0, usage=turn.usage or TokenUsage(), finish_reason=turn.finish_reason)
            )
            return turn
        raise AssertionError("unreachable")

    @staticmethod
    def _record(run: _Run, on_delta: DeltaCallback | None, t0: float, **kw: Any) -> CallRecord:
        return CallRecord(
            attempt=len(run.calls) + 1, streamed=on_delta is not None, seconds=round(time.monotonic() - t0, 4), **kw
        )

    def _fault(self, e: TransportError, attempts: int) -> ModelFault:
        where = self.base_url or "the model server"
        tries = f" (after {attempts} attempt{'s' if attempts != 1 else ''})"
        if isinstance(e, RequestCancelled):
            return ModelFault(kind=FaultKind.CANCELLED, message="cancelled by the caller")
        if isinstance(e, TransportTimeout):
            return ModelFault(
                kind=FaultKind.TIMEOUT,
                message=f"{where} sent nothing for {self.timeout_s:g} s{tries}; raise [model].timeout_s or check the server",
                detail=str(e),
            )
        if isinstance(e, TransportUnreachable):
            return ModelFault(
                kind=FaultKind.UNREACHABLE,
                message=f"no model server answers at {where}{tries}; start one with `tileport model serve` "
                "or fix [model].base_url",
                detail=str(e),
            )
        if isinstance(e, HTTPStatusError):
            msg = _error_message(e.body)
            if e.retryable:
                return ModelFault(kind=FaultKind.SERVER_ERROR, message=f"HTTP {e.status} from {where}{tries}: {msg}", detail=e.body[:DETAIL_CAP])
            return ModelFault(kind=FaultKind.HTTP_ERROR, message=f"HTTP {e.status} from {where}: {msg}", detail=e.body[:DETAIL_CAP])
        if isinstance(e, StreamTruncated):
            return ModelFault(kind=FaultKind.TRUNCATED, message=f"the reply stream from {where} ended early{tries}", detail=str(e))
        return ModelFault(kind=FaultKind.SERVER_ERROR, message=f"the connection to {where} broke{tries}: {e}", detail=str(e))

    @staticmethod
    def _parse(data: Any) -> _Turn:
        try:
            choice = data["choices"][0]
            msg = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise _BadResponse(f"no choices[0].message in {str(data)[:200]!r}") from None
        calls = []
        for n, tc in enumerate(msg.get("tool_calls") or []):
            fn = tc.get("function") or {}
            calls.append({"id": tc.get("id") or f"call-{n}", "name": fn.get("name") or "", "arguments": fn.get("arguments")})
        return _Turn(
            text=msg.get("content") or "",
            tool_calls=calls,
            finish_reason=choice.get("finish_reason"),
            usage=_usage(data.get("usage")),
            model_id=data.get("model"),
        )

    def _stream_turn(self, body: dict, on_delta: DeltaCallback, emitted: list[bool], cancel: CancelToken | None) -> _Turn:
        turn = _Turn()
        parts: list[str] = []
        slots: dict[int, dict] = {}
        for ev in self.transport.post_stream("chat/completions", body, timeout=self.timeout_s, cancel=cancel):
            if not isinstance(ev, dict):
                raise _BadResponse(f"stream event is not an object: {str(ev)[:200]!r}")
            if "error" in ev:  # vLLM reports an engine error inside the stream
                err = ev["error"] if isinstance(ev["error"], dict) else {"message": str(ev["error"])}
                code = err.get("code")
                raise HTTPStatusError(code if isinstance(code, int) and code >= 400 else 500, json.dumps(ev))
            turn.model_id = ev.get("model") or turn.model_id
            if ev.get("usage"):
                turn.usage = _usage(ev["usage"])
            for ch in ev.get("choices") or []:
                delta = ch.get("delta") or {}
                if delta.get("content"):
                    parts.append(delta["content"])
                    emitted[0] = True
                    on_delta(delta["content"])
                for tc in delta.get("tool_calls") or []:
                    slot = slots.setdefault(int(tc.get("index", 0)), {"id": None, "name": "", "arguments": ""})
                    slot["id"] = slot["id"] or tc.get("id")
                    fn = tc.get("function") or {}
                    slot["name"] += fn.get("name") or ""
                    slot["arguments"] += fn.get("arguments") or ""
                if ch.get("finish_reason"):
                    turn.finish_reason = ch["finish_reason"]
        turn.text = "".join(parts)
        turn.tool_calls = [
            {"id": s["id"] or f"call-{i}", "name": s["name"], "arguments": s["arguments"]} for i, s in sorted(slots.items())
        ]
        return turn

    @staticmethod
    def _check_calls(raw_calls: list[dict], by_name: dict[str, ToolSpec]) -> tuple[list[ToolCall], list[str]]:
        """Validated calls, and one error string per call ("" when that call is fine)."""
        calls, errors = [], []
        for rc in raw_calls:
            spec = by_name.get(rc["name"])
            if spec is None:
                errors.append(f"{rc['name']!r} is not a tool here; use one of: {', '.join(by_name)}")
                continue
            args, err = decode_arguments(rc.get("arguments"))
            if args is not None:
                args, err = spec.validate_arguments(args)
            if err:
                errors.append(f"{rc['name']}: {err}")
                continue
            raw = rc.get("arguments")
            calls.append(ToolCall(id=rc["id"], name=rc["name"], arguments=args or {}, raw_arguments=raw if isinstance(raw, str) else json.dumps(raw)))
            errors.append("")
        return calls, [] if not any(errors) else errors

    @staticmethod
    def _tool_feedback_messages(raw_calls: list[dict], errors: list[str], text: str) -> list[dict]:
        """The rejected assistant turn plus one tool message per call, saying why it was not run."""
        assistant = {
            "role": "assistant",
            "content": text or None,
            "tool_calls": [
                {
                    "id": rc["id"],
                    "type": "function",
                    "function": {
                        "name": rc["name"],
                        "arguments": rc["arguments"] if isinstance(rc.get("arguments"), str) else json.dumps(rc.get("arguments") or {}),
                    },
                }
                for rc in raw_calls
            ],
        }
        tool_msgs = [
            {
                "role": "tool",
                "tool_call_id": rc["id"],
                "content": tool_feedback(err) if err else "Not run: another call in the same turn was rejected.",
            }
            for rc, err in zip(raw_calls, errors)
        ]
        return [assistant, *tool_msgs]


_END = object()


class ChatStream:
    """Iterate text deltas while the call runs in a worker thread; `result` is set when iteration ends.

    Stopping early does not stop the request: pass `cancel=` and cancel it.
    """

    def __init__(self, run: Callable[[DeltaCallback], ModelResult]):
        self._run = run
        self._q: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self.result: ModelResult | None = None

    def _work(self) -> None:
        try:
            self.result = self._run(self._q.put)
        except BaseException as e:  # a bug must surface in the consumer, not die in the thread
            self._error = e
        finally:
            self._q.put(_END)

    def __iter__(self) -> Iterator[str]:
        threading.Thread(target=self._work, name="tileport-model-stream", daemon=True).start()
        while True:
            item = self._q.get()
            if item is _END:
                break
            yield item
        if self._error is not None:
            raise self._error
