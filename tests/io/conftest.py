"""Fixtures of the I/O tests: a loopback port that refuses connections, and the library's
transports that ``fast_http_client`` builds."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator

import httpx
import pytest

from mmsp_io import _transport


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A loopback port that refuses every connection for the whole test: bound here but never
    listening, so no other process (another test worker) can listen on it meanwhile."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@pytest.fixture
def fast_transports(monkeypatch: pytest.MonkeyPatch) -> list[_transport.Http11Transport]:
    """Every ``Http11Transport`` that ``fast_http_client`` builds during the test, in order: the
    transport of a client the library builds, seen without reading httpx's private state."""
    built: list[_transport.Http11Transport] = []
    real = _transport.Http11Transport

    def build(limits: httpx.Limits,
              ssl_context: ssl.SSLContext | None = None) -> _transport.Http11Transport:
        built.append(real(limits, ssl_context))
        return built[-1]

    monkeypatch.setattr(_transport, "Http11Transport", build)
    return built
