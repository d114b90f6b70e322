"""``AutoLLMClient`` over httpx.MockTransport with real protocol bodies (spec 02 §8-§9, 08 D21).

Bodies are written by ``adapters.render`` (the mirror of each protocol's machine), so every
test runs the real request builder, driver and machine of the client type.
"""

from __future__ import annotations

import base64
import json
import time
import warnings
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest
from httpfakes import Body, clean_environment, mock_client

import adapters
import mmsp_io._retry
from adapters.anthropic_messages.request import ANTHROPIC_VERSION
from mmsp_core import (
    ConcurrentCallError,
    FinishReason,
    ImageUrlDone,
    IncompleteStreamError,
    InvalidMessageError,
    MMSPError,
    ProviderHTTPError,
    ProviderStreamError,
    RoutingError,
    StreamTimeoutError,
    TextDelta,
    TextDone,
    ThinkingDone,
    UniMessage,
    UnknownEventError,
    UnsupportedOperationError,
    UnsupportedParameterError,
    UpstreamError,
    UsageMetadata,
    WireFormatError,
)
from mmsp_core.testing import assert_stream_grammar
from mmsp_io import AutoLLMClient, RemoteImages, Timeouts

pytestmark = pytest.mark.anyio
__all__ = ["clean_environment"]

KEY = "sk-test-0123"
BASE = "https://gateway.test/v1"
USAGE = UsageMetadata(0, 5, None, 2)
HELLO = adapters.render("openai-responses", [TextDone("Hello world")], USAGE, "stop",
                        fragment_size=4)
#: The body up to the end of its first text delta event.
FIRST_DELTA = HELLO[: HELLO.rindex(b"\n\n", 0, HELLO.index(b"o wo")) + 2]
USER = {"role": "user", "content_items": [{"type": "text.done", "text": "Hi"}]}
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


Reply = Callable[[], httpx.Response] | Exception


class Provider:
    """A scripted provider: each request gets the next reply, the last one repeats.

    A reply is a function making a fresh response (a response body streams only once) or an
    exception to raise, as a transport does when no response comes. Requests are recorded.
    """

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        return reply()

    def body(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)


def ok(body: bytes = HELLO) -> Callable[[], httpx.Response]:
    return lambda: httpx.Response(200, stream=Body(body))


def streaming(*steps: Any) -> Callable[[], httpx.Response]:
    return lambda: httpx.Response(200, stream=Body(*steps))


def answer(status: int, **options: Any) -> Callable[[], httpx.Response]:
    return lambda: httpx.Response(status, **options)


