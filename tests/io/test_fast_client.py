"""``mmsp_io.fast_http_client``: the library's HTTP/1.1 transport as a public ``httpx.AsyncClient``
built through httpx's public API (08 D79), over loopback sockets, under asyncio and trio.

These tests prove that the client:

* is public, loaded on first use like the package's other heavy names;
* sends its requests through the library's transport (the response carries ``BODY_EXTENSION``),
  follows no redirect and has no timeout of httpx's own (the driver's apply, 08 D16, D22);
* keeps the limits it is given (connections in flight, idle connections, their expiry);
* verifies TLS with the caller's context, else with ``default_tls_context()``, httpx's default
  context made once per value of ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` and shared;
* sends a request the environment's proxies cover (``HTTP_PROXY``, ``HTTPS_PROXY``,
  ``ALL_PROXY``) through httpx's own transport to the proxy, and one ``NO_PROXY`` names (or any,
  with ``trust_env=False``) through the library's transport to the origin;
* is what the MMSP server's upstream calls go through: the driver sees the library's body
  extension on every upstream response of a stream through the gateway.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
from serverkit import AUTH, RELAXED, config, post_stream, running, stream_body
from test_transport import OK, counted, serving

import mmsp_io
from mmsp_io import driver
from mmsp_io._transport import (
    BODY_EXTENSION,
    Http11Transport,
    default_tls_context,
    fast_http_client,
)
from mmsp_io.server import Gateway
from mmsp_io.simulator import Simulator

pytestmark = pytest.mark.anyio

#: The proxy variables ``urllib.request.getproxies`` reads, in both cases.
PROXY_VARIABLES = [f"{name}_proxy" for name in ("http", "https", "all", "no")]


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """``monkeypatch``, with no proxy and no certificate file named by the environment."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
    yield monkeypatch


def test_it_is_public_and_loaded_on_first_use() -> None:
    assert "fast_http_client" in mmsp_io.__all__
    assert mmsp_io.fast_http_client is fast_http_client


async def test_a_request_goes_through_the_librarys_transport(environment: Any) -> None:
    async with serving([OK]) as server, fast_http_client() as client:
        response = await client.get(server.url("/a"))
        assert (response.status_code, response.content) == (200, b"ok")
        assert BODY_EXTENSION in response.extensions
        assert client.timeout == httpx.Timeout(None)


async def test_a_redirect_is_not_followed(environment: Any) -> None:
    moved = counted(b"", "location: /elsewhere", status="302 Found")
    async with serving([moved, OK]) as server, fast_http_client() as client:
        response = await client.get(server.url("/a"))
    assert response.status_code == 302
    assert len(server.received) == 1


@pytest.mark.parametrize(("options", "connections"), [
    ({}, [1, 1]),
    ({"max_keepalive": 0}, [1, 2]),
    ({"keepalive_expiry": 0.0}, [1, 2]),
], ids=["defaults", "no-idle-kept", "expired-at-once"])
async def test_idle_connections_are_kept_as_the_limits_say(
    environment: Any, options: dict[str, Any], connections: list[int],
) -> None:
    async with serving([OK]) as server, fast_http_client(**options) as client:
        for path in ("/a", "/b"):
            assert (await client.get(server.url(path))).content == b"ok"
    assert server.connections == connections


async def test_a_hundred_streams_at_once_reuse_their_connections_next_round(
    environment: Any,
) -> None:
    """The default pool keeps 100 idle connections (as the OpenAI and Anthropic SDKs do): a
    client that runs 100 streams at once opens no new connection for its next 100."""
    async with serving([OK]) as server, fast_http_client() as client:
        for _ in range(2):
            async with contextlib.AsyncExitStack() as streams:
                responses = [await streams.enter_async_context(
                    client.stream("GET", server.url(f"/{index}"))) for index in range(100)]
                for response in responses:
                    assert await response.aread() == b"ok"
    assert len(server.connections) == 200
    assert max(server.connections) == 100


async def test_a_request_past_max_connections_waits_for_a_slot(environment: Any) -> None:
    pool_timeout = httpx.Timeout(None, pool=0.05)
    async with serving([OK]) as server, fast_http_client(max_connections=1) as client:
        async with client.stream("GET", server.url("/a")):
            with pytest.raises(httpx.PoolTimeout):
                await client.get(server.url("/b"), timeout=pool_timeout)
        assert (await client.get(server.url("/c"), timeout=pool_timeout)).content == b"ok"


