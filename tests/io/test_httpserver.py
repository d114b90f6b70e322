"""The h11 server core on its own: real loopback sockets, no simulator involved."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
import h11
import httpx
import pytest

from mmsp_io.httpserver import Limits, Request, Response, serve

pytestmark = pytest.mark.anyio

SMALL = Limits(max_head_bytes=1024, max_body_bytes=100, linger_seconds=5.0)


async def echo(request: Request, response: Response) -> None:
    """Answer with the method, path, query and body it got."""
    body = f"{request.method} {request.path} {request.query} ".encode() + request.body
    await response.respond(200, [("content-type", "text/plain")], body)


async def raw_exchange(url: str, data: bytes, *, until: bytes) -> bytes:
    """Send raw bytes to the server, read until ``until`` has arrived or the server closes."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    received = b""
    async with await anyio.connect_tcp(host, int(port)) as stream:
        await stream.send(data)
        with anyio.fail_after(5):
            while until not in received:
                try:
                    received += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    break
    return received


async def test_a_whole_response_and_keep_alive() -> None:
    async with serve(echo) as server, httpx.AsyncClient() as http:
        assert server.url.startswith("http://127.0.0.1:")
        first = await http.post(server.url + "/a?x=1", content=b"hello")
        second = await http.get(server.url + "/b")
    assert first.content == b"POST /a x=1 hello"
    assert first.headers["content-length"] == str(len(first.content))
    assert second.content == b"GET /b  "
    assert first.extensions["network_stream"] is second.extensions["network_stream"]


async def test_a_streamed_body_goes_out_chunked_as_it_is_sent() -> None:
    async def stream(request: Request, response: Response) -> None:
        await response.start(200, [("content-type", "text/event-stream")])
        for n in range(3):
            await response.send(f"data: {n}\n\n".encode())
            await anyio.sleep(0.01)
        await response.end()

    async with (
        serve(stream) as server,
        httpx.AsyncClient() as http,
        http.stream("GET", server.url + "/events") as r,
    ):
        chunks = [chunk async for chunk in r.aiter_raw()]
    assert r.headers["transfer-encoding"] == "chunked"
    assert b"".join(chunks) == b"data: 0\n\ndata: 1\n\ndata: 2\n\n"
    assert len(chunks) == 3


async def test_pipelined_requests_are_answered_in_order() -> None:
    request = b"GET /%d HTTP/1.1\r\nHost: t\r\n\r\n"
    async with serve(echo) as server:
        received = await raw_exchange(
            server.url, request % 1 + request % 2, until=b"GET /2  "
        )
    assert received.count(b"HTTP/1.1 200 ") == 2
    assert received.index(b"GET /1  ") < received.index(b"GET /2  ")


async def test_pipelined_requests_past_the_read_ahead_bound_are_all_answered_in_order() -> None:
    """Three 700 KB uploads sent at once, each answered slowly: the connection's reader pauses
    once h11 holds ``_PIPELINE_BYTES`` not yet read, and goes on as the requests are read, so
    every one is answered, in order, with its whole body."""
    sizes = [700_000, 700_001, 700_002]

    async def sized(request: Request, response: Response) -> None:
        await anyio.sleep(0.02)
        await response.respond(200, [], b"%s %d;" % (request.path.encode(), len(request.body)))

    pipelined = b"".join(b"POST /%d HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n"
                         % (n, size) + b"x" * size for n, size in enumerate(sizes))
    async with serve(sized) as server:
        received = await raw_exchange(server.url, pipelined, until=b"/2 700002;")
    assert received.count(b"HTTP/1.1 200 ") == 3
    assert b"/0 700000;" in received
    assert received.index(b"/0 700000;") < received.index(b"/1 700001;") < received.index(
        b"/2 700002;")


