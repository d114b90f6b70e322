"""The library's own HTTP/1.1 transport (``mmsp_io._transport.Http11Transport``) over real
loopback sockets, driven through httpx's public API, under asyncio and trio.

A raw-socket server (``serving``) answers each request from a script of raw bytes, pauses and
closes, and records every TCP connection it accepted and every request that arrived on it. With
it these tests prove that the transport:

* sends valid HTTP/1.1 (``Host``, a body and its ``Content-Length``) and reuses one connection
  for sequential exchanges whose bodies ended by their framing, including a body the caller
  closes right after its last data when the end of the body already arrived with it;
* never reuses a connection it cannot trust: ``Connection: close`` (either side), an HTTP/1.0
  answer, a body delimited by the connection closing, a body closed before its end, an idle
  connection the server closed, one that outlived ``keepalive_expiry``;
* keeps at most ``max_keepalive_connections`` idle, and holds at most ``max_connections``
  requests in flight (a request past that waits, or raises ``httpx.PoolTimeout``);
* raises httpx's own exceptions as httpx's transport does (``ConnectError``,
  ``RemoteProtocolError``, ``ReadTimeout``), skips a ``1xx`` head, and leaves
  ``Content-Encoding`` to httpx;
* speaks TLS with the context it is given, reusing a TLS connection too;
* is the transport of the client ``AutoLLMClient`` builds itself (``fast_http_client``; a
  caller's own client is used as given), and carries sequential streams end to end against the
  provider simulator (``tests/io/test_fast_client.py`` covers the client's options).

``active`` (requests holding a slot) and ``idle`` (idle connections kept) are the only internals
asserted. A body read in part is read as the driver reads it, through the transport's own
iterator (``BODY_EXTENSION``): an httpx generator abandoned mid-body would be left to the
garbage collector.
"""

from __future__ import annotations

import gzip
import logging
import math
import re
import ssl
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, final

import anyio
import anyio.abc
import h11
import httpx
import pytest
import trustme
from anyio.streams.tls import TLSListener

import adapters
from mmsp_core.model import TextDone, UniEvent, UniMessage
from mmsp_core.sse import SSEDecoder
from mmsp_io import AutoLLMClient, MMSPError, Timeouts
from mmsp_io._transport import BODY_EXTENSION, MAX_HEAD_BYTES, Http11Transport
from mmsp_io.simulator import Simulator, simulated_protocols

pytestmark = pytest.mark.anyio


# -- the loopback server -----------------------------------------------------------------------


@final
class _Close:
    """A script step: the server closes the socket (and serves nothing more on it)."""

    def __repr__(self) -> str:
        return "CLOSE"


CLOSE: Final = _Close()
#: A script step: raw bytes sent as one write, a pause in seconds, or ``CLOSE``.
Step = bytes | float | _Close
#: A pause that never ends: a test that waits for what follows it would hang, which
#: ``HANG_GUARD`` turns into a failure (it bounds a hang and measures nothing, 08 D80).
FOREVER: Final = math.inf
HANG_GUARD: Final = 60.0
#: The answer to one request: its steps, in order.
Answer = Sequence[Step]

#: Socket failures of a server whose client went away.
_GONE: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream,
                OSError)


@dataclass(frozen=True)
class Received:
    """One request as it arrived: the TCP connection it came on (1 for the first accepted) and
    its raw bytes, head and body."""

    connection: int
    raw: bytes


@dataclass
class Server:
    """A running loopback server (``serving``) and what it has seen.

    Each request that arrives takes the next answer of ``answers`` in arrival order, the last
    one again once they run out.
    """

    answers: Sequence[Answer]
    origin: str
    #: TCP connections accepted (TLS: handshakes that succeeded).
    accepted: int = 0
    #: Sockets the server closed by a ``CLOSE`` step.
    closed: int = 0
    #: TLS handshakes that failed.
    failed_handshakes: int = 0
    received: list[Received] = field(default_factory=list)

    def url(self, path: str = "/") -> str:
        return self.origin + path

    @property
    def connections(self) -> list[int]:
        """The connection each request came on, in arrival order."""
        return [request.connection for request in self.received]

    async def wait_closed(self, count: int) -> None:
        """Wait until the server has closed ``count`` sockets by script."""
        with anyio.fail_after(2):
            while self.closed < count:
                await anyio.sleep(0.005)

    async def handle(self, stream: anyio.abc.ByteStream) -> None:
        self.accepted += 1
        number = self.accepted
        buffer = b""
        async with stream:
            try:
                while True:
                    raw, buffer = await _read_request(stream, buffer)
                    if raw is None:
                        return
                    self.received.append(Received(number, raw))
                    answer = self.answers[min(len(self.received), len(self.answers)) - 1]
                    for step in answer:
                        if isinstance(step, _Close):
                            await stream.aclose()
                            self.closed += 1
                            return
                        if isinstance(step, bytes):
                            await stream.send(step)
                        else:
                            await anyio.sleep(step)
            except _GONE:
                pass  # the client left, as it may