# -- TLS ---------------------------------------------------------------------------------------


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls_server(ca: trustme.CA) -> ssl.SSLContext:
    """A server context whose certificate ``ca`` issued for 127.0.0.1."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
    return context


async def test_tls_uses_the_callers_context(environment: Any, ca: trustme.CA,
                                            tls_server: ssl.SSLContext) -> None:
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    async with serving([OK], tls=tls_server) as server:
        async with fast_http_client(ssl_context=trusting) as client:
            assert (await client.get(server.url())).content == b"ok"
        async with fast_http_client() as client:  # httpx's default context: not that CA
            with pytest.raises(httpx.ConnectError):
                await client.get(server.url())


async def test_tls_without_a_context_reads_ssl_cert_file(
    environment: pytest.MonkeyPatch, ca: trustme.CA, tls_server: ssl.SSLContext, tmp_path: Path,
) -> None:
    certificates = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(certificates))
    environment.setenv("SSL_CERT_FILE", str(certificates))
    async with serving([OK], tls=tls_server) as server, fast_http_client() as client:
        assert (await client.get(server.url())).content == b"ok"


def test_clients_share_one_default_context_per_certificate_variables(
    environment: pytest.MonkeyPatch, ca: trustme.CA, tmp_path: Path
) -> None:
    """The default context is made once (its CA bundle costs tens of milliseconds per client
    otherwise) and again only when ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` changes."""
    first = default_tls_context()
    assert default_tls_context() is first
    assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname
    certificates = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(certificates))
    environment.setenv("SSL_CERT_FILE", str(certificates))
    assert default_tls_context() is not first
    assert default_tls_context() is default_tls_context()
    environment.delenv("SSL_CERT_FILE")
    assert default_tls_context() is first


# -- the environment's proxies -----------------------------------------------------------------


async def test_https_proxy_tunnels_through_httpx_own_transport(
    environment: pytest.MonkeyPatch,
) -> None:
    refused = counted(b"", status="403 Forbidden")
    async with serving([refused]) as proxy:
        environment.setenv("HTTPS_PROXY", proxy.origin)
        async with fast_http_client() as client:
            with pytest.raises(httpx.ProxyError):
                await client.get("https://provider.test/v1")
    [request] = proxy.received
    assert request.raw.startswith(b"CONNECT provider.test:443 HTTP/1.1\r\n")


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "ALL_PROXY", "http_proxy"])
async def test_a_proxied_request_goes_to_the_proxy_through_httpx_own_transport(
    environment: pytest.MonkeyPatch, variable: str,
) -> None:
    async with serving([OK]) as proxy:
        # A value without a scheme is an http:// proxy, as httpx reads it.
        environment.setenv(variable, proxy.origin.removeprefix("http://"))
        async with fast_http_client() as client:
            response = await client.get("http://provider.test/v1")
            assert response.content == b"ok"
    assert BODY_EXTENSION not in response.extensions
    assert "network_stream" in response.extensions  # httpcore's: httpx's own transport
    [request] = proxy.received
    assert request.raw.startswith(b"GET http://provider.test/v1 HTTP/1.1\r\n")


@pytest.mark.parametrize(("bypass", "trust_env"), [
    ("127.0.0.1", True), ("example.com, 127.0.0.1", True), ("*", True), ("", False),
], ids=["no-proxy-names-it", "no-proxy-lists-it", "no-proxy-star", "trust-env-off"])
async def test_an_origin_the_proxy_does_not_cover_is_reached_directly(
    environment: pytest.MonkeyPatch, refusing_port: int, bypass: str, trust_env: bool,
) -> None:
    environment.setenv("HTTP_PROXY", f"http://127.0.0.1:{refusing_port}")
    environment.setenv("NO_PROXY", bypass)
    async with serving([OK]) as server, fast_http_client(trust_env=trust_env) as client:
        response = await client.get(server.url("/a"))
        assert response.content == b"ok"
        assert BODY_EXTENSION in response.extensions


# -- the MMSP server's upstream calls ----------------------------------------------------------


async def test_the_gateways_upstream_responses_come_from_the_librarys_transport(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast_transports: list[Http11Transport],
) -> None:
    seen: list[bool] = []
    body_chunks = driver._body_chunks

    def spy(response: httpx.Response, tap: Any = None) -> Any:
        seen.append(BODY_EXTENSION in response.extensions)
        return body_chunks(response, tap)

    monkeypatch.setattr(driver, "_body_chunks", spy)
    async with Simulator.running() as sim:
        gateway = Gateway(config(sim, ["openai-chat", "ant-messages"]), timeouts=RELAXED,
                          max_retries=0, trace_dir=tmp_path / "traces")
        assert len(fast_transports) == 2  # one upstream client per row
        async with running(gateway, "h11") as origin, httpx.AsyncClient() as http:
            for model in ("openai-chat", "ant-messages"):
                response, events = await post_stream(http, origin, stream_body(model),
                                                     headers=AUTH)
                assert response.status_code == 200
                assert events[-1] == "[DONE]"
    assert seen == [True, True]
    assert [transport.active for transport in fast_transports] == [0, 0]
