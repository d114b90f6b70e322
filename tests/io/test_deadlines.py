"""The named timeouts over real loopback sockets, through httpx's own transport and through the
library's (``mmsp_io._transport``), each test on both (08 D22, D62).

After the first event, ``open_stream`` hands ``idle`` to httpx's read timeout when the
response came from httpx's own transport or the library's (each bounds every socket read; the
response's extensions tell which), instead of a deadline of its own around each read. These
tests pin that the four timeouts behave exactly as over ``MockTransport`` (``test_driver.py``):
``idle`` after the first event, the caller's tighter read timeout, ``total`` kept, the header
wait not bounded by ``idle``, keep-alive comments and the time the caller holds an event; and
that any other transport is not trusted.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import httpx
import pytest
from httpfakes import delta, json_pipeline, mock_client, sse, stop

from mmsp_core import HTTPRequest, StreamTimeoutError, UniEvent
from mmsp_io import Timeouts, open_stream
from mmsp_io._transport import Http11Transport, fast_http_client
from mmsp_io.driver import _hand_idle_to

pytestmark = pytest.mark.anyio

REQUEST = HTTPRequest("POST", "/stream", (("content-type", "application/json"),), b"{}")
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"

#: A script step: bytes of the body (sent as one HTTP chunk), or a pause in seconds.
Step = bytes | float


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _serve_one(stream: anyio.abc.SocketStream, head_delay: float,
                     script: Sequence[Step]) -> None:
    async with stream:
        received = b""
        while b"\r\n\r\n" not in received:
            received += await stream.receive()
        await anyio.sleep(head_delay)
        await stream.send(HEAD)
        try:
            for step in script:
                if isinstance(step, bytes):
                    await stream.send(chunk(step))
                else:
                    await anyio.sleep(step)
            await stream.send(b"0\r\n\r\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the client left, as it should after a timeout


@asynccontextmanager
async def server(script: Sequence[Step], *, head_delay: float = 0.0) -> AsyncIterator[str]:
    """A loopback HTTP/1.1 server that answers every request with ``script``; yields its URL."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)

    async def handle(stream: anyio.abc.SocketStream) -> None:
        await _serve_one(stream, head_delay, script)

    async with listener, anyio.create_task_group() as tasks:
        tasks.start_soon(listener.serve, handle)
        yield f"http://127.0.0.1:{port}/stream"
        tasks.cancel_scope.cancel()


@pytest.fixture(params=["httpx", "library"])
def transport(request: pytest.FixtureRequest) -> str:
    """Which transport carries the test's requests: httpx's own or the library's."""
    return str(request.param)


def http_client(transport: str, timeout: httpx.Timeout | None = None) -> httpx.AsyncClient:
    """A client of ``transport`` with ``timeout`` as its own."""
    if transport == "httpx":
        return httpx.AsyncClient(timeout=timeout)
    return httpx.AsyncClient(timeout=timeout, transport=Http11Transport(httpx.Limits()))


async def run(url: str, timeouts: Timeouts, clock: Callable[[], int], *,
              http_client: httpx.AsyncClient, hold: float = 0.0) -> list[UniEvent]:
    events = []
    async with http_client as client, open_stream(
        client, url, REQUEST, json_pipeline(clock), client="test", timeouts=timeouts
    ) as stream:
        async for event in stream:
            events.append(event)
            await anyio.sleep(hold)
    return events


#: The stalls of these scripts never end: a timeout that does not fire hangs the test, which
#: this guard turns into a failure (it bounds a hang and measures nothing, 08 D80).
HANG_GUARD = 60.0
FOREVER = math.inf


async def timed_out(url: str, timeouts: Timeouts, clock: Callable[[], int],
                    **options: Any) -> StreamTimeoutError:
    with anyio.fail_after(HANG_GUARD), pytest.raises(StreamTimeoutError) as caught:
        await run(url, timeouts, clock, **options)
    return caught.value


FIRST = sse(delta("Hel"))
REST = sse(delta("lo"), stop())


async def test_idle_after_the_first_event(fake_clock: Callable[[], int], transport: str) -> None:
    async with server([FIRST, FOREVER, REST]) as url:
        error = await timed_out(url, Timeouts(idle=0.3), fake_clock,
                                http_client=http_client(transport))
    assert (error.which, error.seconds) == ("idle", 0.3)