async def _read_request(stream: anyio.abc.ByteStream,
                        buffer: bytes) -> tuple[bytes | None, bytes]:
    """The next request's raw bytes (``None`` once the client closed) and the bytes after it."""
    while b"\r\n\r\n" not in buffer:
        try:
            data = await stream.receive()
        except anyio.EndOfStream:
            return None, buffer
        buffer += data
    end = buffer.index(b"\r\n\r\n") + 4
    if re.search(rb"(?im)^transfer-encoding:[ \t]*chunked", buffer[:end]):
        # Enough for the tests' bodies: no chunk of theirs holds the last chunk's bytes.
        while (last := buffer.find(b"\r\n0\r\n\r\n", end - 2)) < 0:
            buffer += await stream.receive()
        end = last + 7
    else:
        length = re.search(rb"(?im)^content-length:[ \t]*(\d+)", buffer[:end])
        end += int(length[1]) if length else 0
    while len(buffer) < end:
        buffer += await stream.receive()
    return buffer[:end], buffer[end:]


@final
class _QuietTLSListener(TLSListener):
    """A TLS listener that counts failed handshakes instead of logging them."""

    def __init__(self, listener: anyio.abc.Listener[anyio.abc.SocketStream],
                 context: ssl.SSLContext, server: Server) -> None:
        super().__init__(listener, context, standard_compatible=False)
        self._server = server

    async def handle_handshake_error(self, exc: BaseException,  # type: ignore[override]
                                     stream: anyio.abc.AnyByteStream) -> None:
        self._server.failed_handshakes += 1
        await anyio.aclose_forcefully(stream)
        if not isinstance(exc, Exception):
            raise exc


@asynccontextmanager
async def serving(*answers: Answer, tls: ssl.SSLContext | None = None,
                  host: str = "127.0.0.1") -> AsyncIterator[Server]:
    """A loopback server that answers the requests from ``answers`` (``Server``), over TLS
    with ``tls`` as its context when given; ``host`` names it in its URL."""
    tcp = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = tcp.extra(anyio.abc.SocketAttribute.local_port)
    server = Server(answers, f"{'http' if tls is None else 'https'}://{host}:{port}")
    listener: anyio.abc.Listener[anyio.abc.ByteStream]
    listener = tcp if tls is None else _QuietTLSListener(tcp, tls, server)
    try:
        async with listener, anyio.create_task_group() as tasks:
            tasks.start_soon(listener.serve, server.handle)
            yield server
            tasks.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # the test's own failure, as it raised it
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise


# -- responses ---------------------------------------------------------------------------------


def head(*headers: str, status: str = "200 OK", version: str = "1.1") -> bytes:
    lines = [f"HTTP/{version} {status}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def counted(body: bytes, *headers: str, status: str = "200 OK", version: str = "1.1") -> bytes:
    """A whole response with a ``Content-Length`` body."""
    return head(f"content-length: {len(body)}", *headers, status=status, version=version) + body


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


CHUNKED_HEAD: Final = head("content-type: text/event-stream", "transfer-encoding: chunked")
LAST_CHUNK: Final = b"0\r\n\r\n"
OK: Final = counted(b"ok")


def chunked(*pieces: bytes) -> bytes:
    """A whole chunked response in one write."""
    return CHUNKED_HEAD + b"".join(map(chunk, pieces)) + LAST_CHUNK


def parse(raw: bytes) -> tuple[h11.Request, bytes]:
    """A request as h11 reads it (it refuses what is not valid HTTP/1.1), and its body."""
    connection = h11.Connection(h11.SERVER)
    connection.receive_data(raw)
    request = connection.next_event()
    assert isinstance(request, h11.Request)
    body = b""
    while not isinstance(event := connection.next_event(), h11.EndOfMessage):
        assert isinstance(event, h11.Data), event
        body += event.data
    assert connection.trailing_data == (b"", False)  # nothing after the request
    return request, body


def header(request: h11.Request, name: bytes) -> list[bytes]:
    return [value for key, value in request.headers if key == name]


# -- clients -----------------------------------------------------------------------------------

#: Long enough never to trip unless a test means it to.
TIMEOUT: Final = httpx.Timeout(5.0)


def limits(max_connections: int | None = 10, max_keepalive_connections: int | None = 10,
           keepalive_expiry: float | None = 30.0) -> httpx.Limits:
    return httpx.Limits(max_connections=max_connections,
                        max_keepalive_connections=max_keepalive_connections,
                        keepalive_expiry=keepalive_expiry)


def client_of(transport: Http11Transport,
              timeout: httpx.Timeout = TIMEOUT) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=transport, timeout=timeout)


async def next_piece(response: httpx.Response) -> bytes:
    """The next piece of ``response``'s body, read through the transport's own iterator as the
    driver reads it (closing the response then leaves no generator behind)."""
    body: AsyncIterator[bytes] = response.extensions[BODY_EXTENSION]
    return await body.__anext__()


async def read_streamed(client: httpx.AsyncClient, url: str) -> bytes:
    """The body of a streamed GET, read to its end through ``aiter_raw``."""
    async with client.stream("GET", url) as response:
        return b"".join([piece async for piece in response.aiter_raw()])


