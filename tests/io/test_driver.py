"""``open_stream`` over httpx.MockTransport and real loopback sockets (08 D16, D19, D22)."""

from __future__ import annotations

import gzip
import math
import zlib
from collections.abc import Callable
from decimal import Decimal

import anyio
import httpx
import pytest
from httpfakes import Body, delta, json_pipeline, mock_client, sse, stop

from mmsp_core import (
    HTTPRequest,
    IncompleteStreamError,
    ProviderConnectionError,
    ProviderHTTPError,
    ProviderStreamError,
    StreamTimeoutError,
    TextDelta,
    TextDone,
    UniEvent,
    UsageMetadata,
)
from mmsp_core.testing import assert_stream_grammar
from mmsp_io import Timeouts, open_stream
from mmsp_io._status import ERROR_PREVIEW_BYTES

pytestmark = pytest.mark.anyio

URL = "https://provider.test/v1/stream"
REQUEST = HTTPRequest(
    "POST", "/stream", (("content-type", "application/json"), ("authorization", "Bearer k")),
    b'{"model":"m"}',
)
NO_LIMITS = Timeouts(connect=None, first_event=None, idle=None, total=None)
BODY = sse(delta("Hel"), delta("lo"), stop())


async def collect(
    handler: Callable[[httpx.Request], object],
    clock: Callable[[], int],
    *,
    timeouts: Timeouts = NO_LIMITS,
    http_client: httpx.AsyncClient | None = None,
) -> list[UniEvent]:
    """Run one request through ``open_stream``; return the events (errors propagate)."""
    events = []
    async with http_client or mock_client(handler) as client, open_stream(  # type: ignore[arg-type]
        client, URL, REQUEST, json_pipeline(clock), client="test", timeouts=timeouts
    ) as stream:
        async for event in stream:
            events.append(event)
    return events


def respond(body: Body, status: int = 200, **headers: str) -> Callable[[httpx.Request], object]:
    return lambda request: httpx.Response(status, stream=body, headers=headers)


# -- the happy path ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", [len(BODY), 1, 7], ids=["whole", "bytewise", "7-bytes"])
async def test_streams_public_events_whatever_the_chunking(
    size: int, fake_clock: Callable[[], int]
) -> None:
    body = Body(*(BODY[i:i + size] for i in range(0, len(BODY), size)))
    events = await collect(respond(body), fake_clock)
    assert_stream_grammar(events)
    assert [e.content_items for e in events[:3]] == [
        (TextDelta("Hel"),), (TextDelta("lo"),), (TextDone("Hello"),)
    ]
    assert events[-1].usage_metadata == UsageMetadata(None, 3, None, 2)
    assert [e.created_at for e in events] == [1000, 1001, 1002, 1003]
    assert body.closed


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "identity"])
async def test_a_body_with_a_content_encoding_is_decoded_first(
    encoding: str, fake_clock: Callable[[], int]
) -> None:
    # The driver decodes an encoded body itself (test_decompression.py has the rest).
    encoded = {"gzip": gzip.compress, "deflate": zlib.compress, "identity": bytes}[encoding](BODY)
    body = Body(*(encoded[i:i + 5] for i in range(0, len(encoded), 5)))
    events = await collect(respond(body, **{"content-encoding": encoding}), fake_clock)
    assert_stream_grammar(events)
    assert events[2].content_items == (TextDone("Hello"),)
    assert body.closed


async def test_sends_the_request_as_built_without_following_redirects(
    fake_clock: Callable[[], int]
) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, stream=Body(BODY))

    await collect(handler, fake_clock, timeouts=Timeouts(connect=3.0))
    (request,) = seen
    assert (request.method, str(request.url)) == ("POST", URL)
    assert request.headers["authorization"] == "Bearer k"
    assert request.content == b'{"model":"m"}'
    # The caller's client keeps its timeouts (httpx's default 5 s); ``connect`` applies on top
    # of its connect and pool timeouts, the tighter winning (08 D62).
    assert request.extensions["timeout"] == {"connect": 3.0, "read": 5.0, "write": 5.0,
                                             "pool": 3.0}


