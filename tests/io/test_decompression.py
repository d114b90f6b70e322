"""Content codings (``mmsp_io._decoding``): the driver decodes a body's
``Content-Encoding`` itself, in bounded steps, on every transport.

What this proves, over loopback sockets on both transports a stream can take (the library's
own, ``Http11Transport``, and httpx's, as in a caller's ``httpx.AsyncClient()`` and the MMSP
server's upstream clients), under asyncio and trio:

* Decompression bombs meet the limits of a body in decoded bytes, with their typed
  ``StreamLimitError``, and memory (``tracemalloc``'s peak over the call) stays within a few
  times the limit: a gzip body of 64 MiB of zeros against an event stream's line limit, a
  one-body decoder's body limit, ``fetch_body``'s limit; its preview as a non-2xx answer is
  ``ProviderHTTPError`` just as boundedly. Before, httpx inflated each read whole: 64 KiB of
  such gzip became 64 MiB at once.
* A body in several codings (``gzip, gzip``: the nested bomb, in one header or two) or in one
  that is not decoded (``br``, ``zstd``, ``compress``) is refused with
  ``ProviderConnectionError`` naming its coding, without a byte of it being decoded; a
  non-2xx answer in such a coding keeps its status (``ProviderHTTPError``). Before, httpx
  inflated nested gzip without bound and passed an unknown coding through as if it were none.
* Through the MMSP server: a row's upstream answering a bomb ends the caller's stream with the
  typed error event, the server's memory bounded (its upstream clients are plain httpx
  clients, read through the same driver).
* Requests ask only for what is decoded (``Accept-Encoding: gzip, deflate``), whatever the
  client's own default says.
* A normal stream still decodes: gzip, ``x-gzip``, deflate (zlib's format and raw), and
  ``identity`` tokens, in every chunking of the compressed bytes, a body whose reads decode to
  more than one step, and over both transports (the library's then keeps the connection).
* A compressed body cut short or broken is a cut body (08 D19): a one-JSON-body answer
  (embeddings) whose gzip stream is truncated is ``IncompleteStreamError``, not
  ``MalformedEventError``; so is a cut or corrupt gzip event stream, or one with bytes after
  its end, chained from the decoding error.
"""

from __future__ import annotations

import functools
import gzip
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import httpx
import pytest
from httpfakes import Body, delta, json_pipeline, mock_client, peak_memory, sse, stop
from serverkit import TOKEN, post_stream, running, stream_body
from test_transport import chunk, client_of, counted, head, limits, serving

import adapters
from mmsp_core import (
    HTTPRequest,
    IncompleteStreamError,
    JsonEventsMachine,
    ProviderConnectionError,
    ProviderHTTPError,
    StreamLimitError,
    StreamPipeline,
    TextDone,
    UniEvent,
)
from mmsp_core.model import EmbeddingDone, UsageMetadata
from mmsp_core.sse import BodyDecoder, SSEDecoder
from mmsp_core.testing import assert_stream_grammar, chunkings
from mmsp_io import Timeouts, open_stream
from mmsp_io._decoding import ACCEPT_ENCODING, DECODED_STEP
from mmsp_io._transport import Http11Transport
from mmsp_io.driver import fetch_body
from mmsp_io.server import Gateway

pytestmark = pytest.mark.anyio

#: The limit of every body in these tests (the pipelines' decoders, ``fetch_body``).
LIMIT: Final = 1 << 20
#: How far above the limit memory may peak during a call (one decoded step, the decoder's own
#: growth, the loopback server's bytes and the event loop's own allocations fit well within).
PEAK: Final = 4 * LIMIT
REQUEST: Final = HTTPRequest("POST", "/stream", (("content-type", "application/json"),), b"{}")
RELAXED: Final = Timeouts(connect=5, first_event=10, idle=10, total=None)
URL: Final = "https://provider.test/v1/stream"
#: A normal event stream, and its text.
STREAM: Final = sse(delta("Hel"), delta("lo"), stop())


@functools.cache
def gzip_of_zeros(size: int) -> bytes:
    """``size`` zero bytes in the gzip format (built a MiB at a time: about ``size / 1000``
    bytes)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    parts = [compressor.compress(block) for _ in range(size >> 20)]
    return b"".join([*parts, compressor.flush()])


#: A single-gzip bomb: 64 KiB that inflate to 64 MiB.
BOMB: Final = 64 << 20
#: A nested bomb: gzip of the gzip of 64 MiB of zeros, a few hundred bytes.
NESTED: Final = gzip.compress(gzip_of_zeros(BOMB), 9)




@pytest.fixture(params=["library", "httpx"])
def transport(request: pytest.FixtureRequest) -> str:
    """The transport that carries the test's requests: the library's own or httpx's."""
    return str(request.param)