# -- keep-alive --------------------------------------------------------------------------------

BODIES: Final[dict[str, tuple[Answer, bytes]]] = {
    "content-length": ([counted(b"hello world")], b"hello world"),
    "content-length-in-pieces": (
        [head("content-length: 11") + b"hello", 0.02, b" wor", 0.02, b"ld"], b"hello world"),
    "chunked": ([chunked(b"hello", b" ", b"world")], b"hello world"),
    "chunked-in-pieces": (
        [CHUNKED_HEAD + chunk(b"hello"), 0.02, chunk(b" world")[:4], 0.02,
         chunk(b" world")[4:], 0.02, b"0\r\n", 0.02, b"\r\n"], b"hello world"),
    "chunked-split-at-crlf": (
        [CHUNKED_HEAD + b"b\r", 0.02, b"\nhello world\r", 0.02, b"\n0\r", 0.02, b"\n\r\n"],
        b"hello world"),
    "chunked-with-extension": ([CHUNKED_HEAD + b"b;name=value\r\nhello world\r\n0\r\n\r\n"],
                               b"hello world"),
    "head-split-at-its-end": (
        [b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r", 0.02, b"\nhello world"],
        b"hello world"),
    "head-with-bare-lf": ([b"HTTP/1.1 200 OK\ncontent-length: 11\n\nhello world"],
                          b"hello world"),
    "chunked-with-trailer": (
        [CHUNKED_HEAD + chunk(b"hello world") + b"0\r\nx-checksum: 1\r\n\r\n"], b"hello world"),
    "no-content": ([head(status="204 No Content")], b""),
}


@pytest.mark.parametrize("kind", list(BODIES))
async def test_sequential_requests_whose_bodies_end_reuse_one_connection(kind: str) -> None:
    answer, body = BODIES[kind]
    transport = Http11Transport(limits())
    async with serving(answer) as server, client_of(transport) as client:
        first = await client.get(server.url("/a"))
        assert (first.status_code, first.content) == (200 if body else 204, body)
        assert (transport.active, transport.idle) == (0, 1)
        assert await read_streamed(client, server.url("/b")) == body
        assert (transport.active, transport.idle) == (0, 1)
    assert server.accepted == 1
    assert server.connections == [1, 1]


async def test_the_requests_sent_are_http11_with_host_and_content_length() -> None:
    transport = Http11Transport(limits())
    async with serving([chunked(b"one")], [OK]) as server, client_of(transport) as client:
        get = await client.get(server.url("/v1/models?page=2"), headers={"x-test": "yes"})
        post = await client.post(server.url("/v1/chat"), content=b'{"stream": true}',
                                 headers={"content-type": "application/json"})
        assert (get.text, post.text) == ("one", "ok")
    assert server.connections == [1, 1]
    host = server.origin.removeprefix("http://").encode()
    (get_request, get_body), (post_request, post_body) = (parse(r.raw) for r in server.received)
    assert server.received[0].raw.startswith(b"GET /v1/models?page=2 HTTP/1.1\r\n")
    assert (get_request.method, get_request.target, get_request.http_version) == (
        b"GET", b"/v1/models?page=2", b"1.1")
    assert header(get_request, b"host") == [host]
    assert header(get_request, b"x-test") == [b"yes"]
    assert get_body == b""
    assert server.received[1].raw.startswith(b"POST /v1/chat HTTP/1.1\r\n")
    assert (post_request.method, post_request.http_version) == (b"POST", b"1.1")
    assert header(post_request, b"host") == [host]
    assert header(post_request, b"content-length") == [b"16"]
    assert header(post_request, b"content-type") == [b"application/json"]
    assert post_body == b'{"stream": true}'


async def test_a_streamed_request_body_is_sent_chunked() -> None:
    async def parts() -> AsyncIterator[bytes]:
        yield b'{"a": '
        await anyio.sleep(0.01)
        yield b""
        yield b"1}"

    transport = Http11Transport(limits())
    async with serving([OK]) as server, client_of(transport) as client:
        response = await client.post(server.url("/up"), content=parts())
        assert response.content == b"ok"
        assert (await client.get(server.url("/next"))).content == b"ok"
    assert server.connections == [1, 1]
    request, body = parse(server.received[0].raw)
    assert header(request, b"transfer-encoding") == [b"chunked"]
    assert header(request, b"content-length") == []
    assert body == b'{"a": 1}'


async def test_the_response_carries_its_version_and_reason() -> None:
    transport = Http11Transport(limits())
    async with (serving([counted(b"no", status="418 I'm a teapot")],
                        [counted(b"ok", version="1.0")]) as server,
                client_of(transport) as client):
        teapot = await client.get(server.url())
        assert (teapot.status_code, teapot.reason_phrase, teapot.http_version) == (
            418, "I'm a teapot", "HTTP/1.1")
        old = await client.get(server.url())
        assert (old.status_code, old.http_version, old.content) == (200, "HTTP/1.0", b"ok")


# -- connections not reused --------------------------------------------------------------------

#: Answers after which the connection must not carry another exchange; the server keeps the
#: socket open unless the body is delimited by its closing.
NOT_REUSABLE: Final[dict[str, Answer]] = {
    "connection-close": [counted(b"ok", "connection: close")],
    "connection-close-among-tokens": [counted(b"ok", "connection: Upgrade, Close")],
    "http-1.0": [counted(b"ok", version="1.0")],
    "http-1.0-keep-alive": [counted(b"ok", "connection: keep-alive", version="1.0")],
    "until-close": [head("content-type: text/plain") + b"o", 0.02, b"k", CLOSE],
    "bytes-after-the-body": [OK + b"HTTP/1.1 200 OK\r\n"],
}


@pytest.mark.parametrize("kind", list(NOT_REUSABLE))
async def test_a_connection_that_cannot_carry_another_exchange_is_not_reused(kind: str) -> None:
    transport = Http11Transport(limits())
    async with serving(NOT_REUSABLE[kind], [OK]) as server, client_of(transport) as client:
        first = await client.get(server.url("/a"))
        assert first.content == b"ok"
        assert (transport.active, transport.idle) == (0, 0)
        second = await client.get(server.url("/b"))
        assert second.content == b"ok"
        assert transport.active == 0
    assert server.accepted == 2
    assert server.connections == [1, 2]


@pytest.mark.parametrize("value", ["close", "Close", "keep-alive, CLOSE"])
async def test_a_request_asking_to_close_is_not_reused(value: str) -> None:
    """Connection options are case-insensitive (RFC 9110 §7.6.1), as h11 and httpcore read
    them: a server that honours the request closes the connection after its answer."""
    transport = Http11Transport(limits())
    async with serving([OK]) as server, client_of(transport) as client:
        await client.get(server.url("/a"), headers={"connection": value})
        assert (transport.active, transport.idle) == (0, 0)
        await client.get(server.url("/b"))
    assert server.connections == [1, 2]


@pytest.mark.parametrize("framing", ["chunked", "content-length"])
async def test_a_body_closed_before_its_end_is_not_reused(framing: str) -> None:
    first: Answer = (
        [CHUNKED_HEAD + chunk(b"first"), 5.0, chunk(b"rest") + LAST_CHUNK]
        if framing == "chunked"
        else [head("content-length: 9") + b"first", 5.0, b"rest"]
    )
    transport = Http11Transport(limits())
    async with serving(first, [OK]) as server, client_of(transport) as client:
        async with client.stream("GET", server.url("/a")) as response:
            assert await next_piece(response) == b"first"
            assert transport.active == 1
        assert (transport.active, transport.idle) == (0, 0)
        second = await client.get(server.url("/b"))
        assert second.content == b"ok"
        assert transport.active == 0
    assert server.connections == [1, 2]


@pytest.mark.parametrize("end_with_data", [True, False], ids=["end-with-data", "end-later"])
async def test_a_stream_closed_after_its_last_data_is_reused_when_its_end_arrived(
    end_with_data: bool,
) -> None:
    """The driver closes a stream at its terminal event: when the body's end came in the same
    write as the last data, the connection goes back to the pool; when it has not arrived,
    the connection cannot be trusted and is closed."""
    first: Answer = (
        [CHUNKED_HEAD + chunk(b"data: [DONE]\n\n") + LAST_CHUNK]
        if end_with_data
        else [CHUNKED_HEAD + chunk(b"data: [DONE]\n\n"), 0.2, LAST_CHUNK]
    )
    transport = Http11Transport(limits())
    async with serving(first, [OK]) as server, client_of(transport) as client:
        async with client.stream("GET", server.url("/a")) as response:
            assert await next_piece(response) == b"data: [DONE]\n\n"
        assert (transport.active, transport.idle) == (0, 1 if end_with_data else 0)
        assert (await client.get(server.url("/b"))).content == b"ok"
    assert server.connections == ([1, 1] if end_with_data else [1, 2])


def lingering(response: httpx.Response) -> None:
    """Mark ``response``'s body as the driver marks it at its protocol's terminal event."""
    response.extensions[BODY_EXTENSION].linger = True


@pytest.mark.parametrize("shape", ["chunked", "content-length"])
async def test_a_lingering_stream_reads_on_to_its_end_and_is_reused(shape: str) -> None:
    """A stream closed at its terminal event before the end of its body arrived reads on to
    that end (written separately, at once) and its connection is reused."""
    event = b"data: [DONE]\n\n"
    first: Answer = (
        [CHUNKED_HEAD + chunk(event), 0.0, LAST_CHUNK] if shape == "chunked"
        else [head(f"content-length: {len(event) + 6}") + event, 0.0, b": end\n"]
    )
    transport = Http11Transport(limits())
    async with serving(first, [OK]) as server, client_of(transport) as client:
        async with client.stream("GET", server.url("/a")) as response:
            assert await next_piece(response) == event
            lingering(response)
        assert (transport.active, transport.idle) == (0, 1)
        assert (await client.get(server.url("/b"))).content == b"ok"
        assert (transport.active, transport.idle) == (0, 1)
    assert server.connections == [1, 1]


@pytest.mark.parametrize("rest", [
    pytest.param([FOREVER], id="the-end-never-comes"),
    pytest.param([b"5\r\nmore!\r\n" * 20_000, FOREVER], id="more-body-than-is-read"),
    pytest.param([b"0\r\n\r\nHTTP/1.1 200 OK\r\n"], id="bytes-after-the-end"),
    pytest.param([b"zz\r\n"], id="a-broken-end"),
])
async def test_a_lingering_stream_whose_body_does_not_end_cleanly_is_closed(
    rest: list[Step],
) -> None:
    """A lingering stream whose body does not end within ``FINISH_SECONDS`` and
    ``FINISH_BYTES``, or ends with bytes after it, or broken, closes its connection, without
    waiting for the server (whose end never comes)."""
    transport = Http11Transport(limits())
    answer: Answer = [CHUNKED_HEAD + chunk(b"data: [DONE]\n\n"), 0.0, *rest]
    async with serving(answer, [OK]) as server, client_of(transport) as client:
        with anyio.fail_after(HANG_GUARD):
            async with client.stream("GET", server.url("/a")) as response:
                await next_piece(response)
                lingering(response)
        assert (transport.active, transport.idle) == (0, 0)
        assert (await client.get(server.url("/b"))).content == b"ok"
    assert server.connections == [1, 2]


async def test_an_abandoned_stream_closes_its_connection_at_once() -> None:
    """Without ``linger`` (a cancelled or aborted stream) the connection is closed when the
    body is, without reading on: the server sees the caller leave, and stops generating."""
    transport = Http11Transport(limits())
    answer: Answer = [CHUNKED_HEAD + chunk(b"data: one\n\n"), 0.2, LAST_CHUNK]
    async with serving(answer, [OK]) as server, client_of(transport) as client:
        async with client.stream("GET", server.url("/a")) as response:
            await next_piece(response)
        assert (transport.active, transport.idle) == (0, 0)
        assert (await client.get(server.url("/b"))).content == b"ok"
    assert server.connections == [1, 2]


async def test_a_counted_body_closed_once_whole_is_reused() -> None:
    transport = Http11Transport(limits())
    async with serving([OK]) as server, client_of(transport) as client:
        async with client.stream("GET", server.url("/a")) as response:
            assert await next_piece(response) == b"ok"
        assert (transport.active, transport.idle) == (0, 1)
        await client.get(server.url("/b"))
    assert server.connections == [1, 1]


# -- stale and expired idle connections --------------------------------------------------------


async def test_an_idle_connection_the_server_wrote_on_is_not_used() -> None:
    """A server that writes on an idle connection (a 408 as it times the connection out)
    ends it: the next request goes on a new one, and nothing waits for the peek."""
    transport = Http11Transport(limits())
    timed_out = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n\r\n"
    async with serving([OK, 0.01, timed_out], [OK]) as server, client_of(transport) as client:
        assert (await client.get(server.url("/a"))).content == b"ok"
        assert transport.idle == 1
        await anyio.sleep(0.05)
        second = await client.get(server.url("/b"))
        assert second.content == b"ok"
        assert (transport.active, transport.idle) == (0, 1)
    assert server.connections == [1, 2]


@pytest.mark.parametrize("framing", ["chunked", "content-length"])
async def test_an_idle_connection_the_server_closed_is_not_used(framing: str) -> None:
    answer = chunked(b"ok") if framing == "chunked" else OK
    transport = Http11Transport(limits())
    async with serving([answer, CLOSE], [OK]) as server, client_of(transport) as client:
        assert (await client.get(server.url("/a"))).content == b"ok"
        assert transport.idle == 1  # the body ended by its framing: kept, for now
        await server.wait_closed(1)
        await anyio.sleep(0.02)
        second = await client.get(server.url("/b"))
        assert second.content == b"ok"
        assert (transport.active, transport.idle) == (0, 1)
    assert server.connections == [1, 2]


async def test_an_idle_connection_past_keepalive_expiry_is_not_used() -> None:
    transport = Http11Transport(limits(keepalive_expiry=0.05))
    async with serving([OK]) as server, client_of(transport) as client:
        await client.get(server.url("/a"))
        await client.get(server.url("/b"))  # at once: within the expiry
        await anyio.sleep(0.1)
        await client.get(server.url("/c"))
        assert (transport.active, transport.idle) == (0, 1)
    assert server.connections == [1, 1, 2]


async def test_at_most_max_keepalive_connections_are_kept() -> None:
    transport = Http11Transport(limits(max_keepalive_connections=1))
    async with serving([OK]) as server, client_of(transport) as client:
        async with (client.stream("GET", server.url("/a")) as first,
                    client.stream("GET", server.url("/b")) as second):
            assert transport.active == 2
            assert (await first.aread(), await second.aread()) == (b"ok", b"ok")
        assert (transport.active, transport.idle) == (0, 1)
        await client.get(server.url("/c"))
        assert transport.idle == 1
    assert server.accepted == 2
    assert server.connections[2] in (1, 2)


async def test_releases_at_once_keep_at_most_max_keepalive_connections() -> None:
    """Three responses closed together, the first alone and the other two at once: a release
    that must first close the oldest idle connection does not let another one in meanwhile."""
    transport = Http11Transport(limits(max_keepalive_connections=1))
    async with serving([OK]) as server, client_of(transport) as client:
        async with (client.stream("GET", server.url("/a")) as first,
                    client.stream("GET", server.url("/b")) as second,
                    client.stream("GET", server.url("/c")) as third):
            for response in (first, second, third):
                assert await next_piece(response) == b"ok"
            await first.aclose()
            assert transport.idle == 1
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(second.aclose)
                tasks.start_soon(third.aclose)
        assert transport.active == 0
        assert transport.idle == 1
    assert server.accepted == 3


async def test_no_keepalive_connections_keeps_none() -> None:
    transport = Http11Transport(limits(max_keepalive_connections=0))
    async with serving([OK]) as server, client_of(transport) as client:
        await client.get(server.url("/a"))
        assert transport.idle == 0
        await client.get(server.url("/b"))
    assert server.connections == [1, 2]


async def test_closing_the_client_closes_its_idle_connections() -> None:
    transport = Http11Transport(limits())
    async with serving([OK]) as server:
        async with client_of(transport) as client:
            await client.get(server.url("/a"))
            assert transport.idle == 1
        assert transport.idle == 0
        with pytest.raises(RuntimeError):
            await transport.handle_async_request(httpx.Request("GET", server.url("/b")))


# -- slots -------------------------------------------------------------------------------------


async def test_a_request_past_max_connections_waits_for_a_slot() -> None:
    transport = Http11Transport(limits(max_connections=1))
    answered = anyio.Event()
    bodies: list[bytes] = []

    async def second(client: httpx.AsyncClient, url: str) -> None:
        bodies.append((await client.get(url)).content)
        answered.set()

    async with serving([OK]) as server, client_of(transport) as client:
        async with anyio.create_task_group() as tasks:
            async with client.stream("GET", server.url("/a")) as response:
                tasks.start_soon(second, client, server.url("/b"))
                await anyio.sleep(0.1)
                assert not answered.is_set()
                assert len(server.received) == 1
                assert transport.active == 1
                assert await response.aread() == b"ok"
            with anyio.fail_after(2):
                await answered.wait()
        assert bodies == [b"ok"]
        assert transport.active == 0
    assert server.connections == [1, 1]  # the first body ended: its connection carried both


async def test_a_request_past_max_connections_times_out_on_the_pool() -> None:
    transport = Http11Transport(limits(max_connections=1))
    async with (serving([OK]) as server,
                client_of(transport, httpx.Timeout(None, pool=0.1)) as client):
        async with client.stream("GET", server.url("/a")):
            with anyio.fail_after(HANG_GUARD), pytest.raises(httpx.PoolTimeout):
                await client.get(server.url("/b"))
            assert transport.active == 1
        assert transport.active == 0
        assert (await client.get(server.url("/c"))).content == b"ok"
    assert len(server.received) == 2


async def test_a_connect_failure_gives_the_slot_back(refusing_port: int) -> None:
    transport = Http11Transport(limits(max_connections=1))
    async with client_of(transport) as client:
        for _ in range(2):  # the slot came back: the second does not wait for it
            with pytest.raises(httpx.ConnectError):
                await client.get(f"http://127.0.0.1:{refusing_port}/")
            assert (transport.active, transport.idle) == (0, 0)


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param([CLOSE], id="closed-without-a-response"),
        pytest.param([b"HTTP/1.1 200 OK\r\ncontent-le", CLOSE], id="closed-mid-head"),
        pytest.param([b"garbage\r\n\r\n"], id="garbage-status-line"),
        pytest.param([b"HTTP/1.1 2000 OK\r\n\r\n"], id="bad-status-code"),
        pytest.param([b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n"], id="bad-header"),
        pytest.param([b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n"],
                     id="unknown-transfer-encoding"),
        pytest.param([b"HTTP/1.1 200 OK\r\nx-big: " + b"a" * (MAX_HEAD_BYTES + 10), 5.0],
                     id="head-too-long"),
    ],
)
async def test_a_head_that_is_no_http11_response_is_a_remote_protocol_error(
    answer: Answer,
) -> None:
    transport = Http11Transport(limits())
    async with serving(answer) as server, client_of(transport) as client:
        with anyio.fail_after(2), pytest.raises(httpx.RemoteProtocolError):
            await client.get(server.url())
        assert (transport.active, transport.idle) == (0, 0)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param([CHUNKED_HEAD + b"a\r\nabc", CLOSE], id="chunked-cut-mid-chunk"),
        pytest.param([CHUNKED_HEAD + chunk(b"abc"), CLOSE], id="chunked-cut-between-chunks"),
        pytest.param([CHUNKED_HEAD + b"zz\r\nabc\r\n"], id="chunked-bad-size"),
        pytest.param([CHUNKED_HEAD + b"3\r\nabcX\r\n"], id="chunked-bad-footer"),
        pytest.param([head("content-length: 10") + b"abc", CLOSE], id="counted-cut"),
    ],
)
async def test_a_body_cut_or_broken_is_a_remote_protocol_error(answer: Answer) -> None:
    transport = Http11Transport(limits())
    async with serving(answer) as server, client_of(transport) as client:
        async with client.stream("GET", server.url()) as response:
            assert response.status_code == 200
            with anyio.fail_after(2), pytest.raises(httpx.RemoteProtocolError):
                async for _ in response.aiter_bytes():
                    pass
        assert (transport.active, transport.idle) == (0, 0)