async def test_the_callers_tighter_read_timeout_reports_as_idle(
    fake_clock: Callable[[], int], transport: str
) -> None:
    # ``idle`` alone would outlast the hang guard.
    async with server([FIRST, FOREVER, REST]) as url:
        http = http_client(transport, httpx.Timeout(None, read=0.2))
        error = await timed_out(url, Timeouts(idle=10 * HANG_GUARD), fake_clock,
                                http_client=http)
    assert (error.which, error.seconds) == ("idle", 0.2)


async def test_keep_alive_comments_and_holding_events_do_not_expire_idle(
    fake_clock: Callable[[], int], transport: str
) -> None:
    pings = [step for _ in range(6) for step in (0.1, b": ping\n\n")]
    async with server([FIRST, *pings, REST]) as url:
        events = await run(url, Timeouts(idle=0.3), fake_clock, hold=0.4,
                           http_client=http_client(transport))
    assert [event.event_type for event in events][-1] == "stop"


async def test_total_is_kept_after_the_first_event(
    fake_clock: Callable[[], int], transport: str
) -> None:
    async with server([FIRST, FOREVER, REST]) as url:
        error = await timed_out(url, Timeouts(idle=10 * HANG_GUARD, total=0.4), fake_clock,
                                http_client=http_client(transport))
    assert (error.which, error.seconds) == ("total", 0.4)


async def test_idle_does_not_bound_the_wait_for_headers(
    fake_clock: Callable[[], int], transport: str
) -> None:
    # The header wait is first_event's (and the caller's read timeout's), never idle's.
    async with server([FIRST, REST], head_delay=0.5) as url:
        events = await run(url, Timeouts(idle=0.2, first_event=5.0), fake_clock,
                           http_client=http_client(transport))
    assert events[-1].event_type == "stop"


async def test_first_event_still_bounds_the_first_reads(
    fake_clock: Callable[[], int], transport: str
) -> None:
    pings = [step for _ in range(20) for step in (0.05, b": ping\n\n")]
    async with server([*pings, FIRST, REST]) as url:
        error = await timed_out(url, Timeouts(idle=0.3, first_event=0.3), fake_clock,
                                http_client=http_client(transport))
    assert (error.which, error.seconds) == ("first_event", 0.3)


async def test_idle_bounds_the_reads_before_the_first_event(
    fake_clock: Callable[[], int], transport: str
) -> None:
    # Before the first event the reads share one first_event scope; idle is the transport's.
    async with server([b": ping\n\n", FOREVER, FIRST, REST]) as url:
        error = await timed_out(url, Timeouts(idle=0.3, first_event=10 * HANG_GUARD), fake_clock,
                                http_client=http_client(transport))
    assert (error.which, error.seconds) == ("idle", 0.3)


async def test_only_responses_of_httpx_own_transport_and_the_librarys_are_trusted() -> None:
    # The driver tells the transport by the response's extensions (08 D79): httpcore's
    # ``network_stream``, the library's ``BODY_EXTENSION``; a mock's response has neither.
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200)

    clients = [(httpx.AsyncClient(), True), (fast_http_client(), True),
               (mock_client(handler), False)]
    async with server([FIRST, REST]) as url:
        for client, trusted in clients:
            async with client:
                request = client.build_request("GET", url, timeout=httpx.Timeout(None, read=9.0))
                response = await client.send(request, stream=True)
                handed = _hand_idle_to(response, request, 2.0)
                await response.aread()
            assert handed is trusted
            assert request.extensions["timeout"]["read"] == (2.0 if trusted else 9.0)


async def test_a_mock_transport_keeps_per_read_deadlines(fake_clock: Callable[[], int]) -> None:
    from httpfakes import Body

    body = Body(FIRST, FOREVER, REST)
    error = await timed_out("https://provider.test/stream", Timeouts(idle=0.2), fake_clock,
                            http_client=mock_client(
                                lambda request: httpx.Response(200, stream=body)))
    assert (error.which, error.seconds) == ("idle", 0.2)
