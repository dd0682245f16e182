"""The model client's timeout is a total deadline per request (issue #8), and a redirect is not health."""

from __future__ import annotations

import time

import pytest

from tests.hostile.corpus import start_server
from tileport.local_models.protocol import HTTPStatusError, TransportBroken, TransportTimeout
from tileport.local_models.server import probe_endpoint
from tileport.local_models.transport import HttpTransport


@pytest.fixture
def server(request):
    srv, url = start_server(request.param)
    yield url
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("server", ["drip"], indirect=True)
def test_a_server_dripping_a_byte_every_2_s_is_cut_off_at_the_deadline(server):
    t = HttpTransport(server)
    t0 = time.monotonic()
    with pytest.raises(TransportTimeout, match="3 s deadline"):
        t.post_json("chat/completions", {"model": "m", "messages": []}, timeout=3)
    assert time.monotonic() - t0 < 6  # httpx's per-read timeout alone would wait 100,000 x 2 s
    t0 = time.monotonic()
    with pytest.raises(TransportTimeout):
        list(t.post_stream("chat/completions", {"model": "m", "messages": []}, timeout=3))
    assert time.monotonic() - t0 < 6
    t.close()


@pytest.mark.parametrize("server", ["redirect-health"], indirect=True)
def test_a_302_on_health_is_not_healthy(server):
    info = probe_endpoint(server, timeout_s=3)
    assert not info.healthy and "302" in (info.error or "")
    with pytest.raises(HTTPStatusError):
        HttpTransport(server).get_json("/health", timeout=3)


@pytest.mark.parametrize("server", ["models-huge", "models-deep", "max-len-1e999"], indirect=True)
def test_oversized_deep_or_non_finite_replies_are_transport_faults_not_crashes(server, monkeypatch):
    monkeypatch.setenv("TILEPORT_MAX_REPLY_BYTES", str(8 << 20))
    with pytest.raises(TransportBroken, match="TILEPORT_MAX_REPLY_BYTES|TILEPORT_MAX_DEPTH|finite"):
        HttpTransport(server).get_json("models", timeout=20)
