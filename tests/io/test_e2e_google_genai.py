"""End to end for google-genai: ``AutoLLMClient`` over loopback HTTP against the provider
simulator's generateContent endpoint, under asyncio and trio (spec 04 §4, §5, 05 §5, 06 §4,
08 D4, D17, D37).

The scenarios' items are fixed points of the protocol's normalisation (``render``'s
docstring), so the public stream gives back exactly what was sent. The history tests check
what the next request carries: every signature back on the part it came with.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import httpx
import pytest

from mmsp_core.model import (
    DoneItem,
    FinishReason,
    ImageUrlDone,
    InlineDataDone,
    InlineThinkingDone,
    TextDone,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniEvent,
    UniMessage,
    UsageMetadata,
)
from mmsp_core.testing import assert_stream_grammar
from mmsp_io import (
    AutoLLMClient,
    EmptyResponseError,
    MMSPError,
    ProviderHTTPError,
    ProviderStreamError,
    Timeouts,
)
from mmsp_io.simulator import Reply, Simulator

pytestmark = pytest.mark.anyio

PROTOCOL = CLIENT = "google-genai"
MODEL = "gemini-3.8-flash"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / PROTOCOL
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
USAGE = UsageMetadata(cached_tokens=3, prompt_tokens=20, thoughts_tokens=5, response_tokens=9)
WEATHER = ToolSchema(
    name="get_weather",
    description="The current weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
QUESTION = UniMessage(role="user", content_items=(TextDone(text="Weather in Paris?"),))
CONFIG = UniConfig(tools=(WEATHER,), thinking_level=ThinkingLevel.NONE, thinking_summary=True)
TOOL_TURN: tuple[DoneItem, ...] = (
    ThinkingDone(thinking="Let me look the weather up."),
    ToolCallDone(name="get_weather", tool_call_id="get_weather", arguments={"city": "Paris"},
                 fidelity={"signature": "c2lnLWNhbGw="}),
    ToolCallDone(name="get_time", tool_call_id="get_time", arguments={}),
)
ANSWER: tuple[DoneItem, ...] = (
    TextDone(text="It is sunny in Paris.", fidelity={"signature": "c2lnLXRleHQ="}),
)
RELAXED = Timeouts(connect=5, first_event=10, idle=10, total=None)


def client_for(sim: Simulator, **options: Any) -> AutoLLMClient:
    options = {"max_retries": 0, "timeouts": RELAXED, **options}
    return AutoLLMClient(
        MODEL,
        api_key=options.pop("api_key", sim.api_key),
        base_url=sim.base_url(PROTOCOL),
        client_type=CLIENT,
        **options,
    )


async def collect(stream: AsyncIterator[UniEvent]) -> tuple[list[UniEvent], MMSPError | None]:
    events: list[UniEvent] = []
    try:
        async with aclosing(stream) as items:  # type: ignore[type-var]
            async for event in items:
                events.append(event)
    except MMSPError as exc:
        return events, exc
    return events, None


def done_items(events: list[UniEvent]) -> list[Any]:
    return [
        e.content_items[0]
        for e in events
        if e.event_type == "delta" and e.content_items[0].type.endswith(".done")
    ]


def sent_contents(sim: Simulator, index: int) -> Any:
    return sim.requests[index].json["contents"]


@pytest.mark.parametrize("chunk_size", [None, 5])
async def test_a_tool_turn_streams_back_as_sent(chunk_size: int | None) -> None:
    reply = Reply(items=TOOL_TURN, usage=USAGE, finish_reason=FinishReason.TOOL_CALL,
                  chunk_size=chunk_size)
    async with (
        Simulator.running(reply, api_key="AIza-canary-e2e") as sim,
        client_for(sim) as client,
    ):
        events, error = await collect(client.streaming_response([QUESTION], CONFIG))
    assert error is None
    assert_stream_grammar(events)
    assert done_items(events) == list(TOOL_TURN)
    assert (events[-1].usage_metadata, events[-1].finish_reason) == (USAGE, FinishReason.TOOL_CALL)
    [request] = sim.requests
    assert request.protocol == PROTOCOL
    assert request.path == f"/v1/models/{MODEL}:streamGenerateContent"
    assert request.query == "alt=sse"
    # The key travels in x-goog-api-key only, never in the URL (08 D17).
    assert [name for name, value in request.headers if "AIza-canary-e2e" in value] == [
        "x-goog-api-key"
    ]
    assert request.json["generationConfig"] == {
        "thinkingConfig": {"thinkingLevel": "LOW", "includeThoughts": True}
    }


async def test_signatures_are_replayed_on_their_parts_across_turns() -> None:
    async with Simulator.running() as sim, client_for(sim) as client:
        sim.script.extend([
            Reply(items=TOOL_TURN, usage=USAGE, finish_reason=FinishReason.TOOL_CALL),
            Reply(items=ANSWER, usage=USAGE),
            Reply(items=(TextDone("Bye."),), usage=USAGE),
        ])
        _, error = await collect(client.streaming_response_stateful(QUESTION, CONFIG))
        assert error is None
        results = UniMessage("user", (
            ToolResultDone('{"sky": "sunny"}', "get_weather"), ToolResultDone("noon", "get_time"),
        ))
        _, error = await collect(client.streaming_response_stateful(results, CONFIG))
        assert error is None
        thanks = UniMessage("user", (TextDone("Thanks!"),))
        _, error = await collect(client.streaming_response_stateful(thanks, CONFIG))
        assert error is None
        history = client.get_history()
    assert [m.role for m in history] == ["user", "assistant"] * 3
    assert history[1].content_items == TOOL_TURN
    assert history[3].content_items == ANSWER
    model_turn = {"role": "model", "parts": [
        {"text": "Let me look the weather up.", "thought": True},
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
         "thoughtSignature": "c2lnLWNhbGw="},
        {"functionCall": {"name": "get_time", "args": {}}},
    ]}
    answers = {"role": "user", "parts": [
        {"functionResponse": {"name": "get_weather", "response": {"result": '{"sky": "sunny"}'}}},
        {"functionResponse": {"name": "get_time", "response": {"result": "noon"}}},
    ]}
    assert sent_contents(sim, 1)[1:] == [model_turn, answers]
    assert sent_contents(sim, 2)[1:] == [
        model_turn,
        answers,
        {"role": "model", "parts": [{"text": "It is sunny in Paris.",
                                     "thoughtSignature": "c2lnLXRleHQ="}]},
        {"role": "user", "parts": [{"text": "Thanks!"}]},
    ]


async def test_images_stream_as_inline_data_and_thought_images_as_inline_thinking() -> None:
    items = (
        InlineThinkingDone(data=PNG, mime_type="image/png", fidelity={"signature": "c2ln"}),
        InlineDataDone(data=PNG, mime_type="image/png"),
        TextDone(text="Here it is."),
    )
    async with (
        Simulator.running(Reply(items=items, usage=USAGE)) as sim,
        client_for(sim) as client,
    ):
        events, error = await collect(client.streaming_response([QUESTION], None))
    assert error is None
    assert done_items(events) == list(items)


async def test_an_http_image_is_fetched_and_sent_as_inline_data() -> None:
    """Gemini takes no arbitrary image URLs: the I/O layer fetches them first (08 D37)."""
    seen: list[httpx.Request] = []

    def images(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=PNG, headers={"content-type": "image/png"})

    url = "https://images.test/cat.png"
    message = UniMessage(role="user", content_items=(TextDone(text="What is this?"),
                                                     ImageUrlDone(image_url=url)))
    reply = Reply(items=(TextDone(text="A cat."),), usage=USAGE)
    async with (
        httpx.AsyncClient(mounts={"https://images.test": httpx.MockTransport(images)}) as http,
        Simulator.running(reply) as sim,
        client_for(sim, http_client=http) as client,
    ):
        _, error = await collect(client.streaming_response_stateful(message, None))
        history = client.get_history()
    assert error is None
    assert [str(r.url) for r in seen] == [url]
    assert "x-goog-api-key" not in seen[0].headers
    assert sent_contents(sim, 0) == [{"role": "user", "parts": [
        {"text": "What is this?"},
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}},
    ]}]
    assert history[0].content_items[1] == ImageUrlDone(image_url=url)  # the URL is kept


async def test_a_recorded_stream_replays_through_the_client() -> None:
    reply = Reply.recorded(FIXTURES / "thought-then-functioncall.sse")
    async with Simulator.running(reply) as sim, client_for(sim) as client:
        events, error = await collect(client.streaming_response([QUESTION], CONFIG))
    assert error is None
    [thinking, call] = done_items(events)
    assert isinstance(thinking, ThinkingDone) and isinstance(call, ToolCallDone)
    assert call.arguments == {"location": "Florence, Italy"}
    assert call.fidelity is not None and "signature" in call.fidelity
    assert events[-1].finish_reason == FinishReason.TOOL_CALL


async def test_an_in_stream_error_is_a_provider_stream_error() -> None:
    reply = Reply(items=TOOL_TURN, usage=USAGE, finish_reason=FinishReason.TOOL_CALL,
                  error_after=1)
    async with Simulator.running(reply) as sim, client_for(sim) as client:
        events, error = await collect(client.streaming_response([QUESTION], CONFIG))
    assert isinstance(error, ProviderStreamError)
    assert (error.code, error.error_type) == (503, "UNAVAILABLE")
    assert error.retryable
    assert all(e.event_type == "delta" for e in events)


async def test_a_blocked_prompt_is_an_empty_response() -> None:
    body = (b'data: {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, '
            b'"usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}}\r\n\r\n')
    async with Simulator.running(Reply(body=body)) as sim, client_for(sim) as client:
        events, error = await collect(client.streaming_response([QUESTION], None))
    assert events == []
    assert isinstance(error, EmptyResponseError)
    assert error.finish_reason == "unknown"
    assert error.usage_metadata == UsageMetadata(prompt_tokens=9)


@pytest.mark.parametrize(("status", "error_type"), [(429, "RESOURCE_EXHAUSTED"),
                                                    (500, "INTERNAL")])
async def test_google_error_bodies_are_read(status: int, error_type: str) -> None:
    reply = Reply(status=status, message="Simulated.", retry_after=0)
    async with Simulator.running(reply) as sim, client_for(sim) as client:
        _, error = await collect(client.streaming_response([QUESTION], None))
    assert isinstance(error, ProviderHTTPError)
    assert (error.status, error.error_type, error.provider_message) == (
        status, error_type, "Simulated."
    )


async def test_a_wrong_key_is_refused_with_google_s_401() -> None:
    async with Simulator.running() as sim, client_for(sim, api_key="wrong") as client:
        _, error = await collect(client.streaming_response([QUESTION], None))
    assert isinstance(error, ProviderHTTPError)
    assert (error.status, error.error_type) == (401, "UNAUTHENTICATED")


async def test_the_demo_script_runs_an_agent_turn() -> None:
    async with Simulator.running() as sim, client_for(sim) as client:
        events, error = await collect(client.streaming_response_stateful(QUESTION, CONFIG))
        assert error is None
        [call] = [item for item in done_items(events) if isinstance(item, ToolCallDone)]
        assert call.arguments == {"city": "Paris"}
        result = UniMessage("user", (ToolResultDone("22 degrees", call.tool_call_id),))
        events, error = await collect(client.streaming_response_stateful(result, CONFIG))
    assert error is None
    assert done_items(events)[-1] == TextDone("Here is what I found: 22 degrees")


async def test_list_models_reads_google_s_model_list() -> None:
    async with (
        Simulator.running(models=("gemini-3.8-flash", "gemini-4-argon")) as sim,
        client_for(sim) as client,
    ):
        assert await client.list_models() == ["gemini-3.8-flash", "gemini-4-argon"]
    [request] = sim.requests
    assert (request.method, request.path) == ("GET", "/v1/models")
    assert request.header("x-goog-api-key") == sim.api_key
