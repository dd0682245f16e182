"""`HttpTransport`: the real `Transport`, httpx over HTTP/1.1 to an OpenAI-compatible server.

One connection per request (no keep-alive pool): the server is local, a connect costs well
under a millisecond, and owning the socket of each request lets `CancelToken.cancel()` shut it,
which wakes a read blocked on a silent server at once.
"""

from __future__ import annotations

import contextlib
import json
import socket
from typing import Any, Iterator

import httpx

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

    def trace(self, event: str, info: dict) -> None:
        if event == "connection.connect_tcp.complete":
            stream = info.get("return_value")
            self.sock = stream.get_extra_info("socket") if stream is not None else None
            if self.cancel is not None and self.cancel.cancelled:
                self.abort()

    def abort(self) -> None:
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

    def _translate(self, e: Exception, cancel: CancelToken | None, url: str) -> TransportError:
        if cancel is not None and cancel.cancelled:
            return RequestCancelled("cancelled by the caller")
        if isinstance(e, httpx.TimeoutException):
            return TransportTimeout(f"{url}: no answer within the time limit ({type(e).__name__})")
        if isinstance(e, httpx.ConnectError):
            return TransportUnreachable(f"{url}: cannot connect ({e})")
        return TransportBroken(f"{url}: connection broke ({type(e).__name__}: {e})")

    @staticmethod
    def _decode(resp: httpx.Response, url: str) -> Any:
        if resp.status_code >= 400:
            raise HTTPStatusError(resp.status_code, resp.text)
        if not resp.content.strip():
            return None
        try:
            return resp.json()
        except ValueError:
            raise TransportBroken(f"{url}: answer is not JSON: {resp.text[:200]!r}") from None

    def get_json(self, path: str, *, timeout: float) -> Any:
        url = self._url(path)
        try:
            resp = self._client.get(url, timeout=self._timeout(timeout))
        except httpx.HTTPError as e:
            raise self._translate(e, None, url) from None
        return self._decode(resp, url)

    @contextlib.contextmanager
    def _guarded(self, url: str, cancel: CancelToken | None) -> Iterator[_SocketGrip]:
        """Arm the cancel hook for one request and turn httpx errors into TransportErrors."""
        grip = _SocketGrip(cancel)
        unregister = cancel.on_cancel(grip.abort) if cancel is not None else (lambda: None)
        try:
            _check(cancel)
            yield grip
        except httpx.HTTPError as e:
            raise self._translate(e, cancel, url) from None
        finally:
            unregister()

    def post_json(self, path: str, body: dict, *, timeout: float, cancel: CancelToken | None = None) -> Any:
        url = self._url(path)
        with self._guarded(url, cancel) as grip:
            resp = self._client.post(url, json=body, timeout=self._timeout(timeout), extensions={"trace": grip.trace})
            _check(cancel)
            return self._decode(resp, url)

    def post_stream(
        self, path: str, body: dict, *, timeout: float, cancel: CancelToken | None = None
    ) -> Iterator[dict]:
        url = self._url(path)
        with self._guarded(url, cancel) as grip:
            with self._client.stream(
                "POST", url, json=body, timeout=self._timeout(timeout), extensions={"trace": grip.trace}
            ) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    raise HTTPStatusError(resp.status_code, resp.text)
                for line in resp.iter_lines():
                    _check(cancel)
                    if not line.startswith("data:"):
                        continue  # blank separators, comments, `event:` lines
                    data = line[len("data:") :].strip()
                    if data == "[DONE]":
                        return
                    try:
                        yield json.loads(data)
                    except ValueError:
                        raise TransportBroken(f"{url}: stream event is not JSON: {data[:200]!r}") from None
            _check(cancel)
            raise StreamTruncated(f"{url}: stream ended before its final [DONE] event")

    def close(self) -> None:
        self._client.close()