def http_client(transport: str) -> httpx.AsyncClient:
    if transport == "library":
        return client_of(Http11Transport(limits()), httpx.Timeout(10.0))
    return httpx.AsyncClient(timeout=10.0, trust_env=False)


def sse_pipeline(clock: Callable[[], int]) -> StreamPipeline:
    return StreamPipeline(JsonEventsMachine("test"), client="test", clock=clock,
                          decoder=SSEDecoder(max_line_bytes=LIMIT, max_event_bytes=LIMIT))


def body_pipeline(clock: Callable[[], int]) -> StreamPipeline:
    return StreamPipeline(JsonEventsMachine("test"), client="test", clock=clock,
                          decoder=BodyDecoder(max_body_bytes=LIMIT))


async def stream_events(client: httpx.AsyncClient, url: str,
                        pipeline: StreamPipeline) -> list[UniEvent]:
    """The events of one ``open_stream`` call (errors propagate)."""
    async with open_stream(client, url, REQUEST, pipeline, client="test",
                           timeouts=RELAXED) as stream:
        return [event async for event in stream]


def encoded(body: bytes, coding: str = "gzip", *, status: str = "200 OK") -> bytes:
    """A whole answer of ``body`` with a ``Content-Encoding`` and a ``Content-Length``."""
    return counted(body, f"content-encoding: {coding}", status=status)


# -- bombs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "what"), [("event-stream", "SSE line"),
                                             ("one-body", "response body")])
async def test_a_gzip_bomb_meets_the_pipelines_limit_in_decoded_bytes(
    kind: str, what: str, transport: str, fake_clock: Callable[[], int],
) -> None:
    pipeline = (sse_pipeline if kind == "event-stream" else body_pipeline)(fake_clock)
    async with serving([encoded(gzip_of_zeros(BOMB))]) as server, \
            http_client(transport) as client:
        with peak_memory() as peak, pytest.raises(StreamLimitError) as caught:
            await stream_events(client, server.url(), pipeline)
    assert (caught.value.what, caught.value.limit) == (what, LIMIT)
    assert peak[0] < PEAK


async def test_a_gzip_bomb_meets_fetch_bodys_limit_in_decoded_bytes(transport: str) -> None:
    async with serving([encoded(gzip_of_zeros(BOMB))]) as server, \
            http_client(transport) as client:
        with peak_memory() as peak, pytest.raises(StreamLimitError) as caught:
            await fetch_body(client, server.url(), client="test", timeouts=RELAXED, limit=LIMIT)
    assert (caught.value.what, caught.value.limit) == ("response body", LIMIT)
    assert peak[0] < PEAK


async def test_a_gzip_bomb_as_an_error_body_gives_a_bounded_preview(
    transport: str, fake_clock: Callable[[], int],
) -> None:
    answer = encoded(gzip_of_zeros(BOMB), status="503 Service Unavailable")
    async with serving([answer]) as server, http_client(transport) as client:
        with peak_memory() as peak, pytest.raises(ProviderHTTPError) as caught:
            await stream_events(client, server.url(), sse_pipeline(fake_clock))
    assert caught.value.status == 503
    assert peak[0] < PEAK


REFUSED_CODINGS: Final = {
    "gzip, gzip": [encoded(NESTED, "gzip, gzip")],
    "gzip, gzip (two headers)": [
        counted(NESTED, "content-encoding: gzip", "content-encoding: gzip")],
    "deflate, gzip": [encoded(NESTED, "deflate, gzip")],
    "br": [encoded(b"\x0b\x02\x80hello\x03", "br")],
    "zstd": [encoded(b"(\xb5/\xfd\x00Xhello", "zstd")],
    "compress": [encoded(b"\x1f\x9dhello", "compress")],
}


@pytest.mark.parametrize("coding", list(REFUSED_CODINGS))
async def test_several_codings_or_an_unknown_one_are_refused(
    coding: str, transport: str, fake_clock: Callable[[], int],
) -> None:
    async with serving(REFUSED_CODINGS[coding]) as server, http_client(transport) as client:
        with peak_memory() as peak, pytest.raises(ProviderConnectionError) as caught:
            await stream_events(client, server.url(), sse_pipeline(fake_clock))
        with pytest.raises(ProviderConnectionError) as fetched:
            await fetch_body(client, server.url(), client="test", timeouts=RELAXED, limit=LIMIT)
    shown = coding.removesuffix(" (two headers)")
    assert f"Content-Encoding is {shown!r}" in caught.value.reason
    assert fetched.value.reason == caught.value.reason
    assert peak[0] < PEAK


