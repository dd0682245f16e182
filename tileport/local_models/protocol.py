"""The contract of the model layer: the transport interface, its errors, and the typed results.

The client (`client.py`) never touches sockets. It talks to a `Transport`: `HttpTransport`
(`transport.py`) for a real OpenAI-compatible server, `FakeTranscriptTransport` (`scripted.py`)
to replay recorded conversations in tests. Everything a caller gets back is a `ModelResult`:
model and transport faults are values (`result.fault`), not exceptions, so an agent records them
with its stage run instead of crashing.
"""

from __future__ import annotations

import threading
from enum import Enum
from typing import Any, Callable, Iterator, Protocol

from pydantic import BaseModel, ConfigDict, Field

from tileport.records import TokenUsage

# --------------------------------------------------------------------------------------------
# Cancellation


class CancelToken:
    """Set from any thread to abort the request in flight (a stream stops within one read).

    Transports register an abort callback while a request runs; `cancel()` calls it, which
    shuts the socket so a read blocked on a silent server returns at once.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            try:
                cb()
            except Exception:  # an abort is best effort; the read loop checks `cancelled` too
                pass

    def on_cancel(self, cb: Callable[[], None]) -> Callable[[], None]:
        """Run `cb` on cancel (at once if already cancelled). Returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(cb)
                return lambda: self._discard(cb)
        cb()
        return lambda: None

    def _discard(self, cb: Callable[[], None]) -> None:
        with self._lock:
            if cb in self._callbacks:
                self._callbacks.remove(cb)

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True if cancelled meanwhile (used for retry backoff)."""
        return self._event.wait(seconds)


# --------------------------------------------------------------------------------------------
# Transport errors (raised by transports, turned into faults by the client)


class TransportError(Exception):
    """A request did not produce a usable HTTP answer. `retryable` says whether trying again may help."""

    retryable = True


class TransportTimeout(TransportError):
    """The request's deadline passed. Not retried: the server may still be serving it (a CPU server prefilling a
    long prompt), and a second copy would queue behind the first."""

    retryable = False


class TransportUnreachable(TransportError):
    """Nothing listens at the address (connection refused / unknown host)."""


class TransportBroken(TransportError):
    """The server closed the connection or sent garbage mid-request."""


class StreamTruncated(TransportError):
    """A stream ended before its final event (`[DONE]` or a finish_reason)."""


class RequestCancelled(TransportError):
    retryable = False


class HTTPStatusError(TransportError):
    """The server answered with a non-2xx status. 5xx and 429 are retryable, other 4xx are not."""

    def __init__(self, status: int, body: str):
        super().__init__(f"HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body
        self.retryable = status >= 500 or status == 429


class Transport(Protocol):
    """How the client reaches a server. Paths are relative to the API base (e.g. "chat/completions")."""

    def get_json(self, path: str, *, timeout: float) -> Any:
        """GET and decode JSON; raises TransportError / HTTPStatusError."""
        ...

    def post_json(self, path: str, body: dict, *, timeout: float, cancel: CancelToken | None = None) -> Any:
        """POST JSON and decode the JSON answer; raises TransportError / HTTPStatusError."""
        ...

    def post_stream(
        self, path: str, body: dict, *, timeout: float, cancel: CancelToken | None = None
    ) -> Iterator[dict]:
        """POST and yield each server-sent event's decoded JSON `data`, ending at `data: [DONE]`.

        Raises StreamTruncated if the connection ends before `[DONE]`, RequestCancelled on cancel,
        TransportTimeout if the server is silent for `timeout` seconds.
        """
        ...

    def close(self) -> None: ...


# --------------------------------------------------------------------------------------------
# Results


class FaultKind(str, Enum):
    """Why a model call produced no usable answer. Each names who must act."""

    TIMEOUT = "timeout"  # server silent past timeout_s (after retries)
    UNREACHABLE = "unreachable"  # nothing listening: start the server (`tileport model serve`)
    SERVER_ERROR = "server_error"  # 5xx / broken connection after retries
    HTTP_ERROR = "http_error"  # 4xx: the request or the server's flags are wrong; not retried
    TRUNCATED = "truncated"  # stream ended early (after retries)
    CANCELLED = "cancelled"  # the caller cancelled
    BAD_RESPONSE = "bad_response"  # not an OpenAI-shaped answer
    SCHEMA_INVALID = "schema_invalid"  # the model never produced a schema-valid reply (model fault)
    NO_TOOL_CALL = "no_tool_call"  # tools were required but the reply had none
    TOOL_CALL_AS_TEXT = "tool_call_as_text"  # the server's tool-call parser is misconfigured


class ModelFault(BaseModel):
    kind: FaultKind
    message: str  # one line a person can act on
    detail: str = ""  # the raw text / validation errors, capped

    @property
    def is_model_fault(self) -> bool:
        """The model (not the network or the server) produced something unusable."""
        return self.kind in (FaultKind.SCHEMA_INVALID, FaultKind.NO_TOOL_CALL)


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""


class CallRecord(BaseModel):
    """One HTTP request the client made, for the stage record and the dashboard."""

    attempt: int  # 1-based, over transport retries and schema retries together
    streamed: bool
    seconds: float
    usage: TokenUsage = Field(default_factory=TokenUsage)
    finish_reason: str | None = None
    error: str | None = None


class ModelResult(BaseModel):
    """What one logical model call produced, after transport and schema retries.

    `ok` means usable: `text`, and `value` (a validated pydantic instance for structured calls)
    or `tool_calls` (for tool calls). Otherwise `fault` says what went wrong. `usage` is the sum
    over every request made, failed ones included, since they cost tokens too.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    text: str = ""
    value: Any = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    model_id: str | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    calls: list[CallRecord] = Field(default_factory=list)
    schema_retries_used: int = 0
    fault: ModelFault | None = None
    salvaged_from_text: bool = False  # tool calls recovered from plain text (parser misconfigured)
    notes: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.fault is None

    def unwrap(self) -> "ModelResult":
        if self.fault is not None:
            raise ModelFaultError(self.fault)
        return self


class ModelFaultError(Exception):
    """For callers that prefer an exception: `ModelResult.unwrap()` raises it."""

    def __init__(self, fault: ModelFault):
        super().__init__(f"{fault.kind.value}: {fault.message}")
        self.fault = fault


class EndpointInfo(BaseModel):
    """What a probe of an OpenAI-compatible server found."""

    base_url: str
    healthy: bool = False
    reachable: bool = False
    models: list[str] = Field(default_factory=list)
    max_model_len: int | None = None
    error: str | None = None