async def test_a_silent_server_is_a_read_timeout_on_the_head() -> None:
    transport = Http11Transport(limits())
    async with (serving([FOREVER]) as server,
                client_of(transport, httpx.Timeout(None, read=0.2)) as client):
        with anyio.fail_after(HANG_GUARD), pytest.raises(httpx.ReadTimeout):
            await client.get(server.url())
        assert (transport.active, transport.idle) == (0, 0)


async def test_a_silent_server_is_a_read_timeout_on_the_body() -> None:
    transport = Http11Transport(limits())
    async with (serving([CHUNKED_HEAD + chunk(b"first"), FOREVER]) as server,
                client_of(transport, httpx.Timeout(None, read=0.2)) as client):
        pieces: list[bytes] = []
        async with client.stream("GET", server.url()) as response:
            with anyio.fail_after(HANG_GUARD), pytest.raises(httpx.ReadTimeout):
                async for piece in response.aiter_raw():
                    pieces.append(piece)
        assert pieces == [b"first"]
        assert (transport.active, transport.idle) == (0, 0)


async def test_a_read_timeout_set_after_the_head_bounds_the_body() -> None:
    """The driver hands its ``idle`` timeout to the body after the head arrived: the body's
    reads take the read timeout the request holds when the body starts."""
    transport = Http11Transport(limits())
    async with (serving([CHUNKED_HEAD, FOREVER]) as server,
                client_of(transport, httpx.Timeout(None)) as client):
        async with client.stream("GET", server.url()) as response:
            timeout = response.request.extensions["timeout"]
            response.request.extensions["timeout"] = {**timeout, "read": 0.1}
            with anyio.fail_after(HANG_GUARD), pytest.raises(httpx.ReadTimeout):
                await response.aread()
        assert (transport.active, transport.idle) == (0, 0)