async def test_a_redirect_is_an_error_even_if_the_client_follows_redirects(
    fake_clock: Callable[[], int]
) -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(307, headers={"location": "https://elsewhere.test/steal"})

    client = mock_client(handler, follow_redirects=True)
    with pytest.raises(ProviderHTTPError) as caught:
        await collect(handler, fake_clock, http_client=client)
    assert caught.value.status == 307
    assert seen == [URL]


# -- HTTP errors (08 D19) ---------------------------------------------------------------------


async def test_401_openai_body(fake_clock: Callable[[], int]) -> None:
    body = (b'{"error": {"message": "Incorrect API key provided.", "type": '
            b'"invalid_request_error", "param": null, "code": "invalid_api_key"}}')
    handler = respond(Body(body), 401, **{"x-request-id": "req_123"})
    with pytest.raises(ProviderHTTPError) as caught:
        await collect(handler, fake_clock)
    error = caught.value
    assert (error.client, error.status, error.error_type, error.provider_message,
            error.request_id, error.retry_after) == (
        "test", 401, "invalid_request_error", "Incorrect API key provided.", "req_123", None)
    assert not error.retryable


async def test_429_anthropic_body_with_retry_after(fake_clock: Callable[[], int]) -> None:
    body = (b'{"type":"error","error":{"type":"rate_limit_error","message":"Slow down"},'
            b'"request_id":"req_body"}')
    handler = respond(Body(body), 429, **{"retry-after": "7"})
    with pytest.raises(ProviderHTTPError) as caught:
        await collect(handler, fake_clock)
    error = caught.value
    assert (error.status, error.error_type, error.provider_message, error.request_id,
            error.retry_after) == (429, "rate_limit_error", "Slow down", "req_body", 7.0)
    assert error.retryable


async def test_500_google_body_in_a_list(fake_clock: Callable[[], int]) -> None:
    body = (b'[{"error": {"code": 500, "message": "Internal error encountered.", '
            b'"status": "INTERNAL"}}]')
    with pytest.raises(ProviderHTTPError) as caught:
        await collect(respond(Body(body), 500), fake_clock)
    error = caught.value
    assert (error.status, error.error_type, error.provider_message) == (
        500, "INTERNAL", "Internal error encountered.")
    assert error.retryable


async def test_non_json_error_body_is_a_short_preview(fake_clock: Callable[[], int]) -> None:
    page = b"<html>" + b"x" * 5000 + b"</html>"
    with pytest.raises(ProviderHTTPError) as caught:
        await collect(respond(Body(page), 502), fake_clock)
    message = caught.value.provider_message
    assert message.startswith("<html>xxx") and message.endswith("xxx</html>")
    assert len(message) < 200


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 70_000,
        b'{"error":' * 70_000,
        b"[" * 30_000 + b"]" * 30_000,  # valid JSON, within the preview, far too deep
    ],
    ids=["arrays", "objects", "closed-arrays"],
)
async def test_an_error_body_nested_70000_deep_is_a_typed_error(
    body: bytes, fake_clock: Callable[[], int]
) -> None:
    with pytest.raises(ProviderHTTPError) as caught:
        await collect(respond(Body(body), 500), fake_clock)
    error = caught.value
    assert (error.status, error.error_type, error.request_id) == (500, None, None)
    assert error.provider_message is not None and len(error.provider_message) < 200
    assert error.provider_message.startswith(body[:20].decode())


async def test_error_for_status_gets_a_bounded_preview(fake_clock: Callable[[], int]) -> None:
    seen = []

    def build(status: int, headers: object, preview: bytes) -> Exception:
        seen.append((status, len(preview)))
        return RuntimeError("refused")

    body = Body(*[b"y" * 10_000] * 20, 30.0)  # a slow tail is never waited for
    async with mock_client(respond(body, 400)) as client:
        with pytest.raises(RuntimeError, match="refused"):
            async with open_stream(client, URL, REQUEST, json_pipeline(fake_clock),
                                   client="test", timeouts=NO_LIMITS, error_for_status=build):
                pytest.fail("no stream on a 400")
    assert seen == [(400, ERROR_PREVIEW_BYTES)]
    assert body.closed


# -- no response, cut bodies, in-stream errors (08 D4, D19) ------------------------------------