async def test_bytes_pipelined_while_a_response_is_written_are_held_up_to_the_bound() -> None:
    """A client that sends 4 MB behind its first request while that one is answered slowly:
    the server holds at most ``_PIPELINE_BYTES`` and one read of them meanwhile, and then
    reads the next request, its 4 MB body whole, as usual."""
    from mmsp_io.httpserver import _connection

    held: list[int] = []

    async def slow(request: Request, response: Response) -> None:
        if request.path == "/first":
            await anyio.sleep(0.3)
            held.append(len(response._connection.conn.trailing_data[0]))
        await response.respond(200, [], b"ok")

    big = 4 * 1024 * 1024
    data = (b"GET /first HTTP/1.1\r\nHost: t\r\n\r\n"
            b"POST /next HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % big
            + b"x" * big)
    limits = Limits(max_body_bytes=8 * 1024 * 1024)
    async with serve(slow, limits=limits) as server:
        received = await raw_exchange(server.url, data, until=b"ok" + b"HTTP/1.1 200 ")
    bound = _connection._PIPELINE_BYTES + _connection._RECEIVE_SIZE
    assert len(held) == 1 and 0 < held[0] <= bound
    assert received.count(b"HTTP/1.1 200 ") == 2


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
async def test_a_body_over_the_limit_is_answered_413_then_closed(declared: bool) -> None:
    seen: list[Request] = []

    async def record(request: Request, response: Response) -> None:
        seen.append(request)
        await echo(request, response)

    async def pieces() -> AsyncIterator[bytes]:
        for _ in range(50):
            yield b"x" * 10

    content = b"x" * 500 if declared else pieces()
    async with serve(record, limits=SMALL) as server, httpx.AsyncClient() as http:
        refused = await http.post(server.url + "/big", content=content)
        fine = await http.post(server.url + "/small", content=b"x" * 100)
    assert refused.status_code == 413
    assert refused.headers["connection"] == "close"
    assert fine.status_code == 200
    assert [r.path for r in seen] == ["/small"]
    assert refused.extensions["network_stream"] is not fine.extensions["network_stream"]


async def test_a_head_over_the_limit_is_431_and_bad_http_is_400() -> None:
    async with serve(echo, limits=SMALL) as server, httpx.AsyncClient() as http:
        big_head = await http.get(server.url + "/", headers={"x-filler": "y" * 2000})
        garbage = await raw_exchange(server.url, b"NOT HTTP AT ALL\r\n\r\n", until=b"\r\n\r\n")
    assert big_head.status_code == 431
    assert garbage.startswith(b"HTTP/1.1 400 ")


async def test_expect_100_continue_is_answered() -> None:
    head = b"POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"
    async with serve(echo) as server:
        received = await raw_exchange(server.url, head, until=b"\r\n\r\n")
    assert received.startswith(b"HTTP/1.1 100 ")


async def test_the_client_leaving_mid_response_cancels_the_handler_and_is_seen() -> None:
    outcomes: list[bool] = []
    cancelled = anyio.Event()

    async def forever(request: Request, response: Response) -> None:
        await response.start(200, [("content-type", "text/event-stream")])
        try:
            while True:
                await response.send(b": ping\n\n")
                await anyio.sleep(0.01)
        finally:
            outcomes.append(response.client_gone)
            cancelled.set()

    async with serve(forever) as server, httpx.AsyncClient() as http:
        async with http.stream("GET", server.url + "/") as r:
            await r.aiter_raw().__anext__()
        with anyio.fail_after(5):
            await cancelled.wait()
    assert outcomes == [True]


async def test_a_cut_is_no_disconnect() -> None:
    outcomes: list[bool] = []

    async def cut(request: Request, response: Response) -> None:
        await response.start(200, [("content-length", "100")])
        await response.send(b"partial")
        await response.cut()
        outcomes.append(response.client_gone)

    async with serve(cut) as server, httpx.AsyncClient() as http:
        with pytest.raises(httpx.RemoteProtocolError):
            await http.get(server.url + "/")
    assert outcomes == [False]


async def test_a_failing_handler_is_a_500_and_the_server_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def handler(request: Request, response: Response) -> None:
        if request.path == "/boom":
            raise KeyError("boom")
        if request.path == "/silent":
            return
        await echo(request, response)

    async with serve(handler) as server, httpx.AsyncClient() as http:
        boom = await http.get(server.url + "/boom")
        silent = await http.get(server.url + "/silent")
        fine = await http.get(server.url + "/fine")
    assert (boom.status_code, silent.status_code, fine.status_code) == (500, 500, 200)
    assert "the handler failed" in caplog.text
    assert "the handler sent no response" in caplog.text