async def test_a_request_cancelled_while_waiting_for_its_head_gives_everything_back() -> None:
    transport = Http11Transport(limits(max_connections=1))
    async with serving([5.0], [OK]) as server, client_of(transport) as client:
        with anyio.move_on_after(0.1) as scope:
            await client.get(server.url("/silent"))
        assert scope.cancelled_caught
        assert (transport.active, transport.idle) == (0, 0)
        with anyio.fail_after(2):
            assert (await client.get(server.url("/b"))).content == b"ok"
    assert server.connections == [1, 2]


async def test_a_request_cancelled_while_waiting_for_a_slot_takes_none() -> None:
    transport = Http11Transport(limits(max_connections=1))
    async with serving([OK]) as server, client_of(transport) as client:
        async with client.stream("GET", server.url("/a")) as held:
            with anyio.move_on_after(0.05) as scope:
                await client.get(server.url("/waits"))
            assert scope.cancelled_caught
            assert transport.active == 1
            await held.aread()
        assert transport.active == 0
        with anyio.fail_after(2):
            assert (await client.get(server.url("/b"))).content == b"ok"
    assert [request.raw.split(b" ")[1] for request in server.received] == [b"/a", b"/b"]


@pytest.mark.parametrize("separate", [False, True], ids=["one-write", "separate-writes"])
async def test_an_informational_head_is_skipped(separate: bool) -> None:
    early = head("link: </style.css>; rel=preload", status="103 Early Hints")
    answer: Answer = [early, 0.02, OK] if separate else [early + OK]
    transport = Http11Transport(limits())
    async with serving(answer) as server, client_of(transport) as client:
        response = await client.get(server.url())
        assert (response.status_code, response.content) == (200, b"ok")
        assert "link" not in response.headers
        await client.get(server.url())
    assert server.connections == [1, 1]


