"""The library's HTTP/1.1 transport (``mmsp_io._transport``) against hostile answers, over
loopback sockets (the raw-socket server of ``test_transport``), under asyncio and trio.

What this proves:

* Whatever h11 raises on a response head (h11 0.14 raised a bare ``ValueError`` for a
  5,000-digit ``Content-Length``; here h11 is made to raise one) reaches the caller as the
  typed ``ProviderConnectionError`` (08 D19), chained from httpx's ``RemoteProtocolError``:
  through ``open_stream`` and through ``AutoLLMClient``. Through httpx's own transport, which
  lets h11's ``ValueError`` through, the driver reports that as ``ProviderConnectionError``
  too.
* An answer framed by both ``Transfer-Encoding: chunked`` and ``Content-Length`` is read as
  chunked, and its connection is not reused (RFC 9112 §6.3: it may be an attempt at response
  splitting), whatever the order of the two headers.
* A head that arrives one byte per read costs linear work: the bytes the search for its end
  looks at stay within four times its length (each search starts two bytes back), for a head
  just under ``MAX_HEAD_BYTES`` and for one refused at that limit (a search that started over
  at each read would look at about ``length ** 2 / 2`` bytes). The limit is lowered to 16 KiB
  there: a read per byte of the real 100 KiB costs seconds, and the ratio shows at any size.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

import anyio
import h11
import httpx
import pytest
from httpfakes import json_pipeline
from test_transport import (
    FOREVER,
    HANG_GUARD,
    LAST_CHUNK,
    OK,
    chunk,
    client_of,
    head,
    limits,
    serving,
)

from mmsp_core import HTTPRequest, ProviderConnectionError, TextDone, UniMessage
from mmsp_io import AutoLLMClient, Timeouts, open_stream
from mmsp_io import _transport as transport_module
from mmsp_io._transport import Http11Transport

pytestmark = pytest.mark.anyio

REQUEST: Final = HTTPRequest("POST", "/stream", (("content-type", "application/json"),), b"{}")
RELAXED: Final = Timeouts(connect=5, first_event=10, idle=10, total=None)


# -- any error on a head is typed -------------------------------------------------------------


@pytest.fixture(params=[ValueError, TypeError, IndexError])
def h11_fails(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> type[Exception]:
    """h11 raises this (no ``h11.RemoteProtocolError``) on every response head it parses."""
    error: type[Exception] = request.param

    def next_event(self: h11.Connection) -> object:
        raise error("Content-Length of 5000 digits")

    monkeypatch.setattr(h11.Connection, "next_event", next_event)
    return error


async def test_any_error_h11_raises_on_a_head_is_a_connection_error_through_open_stream(
    h11_fails: type[Exception], fake_clock: Callable[[], int],
) -> None:
    transport = Http11Transport(limits())
    async with serving([OK]) as server, client_of(transport) as client:
        with pytest.raises(ProviderConnectionError) as caught:
            async with open_stream(client, server.url("/stream"), REQUEST,
                                   json_pipeline(fake_clock), client="test", timeouts=RELAXED):
                pytest.fail("no stream without a head")
        assert (transport.active, transport.idle) == (0, 0)
    assert caught.value.client == "test"
    assert "5000 digits" in caught.value.reason
    cause = caught.value.__cause__
    assert isinstance(cause, httpx.RemoteProtocolError)
    assert isinstance(cause.__cause__, h11_fails)


async def test_h11s_value_error_under_httpx_own_transport_is_a_connection_error_too(
    monkeypatch: pytest.MonkeyPatch, fake_clock: Callable[[], int],
) -> None:
    """httpcore maps only h11's ``RemoteProtocolError``; the driver reports the
    ``ValueError`` h11 0.14 raised as what it is, a head that could not be read (a caller's
    ``httpx.AsyncClient()`` and the MMSP server's upstream clients take this path)."""

    def next_event(self: h11.Connection) -> object:
        raise ValueError("Content-Length of 5000 digits")

    monkeypatch.setattr(h11.Connection, "next_event", next_event)
    async with serving([OK]) as server, httpx.AsyncClient(trust_env=False) as client:
        with pytest.raises(ProviderConnectionError) as caught:
            async with open_stream(client, server.url("/stream"), REQUEST,
                                   json_pipeline(fake_clock), client="test", timeouts=RELAXED):
                pytest.fail("no stream without a head")
    assert caught.value.reason == (
        "the response head could not be read: Content-Length of 5000 digits")
    assert isinstance(caught.value.__cause__, ValueError)


async def test_any_error_h11_raises_on_a_head_is_a_connection_error_through_the_client(
    h11_fails: type[Exception], fast_transports: list[Http11Transport],
) -> None:
    question = UniMessage(role="user", content_items=(TextDone(text="hi"),))
    async with serving([OK]) as server:
        client = AutoLLMClient("gpt-test", api_key="sk-test-key", base_url=server.url("/v1"),
                               client_type="openai-chat", timeouts=RELAXED, max_retries=0)
        async with client:
            assert len(fast_transports) == 1  # the client's own is the library's transport
            with pytest.raises(ProviderConnectionError) as caught:
                async for _ in client.streaming_response([question], None):
                    pytest.fail("no event without a head")
    assert isinstance(caught.value.__cause__, httpx.RemoteProtocolError)


# -- both Transfer-Encoding and Content-Length -----------------------------------------------


@pytest.mark.parametrize("headers", [
    ("transfer-encoding: chunked", "content-length: 5"),
    ("content-length: 5", "transfer-encoding: chunked"),
    ("Content-Length: 100", "Transfer-Encoding: chunked"),
], ids=["chunked-first", "length-first", "longer-length"])
async def test_an_answer_framed_both_ways_is_read_as_chunked_and_not_reused(
    headers: tuple[str, str],
) -> None:
    answer = head(*headers) + chunk(b"hello") + chunk(b" world") + LAST_CHUNK
    transport = Http11Transport(limits())
    async with serving([answer], [OK]) as server, client_of(transport) as client:
        first = await client.get(server.url("/a"))
        assert first.content == b"hello world"
        assert (transport.active, transport.idle) == (0, 0)
        assert (await client.get(server.url("/b"))).content == b"ok"
    assert server.connections == [1, 2]


# -- a head that trickles in ------------------------------------------------------------------


#: The head limit of the one-byte-read tests.
SMALL_HEAD_LIMIT = 16 * 1024


class CountingSearch:
    """A stand-in for the transport's ``BLANK_LINE`` pattern that counts the bytes each
    search may look at: from where it starts to the end of the buffer."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern
        self.scanned = 0

    def search(self, buffer: bytes | bytearray, pos: int = 0) -> re.Match[bytes] | None:
        self.scanned += len(buffer) - pos
        return self.pattern.search(buffer, pos)


@pytest.fixture
def one_byte_reads(monkeypatch: pytest.MonkeyPatch) -> CountingSearch:
    """Every socket read of the transport takes one byte; its head searches are counted; a
    head may be 16 KiB long (``SMALL_HEAD_LIMIT``)."""
    counting = CountingSearch(transport_module.BLANK_LINE)
    monkeypatch.setattr(transport_module, "READ_SIZE", 1)
    monkeypatch.setattr(transport_module, "MAX_HEAD_BYTES", SMALL_HEAD_LIMIT)
    monkeypatch.setattr(transport_module, "BLANK_LINE", counting)
    return counting


async def test_a_head_one_byte_per_read_costs_linear_work(one_byte_reads: CountingSearch) -> None:
    filler = "a" * (SMALL_HEAD_LIMIT - 200)
    answer = head(f"x-filler: {filler}", "content-length: 2") + b"ok"
    assert SMALL_HEAD_LIMIT - 200 < len(answer) <= SMALL_HEAD_LIMIT
    transport = Http11Transport(limits())
    async with serving([answer]) as server, client_of(transport, httpx.Timeout(None)) as client:
        with anyio.fail_after(HANG_GUARD):
            response = await client.get(server.url())
    assert (response.headers["x-filler"], response.content) == (filler, b"ok")
    assert one_byte_reads.scanned <= 4 * len(answer)


async def test_a_head_too_long_one_byte_per_read_costs_linear_work(
    one_byte_reads: CountingSearch,
) -> None:
    answer = b"HTTP/1.1 200 OK\r\nx-big: " + b"a" * SMALL_HEAD_LIMIT
    transport = Http11Transport(limits())
    async with (serving([answer, FOREVER]) as server,
                client_of(transport, httpx.Timeout(None)) as client):
        with (anyio.fail_after(HANG_GUARD),
              pytest.raises(httpx.RemoteProtocolError, match="too long")):
            await client.get(server.url())
        assert (transport.active, transport.idle) == (0, 0)
    assert one_byte_reads.scanned <= 4 * len(answer)