async def test_a_non_2xx_answer_in_a_refused_coding_keeps_its_status(
    transport: str, fake_clock: Callable[[], int],
) -> None:
    answer = counted(NESTED, "content-encoding: gzip, gzip", "retry-after: 7",
                     status="429 Too Many Requests")
    async with serving([answer]) as server, http_client(transport) as client:
        with pytest.raises(ProviderHTTPError) as caught:
            await stream_events(client, server.url(), sse_pipeline(fake_clock))
    assert (caught.value.status, caught.value.retry_after) == (429, 7.0)


# -- through the MMSP server ------------------------------------------------------------------


@asynccontextmanager
async def gateway_over(answer: bytes, tmp_path: Path) -> AsyncIterator[str]:
    """The MMSP server (its own front end) with one row, ``bomb``, whose upstream answers
    ``answer``; yields its origin."""
    async with serving([answer]) as upstream:
        row = {"server_model_id": "bomb", "model_id": "gpt-test", "api_key": "sk-upstream-key",
               "base_url": upstream.url("/v1"), "client_type": "openai-chat"}
        gateway = Gateway({"models": [row], "api_keys": [TOKEN]}, timeouts=RELAXED,
                          max_retries=0, trace_dir=tmp_path)
        async with running(gateway, "h11") as origin:
            yield origin


@pytest.mark.parametrize(("bomb", "error_type"), [
    pytest.param(encoded(gzip_of_zeros(BOMB)), "StreamLimitError", id="gzip"),
    pytest.param(encoded(NESTED, "gzip, gzip"), "ProviderConnectionError", id="gzip-gzip"),
])
async def test_the_servers_upstream_calls_decode_boundedly(
    bomb: bytes, error_type: str, tmp_path: Path,
) -> None:
    """The server's upstream pipelines keep their default limits (an SSE line of 16 MiB):
    its memory stays within a few times that, where 64 KiB of the bomb inflated whole would
    take 64 MiB at once."""
    async with gateway_over(bomb, tmp_path) as origin, httpx.AsyncClient(timeout=10.0) as http:
        with peak_memory() as peak:
            response, events = await post_stream(http, origin, stream_body("bomb"))
    assert response.status_code == 200
    assert events[-1] == "[DONE]"
    assert events[-2]["error"]["type"] == error_type
    assert peak[0] < 3 * (16 << 20)


# -- what is asked for ------------------------------------------------------------------------


async def test_requests_ask_only_for_the_codings_decoded(fake_clock: Callable[[], int]) -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["accept-encoding"])
        return httpx.Response(200, stream=Body(STREAM))

    # httpx's default names br and zstd when their packages are installed.
    async with mock_client(handler, headers={"accept-encoding": "br, zstd, gzip"}) as client:
        await stream_events(client, URL, json_pipeline(fake_clock))
        await fetch_body(client, URL, client="test", timeouts=RELAXED, limit=LIMIT)
    assert seen == [ACCEPT_ENCODING, ACCEPT_ENCODING]
    assert ACCEPT_ENCODING == "gzip, deflate"


async def test_requests_on_the_wire_ask_only_for_the_codings_decoded(
    transport: str, fake_clock: Callable[[], int],
) -> None:
    async with serving([encoded(gzip.compress(STREAM))]) as server, \
            http_client(transport) as client:
        await stream_events(client, server.url(), json_pipeline(fake_clock))
    lines = server.received[0].raw.lower().split(b"\r\n")
    assert [line for line in lines if line.startswith(b"accept-encoding:")] == [
        b"accept-encoding: gzip, deflate"]


# -- normal bodies ----------------------------------------------------------------------------

#: Each coding a body may carry, and how its bytes are made.
CODINGS: Final[dict[str, Callable[[bytes], bytes]]] = {
    "gzip": gzip.compress,
    "x-gzip": gzip.compress,
    "GZIP": gzip.compress,
    "deflate": zlib.compress,
    "raw deflate": lambda data: zlib.compress(data, wbits=-zlib.MAX_WBITS),
    "identity, gzip": gzip.compress,
    "identity": bytes,
}