async def test_a_head_request_has_no_body_and_is_reused() -> None:
    transport = Http11Transport(limits())
    async with (serving([head("content-length: 1000")], [OK]) as server,
                client_of(transport) as client):
        response = await client.head(server.url())
        assert (response.headers["content-length"], response.content) == ("1000", b"")
        assert (await client.get(server.url())).content == b"ok"
    assert server.connections == [1, 1]


# -- content encoding --------------------------------------------------------------------------


@pytest.mark.parametrize("framing", ["chunked", "content-length"])
async def test_a_gzip_body_is_decoded_by_httpx(framing: str) -> None:
    text = b"".join(b"data: %d\n\n" % (n * n) for n in range(400))
    packed = gzip.compress(text)
    middle = len(packed) // 2
    halves = packed[:middle], packed[middle:]
    answer: Answer = (
        [head("content-encoding: gzip", "transfer-encoding: chunked") + chunk(halves[0]),
         0.02, chunk(halves[1]) + LAST_CHUNK]
        if framing == "chunked"
        else [head("content-encoding: gzip", f"content-length: {len(packed)}") + halves[0],
              0.02, halves[1]]
    )
    transport = Http11Transport(limits())
    async with serving(answer) as server, client_of(transport) as client:
        async with client.stream("GET", server.url()) as response:
            assert b"".join([piece async for piece in response.aiter_bytes()]) == text
        assert (transport.active, transport.idle) == (0, 1)