async def test_graceful_close_lets_an_exchange_finish_within_grace() -> None:
    started = anyio.Event()

    async def slow(request: Request, response: Response) -> None:
        started.set()
        await anyio.sleep(0.1)
        await response.respond(200, body=b"finished")

    answers: list[bytes] = []
    async with (
        httpx.AsyncClient() as http,
        anyio.create_task_group() as tasks,
        serve(slow, grace=5.0) as server,
    ):
        async def call() -> None:
            answers.append((await http.get(server.url + "/")).content)

        tasks.start_soon(call)
        await started.wait()
    assert answers == [b"finished"]


async def test_closing_without_grace_cancels_exchanges_in_progress() -> None:
    started = anyio.Event()
    outcomes: list[str] = []

    async def stuck(request: Request, response: Response) -> None:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            outcomes.append("cancelled")

    async with (
        httpx.AsyncClient() as http,
        anyio.create_task_group() as tasks,
        serve(stuck) as server,
    ):
        async def call() -> None:
            with pytest.raises(httpx.RemoteProtocolError):
                await http.get(server.url + "/")

        tasks.start_soon(call)
        await started.wait()
    assert outcomes == ["cancelled"]


async def test_an_error_in_the_block_propagates_unwrapped() -> None:
    with pytest.raises(KeyError):
        async with serve(echo):
            raise KeyError("from the test")


class _Writes:
    """A connection's stream that records each write (one ``send`` is one write)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    async def send(self, data: bytes) -> None:
        self.writes.append(data)


class _FakeConnection:
    """What a ``Response`` uses of its connection: h11's state after a request, and the
    stream it writes to."""

    def __init__(self) -> None:
        self.conn = h11.Connection(h11.SERVER)
        self.conn.receive_data(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        assert isinstance(self.conn.next_event(), h11.Request)
        assert isinstance(self.conn.next_event(), h11.EndOfMessage)
        self.stream = _Writes()


def _response() -> tuple[Response, list[bytes]]:
    connection = _FakeConnection()
    return Response(cast(Any, connection)), connection.stream.writes


def _client_reads(writes: list[bytes]) -> tuple[int, bytes, bool]:
    """Status, body and whether the body ended, as a client reads the bytes written."""
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
    client.send(h11.EndOfMessage())
    client.receive_data(b"".join(writes))
    status, body, ended = 0, b"", False
    while (event := client.next_event()) is not h11.NEED_DATA:
        if isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            ended = True
            break
    return status, body, ended


async def test_a_held_head_goes_with_the_first_bytes_and_end_carries_the_last() -> None:
    response, writes = _response()
    await response.start(200, [("content-type", "text/event-stream")], hold=True)
    assert writes == []  # held
    await response.send(b"data: 1\n\n")
    await response.send(b"data: 2\n\n")
    await response.end(b"data: [DONE]\n\n")
    assert len(writes) == 3  # head and first chunk; second chunk; last chunk and the end
    assert writes[0].startswith(b"HTTP/1.1 200 ") and writes[0].endswith(b"data: 1\n\n\r\n")
    assert _client_reads(writes) == (200, b"data: 1\n\ndata: 2\n\ndata: [DONE]\n\n", True)
    assert response.complete


async def test_a_head_not_held_goes_at_once_and_respond_is_one_write() -> None:
    response, writes = _response()
    await response.start(200)
    assert len(writes) == 1 and writes[0].startswith(b"HTTP/1.1 200 ")
    await response.end()
    assert _client_reads(writes) == (200, b"", True) and len(writes) == 2

    whole, whole_writes = _response()
    await whole.respond(404, [("content-type", "text/plain")], b"no such thing")
    assert len(whole_writes) == 1
    assert _client_reads(whole_writes) == (404, b"no such thing", True)


async def test_a_held_head_alone_goes_out_with_the_end() -> None:
    ended, writes = _response()
    await ended.start(204, hold=True)
    await ended.end()
    assert len(writes) == 1 and _client_reads(writes) == (204, b"", True)
