"""`HttpTransport`: the real `Transport`, httpx over HTTP/1.1 to an OpenAI-compatible server.

One connection per request (no keep-alive pool): the server is local, a connect costs well
under a millisecond, and owning the socket of each request lets `CancelToken.cancel()` shut it,
which wakes a read blocked on a silent server at once.

`timeout` is a total deadline per request (connect, headers, body, every stream event), not httpx's
per-read timeout: a server that drips one byte every 2 s is cut off at the deadline by shutting the
request's socket. Replies are read up to `TILEPORT_MAX_REPLY_BYTES` and decoded with bounded depth.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any, Iterator

import httpx

from tileport import limits
from tileport.errors import UserError
from tileport.local_models.protocol import (
    CancelToken,
    HTTPStatusError,
    RequestCancelled,
    StreamTruncated,
    TransportBroken,
    TransportError,
    TransportTimeout,
    TransportUnreachable,
)

CONNECT_TIMEOUT_S = 10.0


def server_root(base_url: str) -> str:
    """`http://h:p/v1` -> `http://h:p`: /health lives at the root, the API under /v1."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def _check(cancel: CancelToken | None) -> None:
    if cancel is not None and cancel.cancelled:
        raise RequestCancelled("cancelled by the caller")


class _SocketGrip:
    """Learns the request's socket from httpcore's trace hook so a cancel can shut it."""

    def __init__(self, cancel: CancelToken | None):
        self.cancel = cancel
        self.sock: socket.socket | None = None
        self.aborted = False
        self.deadline_hit = False

    def expire(self) -> None:
        """The request's total deadline passed: shut its socket (wakes any blocked read)."""
        self.deadline_hit = True
        self.abort()

    def trace(self, event: str, info: dict) -> None:
        if event == "connection.connect_tcp.complete":
            stream = info.get("return_value")
            self.sock = stream.get_extra_info("socket") if stream is not None else None
            if (self.cancel is not None and self.cancel.cancelled) or self.aborted:
                self.abort()

    def abort(self) -> None:
        self.aborted = True
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class HttpTransport:
    def __init__(self, base_url: str, api_key: str = "EMPTY"):
        self.base_url = base_url.rstrip("/")
        self.root = server_root(self.base_url)
        self._client = httpx.Client(
            headers={"Authorization": f"Bearer {api_key}"},
            limits=httpx.Limits(max_keepalive_connections=0),
            follow_redirects=False,
        )

    def _url(self, path: str) -> str:
        return self.root + path if path.startswith("/") else f"{self.base_url}/{path}"

    @staticmethod
    def _timeout(timeout: float) -> httpx.Timeout:
        return httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_S))

    def _translate(self, e: Exception, cancel: CancelToken | None, url: str, grip: "_SocketGrip | None" = None,
                   timeout: float | None = None) -> TransportError:
        if cancel is not None and cancel.cancelled:
            return RequestCancelled("cancelled by the caller")
        if grip is not None and grip.deadline_hit:
            return TransportTimeout(f"{url}: no complete answer within the {timeout:g} s deadline per request "
                                    "([model].timeout_s)")
        if isinstance(e, httpx.TimeoutException):
            return TransportTimeout(f"{url}: no answer within the time limit ({type(e).__name__})")
        if isinstance(e, httpx.ConnectError):
            return TransportUnreachable(f"{url}: cannot connect ({e})")
        return TransportBroken(f"{url}: connection broke ({type(e).__name__}: {e})")

    @staticmethod
    def _read(resp: httpx.Response, url: str) -> bytes:
        """The body, at most TILEPORT_MAX_REPLY_BYTES (a runaway server must not fill memory)."""
        cap = int(limits.REPLY_BYTES.value)
        chunks, n = [], 0
        for chunk in resp.iter_bytes():
            n += len(chunk)
            if n > cap:
                raise TransportBroken(f"{url}: answer larger than the {limits.REPLY_BYTES.describe()}")
            chunks.append(chunk)
        return b"".join(chunks)

    @classmethod
    def _decode(cls, resp: httpx.Response, url: str) -> Any:
        body = cls._read(resp, url)
        text = body.decode("utf-8", "replace")
        if resp.status_code >= 300:  # a redirect is not an answer: /health behind a 302 is not healthy
            where = f" to {resp.headers.get('location', '?')[:200]}" if 300 <= resp.status_code < 400 else ""
            raise HTTPStatusError(resp.status_code, (f"redirect{where}" if where else text)[:2000])
        if not text.strip():
            return None
        try:
            return limits.loads_json(text, url)
        except UserError as e:
            raise TransportBroken(f"{url}: answer is not usable JSON: {str(e)[len(url) + 2:][:200]}") from None

    def get_json(self, path: str, *, timeout: float) -> Any:
        url = self._url(path)
        with self._guarded(url, None, timeout) as grip:
            with self._client.stream("GET", url, timeout=self._timeout(timeout),
                                     extensions={"trace": grip.trace}) as resp:
                return self._decode(resp, url)

    @contextlib.contextmanager
    def _guarded(self, url: str, cancel: CancelToken | None, timeout: float | None = None) -> Iterator[_SocketGrip]:
        """Arm the cancel hook and the total deadline for one request; turn httpx errors into TransportErrors."""
        grip = _SocketGrip(cancel)
        unregister = cancel.on_cancel(grip.abort) if cancel is not None else (lambda: None)
        timer = threading.Timer(timeout, grip.expire) if timeout else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            _check(cancel)
            yield grip
            if grip.deadline_hit:
                raise httpx.ReadTimeout("deadline")
        except httpx.HTTPError as e:
            raise self._translate(e, cancel, url, grip, timeout) from None
        except httpx.InvalidURL as e:
            raise TransportUnreachable(f"{url}: not a valid URL ({e})") from None
        finally:
            if timer is not None:
                timer.cancel()
            unregister()

    def post_json(self, path: str, body: dict, *, timeout: float, cancel: CancelToken | None = None) -> Any:
        url = self._url(path)
        with self._guarded(url, cancel, timeout) as grip:
            with self._client.stream("POST", url, json=body, timeout=self._timeout(timeout),
                                     extensions={"trace": grip.trace}) as resp:
                data = self._decode(resp, url)
            _check(cancel)
            return data

    def post_stream(
        self, path: str, body: dict, *, timeout: float, cancel: CancelToken | None = None
    ) -> Iterator[dict]:
        url = self._url(path)
        with self._guarded(url, cancel, timeout) as grip:
            with self._client.stream(
                "POST", url, json=body, timeout=self._timeout(timeout), extensions={"trace": grip.trace}
            ) as resp:
                if resp.status_code >= 300:
                    self._decode(resp, url)  # raises HTTPStatusError with the (capped) body
                for line in resp.iter_lines():
                    _check(cancel)
                    if not line.startswith("data:"):
                        continue  # blank separators, comments, `event:` lines
                    data = line[len("data:") :].strip()
                    if data == "[DONE]":
                        return
                    if len(data) > limits.REPLY_BYTES.value:
                        raise TransportBroken(f"{url}: stream event larger than the {limits.REPLY_BYTES.describe()}")
                    try:
                        yield limits.loads_json(data, url)
                    except UserError:
                        raise TransportBroken(f"{url}: stream event is not JSON: {data[:200]!r}") from None
            _check(cancel)
            raise StreamTruncated(f"{url}: stream ended before its final [DONE] event")

    def close(self) -> None:
        self._client.close()