def expect_hello(events: list[UniEvent]) -> None:
    assert_stream_grammar(events)
    assert events[2].content_items == (TextDone("Hello"),)
    assert events[-1].event_type == "stop"


@pytest.mark.parametrize("coding", list(CODINGS))
async def test_an_encoded_stream_decodes_in_every_chunking(
    coding: str, fake_clock: Callable[[], int],
) -> None:
    packed = CODINGS[coding](STREAM)
    header = "deflate" if coding == "raw deflate" else coding
    for chunks in chunkings(packed):
        body = Body(*chunks)

        def handler(request: httpx.Request, body: Body = body) -> httpx.Response:
            return httpx.Response(200, stream=body, headers={"content-encoding": header})

        async with mock_client(handler) as client:
            expect_hello(await stream_events(client, URL, json_pipeline(fake_clock)))
        assert body.closed


async def test_a_read_that_decodes_to_several_steps_is_handed_on_whole(
    fake_clock: Callable[[], int],
) -> None:
    texts = [f"{n:04d}" + "x" * 1000 for n in range(300)]
    stream = sse(*(delta(text) for text in texts), stop())
    packed = gzip.compress(stream)
    assert len(stream) > 4 * DECODED_STEP and len(packed) < DECODED_STEP
    for chunks in ([packed], [packed[:100], packed[100:]]):
        body = Body(*chunks)
        async with mock_client(lambda request, body=body: httpx.Response(  # type: ignore[misc]
                200, stream=body, headers={"content-encoding": "gzip"})) as client:
            events = await stream_events(client, URL, json_pipeline(fake_clock))
        assert_stream_grammar(events)
        assert events[len(texts)].content_items == (TextDone("".join(texts)),)


@pytest.mark.parametrize("framing", ["chunked", "content-length"])
async def test_a_gzip_stream_over_loopback(
    framing: str, transport: str, fake_clock: Callable[[], int],
) -> None:
    packed = gzip.compress(STREAM)
    half = len(packed) // 2
    answer = (
        [head("content-encoding: gzip", "transfer-encoding: chunked") + chunk(packed[:half]),
         0.02, chunk(packed[half:]) + b"0\r\n\r\n"]
        if framing == "chunked" else [encoded(packed)[:-half], 0.02, packed[-half:]]
    )
    async with serving(answer, answer) as server, http_client(transport) as client:
        for _ in range(2):
            expect_hello(await stream_events(client, server.url(), json_pipeline(fake_clock)))
    if transport == "library":  # the decoded stream ended its raw body: the connection stays
        assert server.connections == [1, 1]


# -- cut or broken compressed bodies (08 D19) -------------------------------------------------

EMBEDDING: Final = adapters.render(
    "openai-embedding", [EmbeddingDone(embedding=(0.5, 0.25))], UsageMetadata(None, 3, None, None),
    "stop")


async def test_a_gzip_cut_one_body_answer_is_incomplete(
    transport: str, fake_clock: Callable[[], int],
) -> None:
    packed = gzip.compress(EMBEDDING)
    packed = packed[: len(packed) // 2]
    async with serving([encoded(packed)]) as server, http_client(transport) as client:
        pipeline = adapters.new_pipeline("openai-embedding", clock=fake_clock)
        with pytest.raises(IncompleteStreamError) as caught:
            await stream_events(client, server.url(), pipeline)
    assert caught.value.missing == ("usage_metadata", "finish_reason")
    assert isinstance(caught.value.__cause__, httpx.DecodingError)


def corrupt(packed: bytes) -> bytes:
    """``packed`` with a byte of its compressed data flipped."""
    middle = len(packed) // 2
    return packed[:middle] + bytes([packed[middle] ^ 0xFF]) + packed[middle + 1:]


@pytest.mark.parametrize("damage", [
    pytest.param(lambda packed: packed[: len(packed) - 20], id="cut"),
    pytest.param(corrupt, id="corrupt"),
    pytest.param(lambda packed: packed + b"garbage", id="bytes-after-the-end"),
])
async def test_a_cut_or_broken_gzip_stream_is_incomplete(
    damage: Callable[[bytes], bytes], fake_clock: Callable[[], int],
) -> None:
    body = Body(damage(gzip.compress(sse(delta("Hel"), delta("lo")))))

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=body, headers={"content-encoding": "gzip"})

    async with mock_client(handler) as client:
        with pytest.raises(IncompleteStreamError) as caught:
            await stream_events(client, URL, json_pipeline(fake_clock))
    assert isinstance(caught.value.__cause__, httpx.DecodingError)
    assert body.closed