# -- TLS ---------------------------------------------------------------------------------------


async def test_tls_with_a_trusted_ca_and_connection_reuse() -> None:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    # The URL names 127.0.0.1 (nothing but it is contacted); the certificate names both.
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    transport = Http11Transport(limits(), ssl_context=client_context)
    async with (serving([chunked(b"secret")], tls=server_context) as server,
                client_of(transport) as client):
        assert server.origin.startswith("https://127.0.0.1:")
        assert (await client.get(server.url("/a"))).content == b"secret"
        assert (transport.active, transport.idle) == (0, 1)
        assert await read_streamed(client, server.url("/b")) == b"secret"
        assert (transport.active, transport.idle) == (0, 1)
    assert server.failed_handshakes == 0
    assert server.connections == [1, 1]


async def test_tls_with_an_untrusted_ca_is_a_connect_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    trustme.CA().issue_cert("localhost", "127.0.0.1").configure_cert(server_context)
    transport = Http11Transport(limits(), ssl_context=ssl.create_default_context())
    caplog.set_level(logging.CRITICAL, logger="anyio.streams.tls")
    async with serving([OK], tls=server_context) as server, client_of(transport) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(server.url())
        assert (transport.active, transport.idle) == (0, 0)
        with anyio.fail_after(2):
            while not server.failed_handshakes:
                await anyio.sleep(0.005)
    assert server.received == []