@pytest.fixture
def backoff_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The seconds of every ``anyio.sleep`` the test's calls ask for (the retry back-off is the
    only one on these mock transports), slept as asked: what the client waits is checked by
    what it asks for, never by a clock (08 D80)."""
    asked: list[float] = []
    real = anyio.sleep

    async def sleep(delay: float) -> None:
        asked.append(delay)
        await real(delay)

    monkeypatch.setattr(anyio, "sleep", sleep)
    return asked


def make(provider: Callable[[httpx.Request], httpx.Response], **options: Any) -> AutoLLMClient:
    options.setdefault("client_type", "openai-responses")
    options.setdefault("api_key", KEY)
    options.setdefault("base_url", BASE)
    return AutoLLMClient("gpt-6", http_client=mock_client(provider), **options)


async def collect(stream: Any) -> list[Any]:
    return [event async for event in stream]


# -- the happy path ---------------------------------------------------------------------------


async def test_streams_the_public_events_of_an_authenticated_request() -> None:
    provider = Provider(ok())
    before = time.time_ns() // 1_000_000
    events = await collect(make(provider).streaming_response([USER], None))
    after = time.time_ns() // 1_000_000
    assert_stream_grammar(events)
    assert [e.content_items[0] for e in events[:-1]] == [
        TextDelta("Hell"), TextDelta("o wo"), TextDelta("rld"), TextDone("Hello world")
    ]
    assert (events[-1].usage_metadata, events[-1].finish_reason) == (USAGE, FinishReason.STOP)
    assert all(before <= e.created_at <= after for e in events)
    (request,) = provider.requests
    assert str(request.url) == BASE + "/responses"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert provider.body()["model"] == "gpt-6"
    assert provider.body()["input"][0]["content"] == [{"type": "input_text", "text": "Hi"}]


async def test_default_headers_win_over_the_client_headers_credentials_included() -> None:
    provider = Provider(ok())
    client = make(provider, default_headers={"Authorization": "Bearer other", "X-Trace": "1"})
    await collect(client.streaming_response([USER], None))
    headers = provider.requests[0].headers
    assert headers["authorization"] == "Bearer other"
    assert headers["x-trace"] == "1"
    assert headers.get_list("authorization") == ["Bearer other"]


async def test_preflight_works_on_copies_of_values_and_dicts() -> None:
    provider = Provider(ok())
    value = UniMessage("user", (TextDone("One"),))
    legacy = {"role": "user", "content_items": [{"type": "text", "text": "Two"}]}
    legacy_before = json.loads(json.dumps(legacy))
    client = make(provider)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        await collect(client.streaming_response([value, legacy], None))
    assert value.created_at is None
    assert legacy == legacy_before
    texts = [m["content"][0]["text"] for m in provider.body()["input"]]
    assert texts == ["One", "Two"]


async def test_a_message_that_cannot_be_read_is_refused_before_any_request() -> None:
    provider = Provider(ok())
    broken = {"role": "user", "content_items": [{"type": "text.done", "text": 5}]}
    with pytest.raises(InvalidMessageError) as caught:
        await collect(make(provider).streaming_response([USER, broken], None))
    assert (caught.value.message_index, caught.value.item_type) == (1, "text")
    assert isinstance(caught.value.__cause__, WireFormatError)
    assert provider.requests == []


async def test_an_empty_message_is_refused_before_any_request() -> None:
    provider = Provider(ok())
    empty = UniMessage("user", ())
    with pytest.raises(InvalidMessageError) as caught:
        await collect(make(provider).streaming_response([USER, empty], None))
    assert caught.value.message_index == 1
    assert provider.requests == []


async def test_a_config_error_comes_before_message_conversion_and_any_request() -> None:
    provider = Provider(ok())
    only_thinking = UniMessage("user", (ThinkingDone("hmm"),))
    with pytest.raises(UnsupportedParameterError) as caught:
        await collect(make(provider).streaming_response(
            [only_thinking], {"prompt_caching": "disable"}))
    assert caught.value.parameter == "prompt_caching"
    assert provider.requests == []


# -- retries (08 D21) -------------------------------------------------------------------------


def refusal(status: int, **headers: str) -> Callable[[], httpx.Response]:
    return answer(status, json={"error": {"type": "busy", "message": "try later"}},
                  headers=headers)


async def test_retries_before_the_first_event_then_streams() -> None:
    provider = Provider(
        refusal(503, **{"retry-after": "0"}),
        httpx.ConnectError("connection refused"),
        refusal(429, **{"retry-after-ms": "0"}),
        ok(),
    )
    events = await collect(make(provider, max_retries=3).streaming_response([USER], None))
    assert events[-1].event_type == "stop"
    assert len(provider.requests) == 4


async def test_gives_up_after_max_retries() -> None:
    provider = Provider(refusal(429, **{"retry-after": "0"}))
    with pytest.raises(ProviderHTTPError) as caught:
        await collect(make(provider, max_retries=1).streaming_response([USER], None))
    assert caught.value.status == 429
    assert len(provider.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 404])
async def test_client_errors_are_not_retried(status: int) -> None:
    provider = Provider(refusal(status), ok())
    with pytest.raises(ProviderHTTPError):
        await collect(make(provider).streaming_response([USER], None))
    assert len(provider.requests) == 1


async def test_a_long_retry_after_is_not_waited_for() -> None:
    provider = Provider(refusal(429, **{"retry-after": "3600"}), ok())
    with pytest.raises(ProviderHTTPError) as caught:
        await collect(make(provider).streaming_response([USER], None))
    assert caught.value.retry_after == 3600
    assert len(provider.requests) == 1


async def test_an_exhausted_retry_says_how_many_attempts_were_made() -> None:
    provider = Provider(refusal(429, **{"retry-after": "0"}))
    with pytest.raises(ProviderHTTPError) as caught:
        await collect(make(provider, max_retries=2).streaming_response([USER], None))
    assert len(provider.requests) == 3
    assert caught.value.detail is not None and "3 attempts" in caught.value.detail
    assert "3 attempts" in str(caught.value)


async def test_total_bounds_every_attempt_and_back_off_sleep(backoff_sleeps: list[float]) -> None:
    """08 D60, issue 8's reproducer: ``total=1`` and a 429 asking for 3 s took 6 s. A wait
    longer than what is left of ``total`` raises the last error at once, still retryable."""
    provider = Provider(refusal(429, **{"retry-after": "3"}), ok())
    with pytest.raises(ProviderHTTPError) as caught:
        await collect(make(provider, max_retries=3, timeouts=Timeouts(total=1))
                      .streaming_response([USER], None))
    assert backoff_sleeps == []
    assert len(provider.requests) == 1
    assert caught.value.retryable and caught.value.retry_after == 3
    assert caught.value.detail is not None and "1 attempt" in caught.value.detail


async def test_total_counts_from_the_first_attempt() -> None:
    """Each attempt stalls 0.4 s before its 503 (retry at once): with ``total=1`` the third
    attempt runs out of time, whatever ``max_retries`` allows."""

    attempts: list[httpx.Request] = []

    async def slow_refusal(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        await anyio.sleep(0.4)
        return refusal(503, **{"retry-after": "0"})()

    client = AutoLLMClient("gpt-6", api_key=KEY, base_url=BASE, max_retries=10,
                           timeouts=Timeouts(total=1), http_client=mock_client(slow_refusal))
    with pytest.raises(MMSPError):
        await collect(client.streaming_response([USER], None))
    # Eleven attempts without the bound; 0.4 s each, a second holds at most three of them.
    assert 1 <= len(attempts) <= 3


async def test_retry_after_is_honoured(backoff_sleeps: list[float]) -> None:
    provider = Provider(refusal(503, **{"retry-after-ms": "300"}), ok())
    await collect(make(provider).streaming_response([USER], None))
    assert backoff_sleeps == [0.3]
    assert len(provider.requests) == 2


async def test_backoff_without_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mmsp_io._retry, "_RETRY_BASE", 0.01)
    provider = Provider(refusal(500), refusal(502), ok())
    await collect(make(provider).streaming_response([USER], None))
    assert len(provider.requests) == 3


OVERLOADED = (b'event: error\ndata: {"type":"error","code":"server_error",'
              b'"message":"The server is overloaded"}\n\n')


async def test_an_in_stream_overload_before_content_is_retried() -> None:
    provider = Provider(ok(OVERLOADED), ok())
    events = await collect(make(provider).streaming_response([USER], None))
    assert events[-1].event_type == "stop"
    assert len(provider.requests) == 2


async def test_nothing_is_retried_after_an_event_was_yielded() -> None:
    provider = Provider(ok(FIRST_DELTA + OVERLOADED), ok())
    events: list[Any] = []
    with pytest.raises(ProviderStreamError) as caught:
        async for event in make(provider).streaming_response([USER], None):
            events.append(event)
    assert [e.content_items for e in events] == [(TextDelta("Hell"),)]
    assert caught.value.retryable
    assert len(provider.requests) == 1


# -- timeouts, strictness ------------------------------------------------------------------------


async def test_per_call_timeouts_replace_the_clients() -> None:
    provider = Provider(streaming(FIRST_DELTA, 30.0))
    client = make(provider, timeouts=Timeouts(idle=60.0))
    with pytest.raises(StreamTimeoutError) as caught:
        await collect(client.streaming_response([USER], None, timeouts=Timeouts(idle=0.1)))
    assert (caught.value.which, caught.value.seconds) == ("idle", 0.1)


UNKNOWN = b'event: mmsp_test_unknown\ndata: {"type":"mmsp_test_unknown"}\n\n'


@pytest.mark.parametrize(
    ("debug", "strict", "raises"),
    [("1", None, True), (" Yes ", None, True), ("off", None, False), ("", None, False),
     ("1", False, False), ("0", True, True)],
)
async def test_strict_mode_from_mmsp_debug_or_the_constructor(
    monkeypatch: pytest.MonkeyPatch, debug: str, strict: bool | None, raises: bool
) -> None:
    monkeypatch.setenv("MMSP_DEBUG", debug)
    client = make(Provider(ok(UNKNOWN + HELLO)), strict=strict)
    if raises:
        with pytest.raises(UnknownEventError):
            await collect(client.streaming_response([USER], None))
    else:
        events = await collect(client.streaming_response([USER], None))
        assert events[-1].event_type == "stop"


# -- closing -----------------------------------------------------------------------------------


async def test_closing_the_generator_early_closes_the_response() -> None:
    body = Body(FIRST_DELTA, 30.0)
    stream = make(Provider(lambda: httpx.Response(200, stream=body))).streaming_response(
        [USER], None)
    first = await stream.__anext__()
    assert first.content_items == (TextDelta("Hell"),)
    await stream.aclose()
    assert body.closed


async def test_own_http_client_is_closed_a_callers_is_not() -> None:
    async with AutoLLMClient("gpt-6", api_key=KEY) as own:
        http = own._http
    assert http.is_closed
    callers = mock_client(Provider(ok()))
    async with AutoLLMClient("gpt-6", api_key=KEY, http_client=callers):
        pass
    assert not callers.is_closed


# -- stateful calls and history (spec 02 §9) ---------------------------------------------------


async def test_a_stateful_turn_is_recorded_before_the_stop_is_yielded() -> None:
    provider = Provider(ok())
    client = make(provider)
    seen_at_stop = None
    async for event in client.streaming_response_stateful(USER, None):
        if event.event_type == "stop":
            seen_at_stop = client.get_history()
            stop = event
    assert seen_at_stop is not None
    user, assistant = seen_at_stop
    assert user.content_items == (TextDone("Hi"),)
    assert user.created_at is not None
    assert assistant == UniMessage("assistant", (TextDone("Hello world"),), USAGE,
                                   FinishReason.STOP, stop.created_at)


async def test_the_next_turn_sends_history_plus_the_new_message() -> None:
    provider = Provider(ok())
    client = make(provider)
    await collect(client.streaming_response_stateful(USER, None))
    await collect(client.streaming_response_stateful(
        {"role": "user", "content_items": [{"type": "text.done", "text": "Again"}]}, None))
    roles = [m.get("role") for m in provider.body()["input"]]
    assert roles == ["user", "assistant", "user"]
    assert len(client.get_history()) == 4


async def test_history_is_untouched_after_a_failure() -> None:
    cut = httpx.ReadError("reset")
    provider = Provider(ok(), streaming(FIRST_DELTA, cut))
    client = make(provider)
    await collect(client.streaming_response_stateful(USER, None))
    before = client.get_history()
    with pytest.raises(IncompleteStreamError):
        await collect(client.streaming_response_stateful(USER, None))
    assert client.get_history() == before
    with pytest.raises(InvalidMessageError):
        await collect(client.streaming_response_stateful(UniMessage("user", ()), None))
    assert client.get_history() == before


async def test_set_get_and_clear_history() -> None:
    client = make(Provider(ok()))
    client.set_history([USER, {"role": "assistant",
                               "content_items": [{"type": "text.done", "text": "Yo"}]}])
    history = client.get_history()
    assert [m.content_items[0].text for m in history] == ["Hi", "Yo"]
    history.clear()
    assert len(client.get_history()) == 2
    client.clear_history()
    assert client.get_history() == []


async def test_a_second_stateful_call_while_one_is_in_flight() -> None:
    client = make(Provider(ok()))
    first = client.streaming_response_stateful(USER, None)
    await first.__anext__()
    with pytest.raises(ConcurrentCallError):
        await collect(client.streaming_response_stateful(USER, None))
    await collect(first)
    await collect(client.streaming_response_stateful(USER, None))
    assert len(client.get_history()) == 4


# -- list_models (spec 04 §5) -----------------------------------------------------------------


MODELS = {"data": [{"id": "gpt-6"}, {"id": "claude-opus-5"}, {"id": "text-embedding-3-small"},
                   {"id": "vendor/other"}]}


async def test_list_models_of_a_deduced_client_keeps_its_family() -> None:
    provider = Provider(answer(200, json=MODELS))
    client = AutoLLMClient("gpt-6", api_key=KEY, http_client=mock_client(provider))
    assert await client.list_models() == ["gpt-6", "text-embedding-3-small"]
    request = provider.requests[0]
    assert (request.method, str(request.url)) == ("GET", "https://api.openai.com/v1/models")
    assert request.headers["authorization"] == f"Bearer {KEY}"


async def test_list_models_of_a_named_client_is_the_whole_list() -> None:
    provider = Provider(answer(200, json=MODELS))
    assert await make(provider).list_models() == [m["id"] for m in MODELS["data"]]


async def test_list_models_follows_anthropic_pages() -> None:
    provider = Provider(
        answer(200, json={"data": [{"id": "claude-a"}], "has_more": True,
                          "last_id": "claude-a"}),
        answer(200, json={"data": [{"id": "claude-b"}], "has_more": False}),
    )
    client = AutoLLMClient("claude-opus-5", api_key=KEY, http_client=mock_client(provider))
    assert await client.list_models() == ["claude-a", "claude-b"]
    assert [str(r.url) for r in provider.requests] == [
        "https://api.anthropic.com/v1/models",
        "https://api.anthropic.com/v1/models?after_id=claude-a",
    ]
    assert provider.requests[0].headers["x-api-key"] == KEY
    assert all(r.headers["anthropic-version"] == ANTHROPIC_VERSION for r in provider.requests)


# -- remote images (08 D37) ---------------------------------------------------------------------


IMAGE_URL = "https://images.test/cat.png"
CHAT_BODY = adapters.render("openai-chat", [TextDone("A cat.")], USAGE, "stop")


def image_message(url: str = IMAGE_URL) -> dict[str, Any]:
    return {"role": "user", "content_items": [{"type": "text.done", "text": "What is it?"},
                                              {"type": "image_url.done", "image_url": url}]}


def chat_client(
    image: httpx.Response, seen: list[httpx.Request], **options: Any
) -> AutoLLMClient:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.host == "images.test":
            return image
        return httpx.Response(200, stream=Body(CHAT_BODY))

    return AutoLLMClient("gpt-6", client_type="openai-chat", api_key=KEY, base_url=BASE,
                         http_client=mock_client(handler), **options)


async def test_remote_images_are_inlined_without_credentials_for_clients_that_need_bytes() -> None:
    seen: list[httpx.Request] = []
    client = chat_client(httpx.Response(200, content=PNG, headers={"content-type": "image/png"}),
                         seen)
    message = image_message()
    events = await collect(client.streaming_response_stateful(message, None))
    assert events[-1].event_type == "stop"
    fetch, model_request = seen
    assert str(fetch.url) == IMAGE_URL
    assert "authorization" not in fetch.headers
    parts = json.loads(model_request.content)["messages"][0]["content"]
    data_uri = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert {"type": "image_url", "image_url": {"url": data_uri}} in parts
    # History keeps what the caller sent, not the inlined copy.
    assert client.get_history()[0].content_items[1] == ImageUrlDone(IMAGE_URL)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (httpx.Response(404, text="not found"), "HTTP 404"),
        (httpx.Response(200, content=b"<html>", headers={"content-type": "text/html"}),
         "not an image"),
        (httpx.Response(200, content=PNG * 10, headers={"content-type": "image/png"}),
         "larger than"),
    ],
    ids=["404", "not-an-image", "too-large"],
)
async def test_an_image_that_cannot_be_fetched_is_an_invalid_message(
    reply: httpx.Response, reason: str
) -> None:
    seen: list[httpx.Request] = []
    client = chat_client(reply, seen, remote_images=RemoteImages(max_image_bytes=len(PNG) * 5))
    with pytest.raises(InvalidMessageError) as caught:
        await collect(client.streaming_response([USER, image_message()], None))
    assert (caught.value.item_type, caught.value.message_index) == ("image_url", 1)
    assert reason in caught.value.detail
    assert [r.url.host for r in seen] == ["images.test"]


async def test_clients_that_take_urls_do_not_fetch_images() -> None:
    provider = Provider(ok())
    await collect(make(provider).streaming_response([image_message()], None))
    assert [r.url.host for r in provider.requests] == ["gateway.test"]
    assert IMAGE_URL in provider.requests[0].content.decode()


async def test_client_type_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLIENT_TYPE", "OpenAI")  # an alias, any case (spec 04 §1)
    provider = Provider(answer(200, json=MODELS))
    client = AutoLLMClient("vendor/model", api_key=KEY, http_client=mock_client(provider))
    assert client.client_type == "openai-chat"
    assert await client.list_models() == [m["id"] for m in MODELS["data"]]


# -- the mmsp client (spec 03 §5, 07 §6, 08 D13) ------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "error_type", "error"),
    [
        (answer(401, json={"error": {"type": "AuthenticationError",
                                     "message": "Invalid or missing API key."}}),
         "AuthenticationError",
         {"type": "AuthenticationError", "message": "Invalid or missing API key."}),
        (answer(502, text="Bad gateway"), "HTTPError",
         {"type": "HTTPError", "message": "HTTP 502: Bad gateway"}),
    ],
    ids=["json", "not-json"],
)
async def test_the_mmsp_client_reports_refusals_as_upstream_errors(
    reply: Reply, error_type: str, error: dict[str, Any]
) -> None:
    provider = Provider(reply)
    client = AutoLLMClient("served-model", client_type="mmsp", api_key="sk-mmsp",
                           base_url="http://127.0.0.1:25752/v1",
                           default_headers={"Authorization": "Bearer caller"},
                           http_client=mock_client(provider))
    with pytest.raises(UpstreamError) as caught:
        await client.list_models()
    assert (caught.value.client, caught.value.status, caught.value.error_type,
            caught.value.error) == ("mmsp", reply().status_code, error_type, error)
    # On mmsp the resolved key overrides a caller's Authorization (spec 04 §3).
    assert provider.requests[0].headers["authorization"] == "Bearer sk-mmsp"


# -- construction (08 D69) and defaults ----------------------------------------------------------


@pytest.mark.parametrize("model", [None, "", 5, b"gpt-6"])
def test_a_model_id_that_is_not_a_non_empty_string_is_a_routing_error(model: Any) -> None:
    with pytest.raises(RoutingError) as caught:
        AutoLLMClient(model, api_key=KEY, client_type="openai-responses")
    assert "model id" in str(caught.value)


@pytest.mark.parametrize(
    "base_url",
    ["http://[::1", "ftp://provider.test/v1", "provider.test/v1", "http://provider.test:99999/v1",
     "http://:8080/v1", "http:///v1", "http://bad host/v1", "https://provider.test:0/"],
)
def test_an_unusable_base_url_is_refused_at_construction(base_url: str) -> None:
    with pytest.raises(UnsupportedParameterError) as caught:
        AutoLLMClient("gpt-6", api_key=KEY, base_url=base_url)
    assert caught.value.parameter == "base_url"
    assert caught.value.client == "openai-official"


def test_bedrock_is_checked_before_the_base_url() -> None:
    # anthropic-official reaches Bedrock (08 D72); another client is refused before the
    # base-URL rule, which would refuse the scheme.
    bedrock = AutoLLMClient("claude-sonnet-5", api_key=KEY, base_url="bedrock://us-east-1")
    assert bedrock.base_url == "bedrock://us-east-1"
    with pytest.raises(UnsupportedOperationError):
        AutoLLMClient("claude-sonnet-5", api_key=KEY, base_url="bedrock://us-east-1",
                      client_type="ant-messages")


@pytest.mark.parametrize("base_url", ["http://127.0.0.1:8080/v1", "https://[::1]:443/v1",
                                      "http://my_proxy.internal/v1", "HTTPS://Provider.Test"])
def test_usable_base_urls_are_taken(base_url: str) -> None:
    assert AutoLLMClient("gpt-6", api_key=KEY, base_url=base_url).base_url == base_url


@pytest.mark.parametrize(
    ("option", "value"),
    [("http_client", object()), ("http_client", httpx.Client()), ("timeouts", 5.0),
     ("timeouts", {"total": 5}), ("max_retries", "2"), ("max_retries", True),
     ("max_retries", 1.5), ("default_headers", [("x-a", "b")]),
     ("default_headers", {"x-a": 5})],
)
def test_a_wrong_type_for_a_constructor_argument_is_a_clear_type_error(
    option: str, value: Any
) -> None:
    with pytest.raises(TypeError, match=option):
        AutoLLMClient("gpt-6", api_key=KEY, **{option: value})


async def test_config_may_be_left_out() -> None:
    provider = Provider(ok(), ok())
    client = make(provider)
    events = await collect(client.streaming_response([USER]))
    assert events[-1].event_type == "stop"
    events = await collect(client.streaming_response_stateful(USER))
    assert events[-1].event_type == "stop"


async def test_async_with_closes_the_clients_own_http_client() -> None:
    async with AutoLLMClient("gpt-6", api_key=KEY) as client:
        assert isinstance(client, AutoLLMClient)
        http = client._http
    assert http.is_closed


async def test_one_stream_resolves_its_client_type_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client makes one pure call per request, ``adapters.prepare`` (08 D79): neither
    building the request nor making the pipeline resolves the client type again."""
    resolved: list[str] = []
    real = adapters._resolve.resolve

    def counted(source: str, model: str | None = None, base_url: str | None = None) -> Any:
        resolved.append(source)
        return real(source, model, base_url)

    client = make(Provider(ok()))
    monkeypatch.setattr(adapters._resolve, "resolve", counted)
    events = await collect(client.streaming_response([USER], {"temperature": 0.5}))
    assert events[-1].event_type == "stop"
    assert resolved == ["openai-responses"]