async def test_connection_refused_on_a_closed_loopback_port(
    fake_clock: Callable[[], int], refusing_port: int
) -> None:
    url = f"http://127.0.0.1:{refusing_port}/v1/stream"
    async with httpx.AsyncClient() as client:
        with pytest.raises(ProviderConnectionError) as caught:
            async with open_stream(client, url, REQUEST, json_pipeline(fake_clock),
                                   client="test", timeouts=Timeouts()):
                pytest.fail("no stream without a server")
    assert caught.value.client == "test"
    assert caught.value.retryable
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


async def test_protocol_error_before_headers_is_a_connection_error(
    fake_clock: Callable[[], int]
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.")

    with pytest.raises(ProviderConnectionError) as caught:
        await collect(handler, fake_clock)
    assert "disconnected" in caught.value.reason
    assert isinstance(caught.value.__cause__, httpx.RemoteProtocolError)


async def test_body_cut_mid_stream_is_incomplete_and_chained(
    fake_clock: Callable[[], int]
) -> None:
    cut = httpx.RemoteProtocolError("peer closed connection without sending complete message")
    body = Body(sse(delta("Hel"), delta("lo")), cut)
    events: list[UniEvent] = []
    with pytest.raises(IncompleteStreamError) as caught:
        async with mock_client(respond(body)) as client, open_stream(
            client, URL, REQUEST, json_pipeline(fake_clock), client="test", timeouts=NO_LIMITS
        ) as stream:
            async for event in stream:
                events.append(event)
    # The open text item is closed with its .done before the error (spec 02 §7, 08 D33).
    assert [e.content_items[0] for e in events] == [
        TextDelta("Hel"), TextDelta("lo"), TextDone("Hello")
    ]
    assert caught.value.missing == ("usage_metadata", "finish_reason")
    assert caught.value.__cause__ is cut
    assert body.closed


async def test_body_cut_after_usage_and_finish_ends_with_stop(
    fake_clock: Callable[[], int]
) -> None:
    body = Body(BODY, httpx.ReadError("connection reset"))
    events = await collect(respond(body), fake_clock)
    assert_stream_grammar(events)
    assert events[-1].finish_reason == "stop"


async def test_in_stream_error_event_is_raised_in_place(fake_clock: Callable[[], int]) -> None:
    error = {"error": {"type": "ProviderStreamError", "message": "overloaded",
                       "client": "test", "code": 529, "error_type": "overloaded_error"}}
    body = Body(sse(delta("Hi"), error, stop()))
    events: list[UniEvent] = []
    with pytest.raises(ProviderStreamError) as caught:
        async with mock_client(respond(body)) as client, open_stream(
            client, URL, REQUEST, json_pipeline(fake_clock), client="test", timeouts=NO_LIMITS
        ) as stream:
            async for event in stream:
                events.append(event)
    assert [e.content_items[0] for e in events] == [TextDelta("Hi")]
    assert caught.value.error_type == "overloaded_error"
    assert caught.value.retryable


# -- timeouts (08 D22) ------------------------------------------------------------------------


#: The stalls below never end: a timeout that does not fire hangs the test, which this guard
#: turns into a failure (it bounds a hang and measures nothing, 08 D80).
HANG_GUARD = 60.0
FOREVER = math.inf


async def run_until_timeout(
    handler: Callable[[httpx.Request], object], timeouts: Timeouts, clock: Callable[[], int]
) -> StreamTimeoutError:
    with anyio.fail_after(HANG_GUARD), pytest.raises(StreamTimeoutError) as caught:
        await collect(handler, clock, timeouts=timeouts)
    return caught.value


async def test_connect_timeout(fake_clock: Callable[[], int]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        # What httpcore does when connecting outlasts the connect timeout it was given.
        assert request.extensions["timeout"]["connect"] == 0.25
        raise httpx.ConnectTimeout("timed out")

    error = await run_until_timeout(handler, Timeouts(connect=0.25), fake_clock)
    assert (error.which, error.seconds) == ("connect", 0.25)
    assert isinstance(error.__cause__, httpx.ConnectTimeout)


async def test_first_event_timeout_while_waiting_for_headers(
    fake_clock: Callable[[], int]
) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        await anyio.sleep_forever()
        return httpx.Response(200, stream=Body(BODY))

    error = await run_until_timeout(handler, Timeouts(first_event=0.2), fake_clock)
    assert (error.which, error.seconds) == ("first_event", 0.2)


async def test_first_event_timeout_counts_keep_alive_bytes_as_no_event(
    fake_clock: Callable[[], int]
) -> None:
    pings = [step for _ in range(100) for step in (b": keep-alive\n\n", 0.02)]
    error = await run_until_timeout(
        respond(Body(*pings, FOREVER)), Timeouts(first_event=0.2, idle=1.0), fake_clock
    )
    assert (error.which, error.seconds) == ("first_event", 0.2)


async def test_idle_timeout(fake_clock: Callable[[], int]) -> None:
    body = Body(sse(delta("Hi")), FOREVER)
    error = await run_until_timeout(respond(body), Timeouts(idle=0.2), fake_clock)
    assert (error.which, error.seconds) == ("idle", 0.2)
    assert body.closed


async def test_keep_alive_comments_keep_an_idle_stream_alive(
    fake_clock: Callable[[], int]
) -> None:
    pings = [step for _ in range(8) for step in (b": keep-alive\n\n", 0.05)]
    body = Body(sse(delta("Hi")), *pings, sse(stop()))
    events = await collect(respond(body), fake_clock, timeouts=Timeouts(idle=0.15))
    assert events[-1].event_type == "stop"


async def test_idle_does_not_count_the_time_the_caller_holds_an_event(
    fake_clock: Callable[[], int]
) -> None:
    async with mock_client(respond(Body(BODY))) as client, open_stream(
        client, URL, REQUEST, json_pipeline(fake_clock), client="test",
        timeouts=Timeouts(idle=0.1),
    ) as stream:
        events = []
        async for event in stream:
            events.append(event)
            await anyio.sleep(0.15)
    assert events[-1].event_type == "stop"


async def test_total_timeout(fake_clock: Callable[[], int]) -> None:
    pings = [step for _ in range(100) for step in (sse(delta("x")), 0.02)]
    error = await run_until_timeout(
        respond(Body(*pings, FOREVER)), Timeouts(idle=1.0, total=0.25), fake_clock
    )
    assert (error.which, error.seconds) == ("total", 0.25)


# -- closing and cancellation (08 D20) ---------------------------------------------------------


async def test_leaving_the_context_early_closes_the_response(
    fake_clock: Callable[[], int]
) -> None:
    body = Body(sse(delta("Hi")), 30.0, sse(stop()))
    async with mock_client(respond(body)) as client:
        async with open_stream(client, URL, REQUEST, json_pipeline(fake_clock), client="test",
                               timeouts=NO_LIMITS) as stream:
            async for _event in stream:
                break
        assert body.closed


async def test_outside_cancellation_propagates_untouched(fake_clock: Callable[[], int]) -> None:
    body = Body(sse(delta("Hi")), 30.0)
    with anyio.move_on_after(0.2) as scope:
        await collect(respond(body), fake_clock, timeouts=Timeouts(idle=10.0))
    assert scope.cancelled_caught
    assert body.closed


@pytest.mark.parametrize("bad", [{"idle": 0}, {"total": -1.0}, {"connect": float("nan")}])
def test_timeouts_are_positive_or_none(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="positive number or None"):
        Timeouts(**bad)
    assert Timeouts() == Timeouts(connect=10.0, first_event=300.0, idle=120.0, total=None)
    assert Timeouts(connect=1, first_event=2.5, idle=None, total=math.inf).connect == 1


@pytest.mark.parametrize("field", ["connect", "first_event", "idle", "total"])
@pytest.mark.parametrize("value", ["5", b"5", True, False, [5], Decimal("5")],
                         ids=["str", "bytes", "true", "false", "list", "decimal"])
def test_timeouts_that_are_no_number_are_a_type_error_naming_the_field(
    field: str, value: object
) -> None:
    """A string, a bool or any other non-number is refused as such (not with Python's
    comparison error), naming the field and the type expected."""
    with pytest.raises(TypeError) as caught:
        Timeouts(**{field: value})  # type: ignore[arg-type]
    message = str(caught.value)
    assert message.startswith(f"Timeouts.{field} must be a number of seconds (int or float) "
                              f"or None, not {type(value).__name__}")