# -- through the library -----------------------------------------------------------------------

#: Event-stream protocols (a one-body protocol, embeddings, streams no generation).
STREAM_PROTOCOLS: Final = [
    p for p in simulated_protocols()
    if isinstance(adapters.PROTOCOLS[p].new_decoder(), SSEDecoder)
]
QUESTION: Final = UniMessage(role="user", content_items=(TextDone(text="Weather in Paris?"),))
RELAXED: Final = Timeouts(connect=5, first_event=10, idle=10, total=None)


def auto_client(sim: Simulator, protocol: str, tmp_path: Path,
                http_client: httpx.AsyncClient | None = None) -> AutoLLMClient:
    return AutoLLMClient(
        "sim-model", api_key=sim.api_key, base_url=sim.base_url(protocol),
        client_type=adapters.PROTOCOLS[protocol].compatible_client or protocol,
        http_client=http_client, timeouts=RELAXED, max_retries=0, trace_dir=tmp_path / "traces",
    )


async def collect(stream: AsyncIterator[UniEvent]) -> list[UniEvent]:
    async with aclosing(stream) as events:  # type: ignore[type-var]
        return [event async for event in events]


async def test_the_client_the_library_builds_uses_the_transport_and_a_callers_is_kept(
    tmp_path: Path, fast_transports: list[Http11Transport],
) -> None:
    protocol = STREAM_PROTOCOLS[0]
    async with Simulator.running() as sim:
        async with auto_client(sim, protocol, tmp_path) as own:
            [transport] = fast_transports
            events = await collect(own.streaming_response([QUESTION], None))
            assert events[-1].event_type == "stop"
            assert (transport.active, transport.idle) == (0, 1)  # the stream went through it
        given = httpx.AsyncClient(timeout=10.0, trust_env=False)
        async with given:
            async with auto_client(sim, protocol, tmp_path, http_client=given) as client:
                assert client._http is given
                events = await collect(client.streaming_response([QUESTION], None))
                assert events[-1].event_type == "stop"
            assert len(fast_transports) == 1  # none built for a caller's client
            assert not given.is_closed  # a caller's client is left open


@pytest.mark.parametrize("protocol", STREAM_PROTOCOLS)
async def test_sequential_streams_end_to_end(
    protocol: str, tmp_path: Path, fast_transports: list[Http11Transport],
) -> None:
    async with Simulator.running() as sim, auto_client(sim, protocol, tmp_path) as client:
        [transport] = fast_transports
        sockets = []
        for _ in range(3):
            try:
                events = await collect(client.streaming_response([QUESTION], None))
            except MMSPError as exc:  # pragma: no cover - reported as the failure
                pytest.fail(f"the stream failed: {exc!r}")
            assert events[-1].event_type == "stop"
            assert (transport.active, transport.idle) == (0, 1)
            [[connection]] = transport._idle.values()
            sockets.append(connection.stream)
    assert len(sim.requests) == 3
    # The driver closes each stream at its terminal event; the simulator writes the end of the
    # body after it, which the closing stream reads on to: the next call reuses the connection.
    assert all(socket is sockets[0] for socket in sockets)
