"""End to end for google-official: ``AutoLLMClient`` over loopback HTTP against the provider
simulator's Gemini Interactions endpoint, under asyncio and trio (spec 04 §4, 05 §5, 06 §5,
08 D4, D17, D37).

The scenarios' items are fixed points of the protocol's normalisation (``render``'s
docstring), so the public stream gives back exactly what was sent. The history tests check
what the next request carries: each thought step with the signature it streamed with, on the
step in front of the call or answer it belongs to.
"""

from __future__ import annotations

import base64
import json
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
    MMSPError,
    ProviderHTTPError,
    ProviderStreamError,
    Timeouts,
)
from mmsp_io.simulator import Reply, Simulator

pytestmark = pytest.mark.anyio

PROTOCOL = "google-interactions"
CLIENT = "google-official"
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
CONFIG = UniConfig(tools=(WEATHER,), thinking_level=ThinkingLevel.HIGH)
SCENARIO: tuple[DoneItem, ...] = (
    ThinkingDone(thinking="Let me look the weather up.", fidelity={"signature": "c2lnLTE="}),
    TextDone(text="Checking."),
    ToolCallDone(name="get_weather", tool_call_id="call_01", arguments={"city": "Paris"}),
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


def done_items(events: list[UniEvent]) -> list[DoneItem]:
    return [
        e.content_items[0]  # type: ignore[misc]
        for e in events
        if e.event_type == "delta" and e.content_items[0].type.endswith(".done")
    ]


def sent_steps(sim: Simulator, index: int) -> list[dict[str, Any]]:
    return sim.requests[index].json["input"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("chunk_size", [None, 7])
async def test_the_public_stream_gives_back_the_scenario(chunk_size: int | None) -> None:
    reply = Reply(items=SCENARIO, usage=USAGE, finish_reason=FinishReason.TOOL_CALL,
                  chunk_size=chunk_size)
    async with Simulator.running(reply, api_key="AIza-canary") as sim, client_for(sim) as client:
        events, error = await collect(client.streaming_response([QUESTION], CONFIG))
    assert error is None
    assert_stream_grammar(events)
    assert done_items(events) == list(SCENARIO)
    stop = events[-1]
    assert (stop.usage_metadata, stop.finish_reason) == (USAGE, FinishReason.TOOL_CALL)
    [request] = sim.requests
    assert (request.method, request.path, request.protocol) == ("POST", "/v1/interactions",
                                                                PROTOCOL)
    # The key travels in x-goog-api-key only, never in the URL (08 D17).
    assert [name for name, value in request.headers if "AIza-canary" in value] == [
        "x-goog-api-key"
    ]
    assert "AIza-canary" not in request.path
    assert (request.json["model"], request.json["stream"], request.json["store"]) == (
        MODEL, True, False)
    assert request.json["generation_config"] == {"thinking_level": "high"}


async def test_images_audio_and_thought_images_come_back_whole() -> None:
    items: tuple[DoneItem, ...] = (
        InlineThinkingDone(data=PNG, mime_type="image/png", fidelity={"signature": "c2ln"}),
        TextDone(text="Here it is:"),
        InlineDataDone(data=PNG, mime_type="image/png"),
        InlineDataDone(data=bytes(range(256)) * 8, mime_type="audio/L16; rate=24000; channels=1"),
    )
    reply = Reply(items=items, usage=USAGE, finish_reason=FinishReason.STOP, chunk_size=64)
    async with Simulator.running(reply) as sim, client_for(sim) as client:
        events, error = await collect(client.streaming_response([QUESTION], None))
    assert error is None
    assert_stream_grammar(events)
    assert done_items(events) == list(items)


async def test_thought_signatures_are_replayed_across_turns() -> None:
    first = Reply(items=SCENARIO, usage=USAGE, finish_reason=FinishReason.TOOL_CALL)
    second = Reply(
        items=(ThinkingDone(thinking="", fidelity={"signature": "c2lnLTI="}),
               TextDone(text="It is 18 C and raining.")),
        usage=USAGE, finish_reason=FinishReason.STOP,
    )
    third = Reply(items=(TextDone(text="You are welcome."),), usage=USAGE,
                  finish_reason=FinishReason.STOP)
    async with Simulator.running() as sim, client_for(sim) as client:
        sim.script.extend([first, second, third])
        _, error = await collect(client.streaming_response_stateful(QUESTION, CONFIG))
        assert error is None
        result = ToolResultDone(text="18 C and rain", tool_call_id="call_01")
        answer, error = await collect(client.streaming_response_stateful(
            UniMessage(role="user", content_items=(result,)), CONFIG))
        assert error is None
        assert done_items(answer)[0] == ThinkingDone("", {"signature": "c2lnLTI="})
        thanks = UniMessage(role="user", content_items=(TextDone(text="Thanks!"),))
        _, error = await collect(client.streaming_response_stateful(thanks, CONFIG))
        assert error is None
        assert len(client.get_history()) == 6

    user_step = {"type": "user_input", "content": [{"type": "text", "text": "Weather in Paris?"}]}
    turn_one = [
        {"type": "thought", "summary": [{"type": "text", "text": "Let me look the weather up."}],
         "signature": "c2lnLTE="},
        {"type": "model_output", "content": [{"type": "text", "text": "Checking."}]},
        {"type": "function_call", "name": "get_weather", "arguments": {"city": "Paris"},
         "id": "call_01"},
    ]
    result_step = {"type": "function_result", "name": "get_weather", "result": "18 C and rain",
                   "call_id": "call_01"}
    assert sent_steps(sim, 1) == [user_step, *turn_one, result_step]
    assert sent_steps(sim, 2) == [
        user_step, *turn_one, result_step,
        {"type": "thought", "signature": "c2lnLTI="},
        {"type": "model_output", "content": [{"type": "text", "text": "It is 18 C and raining."}]},
        {"type": "user_input", "content": [{"type": "text", "text": "Thanks!"}]},
    ]


async def test_a_recorded_tool_turn_replays_the_recorded_signature() -> None:
    recorded = json.loads((FIXTURES / "function-call-requires-action.expected.json").read_text())
    signature = recorded["items"][0]["fidelity"]["signature"]
    async with Simulator.running() as sim, client_for(sim) as client:
        sim.script.extend([
            Reply.recorded(FIXTURES / "function-call-requires-action.sse"),
            Reply.recorded(FIXTURES / "after-function-result-text.sse"),
        ])
        first, error = await collect(client.streaming_response_stateful(QUESTION, CONFIG))
        assert error is None
        assert first[-1].finish_reason == FinishReason.TOOL_CALL
        call = done_items(first)[-1]
        assert isinstance(call, ToolCallDone)
        result = ToolResultDone(text='{"weather": "sunny", "temperature": 27}',
                                tool_call_id=call.tool_call_id)
        second, error = await collect(client.streaming_response_stateful(
            UniMessage(role="user", content_items=(result,)), CONFIG))
    assert error is None
    assert done_items(second)[-1] == TextDone(
        "The weather in San Francisco right now is sunny with a temperature of 27 degrees Celsius."
    )
    assert sent_steps(sim, 1)[1:] == [
        {"type": "thought", "signature": signature},
        {"type": "function_call", "name": "getWeather", "arguments": {"location": "San Francisco"},
         "id": "61nzpsv4"},
        {"type": "function_result", "name": "getWeather", "result": result.text,
         "call_id": "61nzpsv4"},
    ]


async def test_an_http_image_is_fetched_and_sent_as_inline_data() -> None:
    """Gemini takes no arbitrary image URLs: the I/O layer fetches them first (08 D37)."""
    seen: list[httpx.Request] = []

    def images(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=PNG, headers={"content-type": "image/png"})

    url = "https://images.test/cat.png"
    message = UniMessage(role="user", content_items=(TextDone(text="What is this?"),
                                                     ImageUrlDone(image_url=url)))
    reply = Reply(items=(TextDone(text="A cat."),), usage=USAGE, finish_reason=FinishReason.STOP)
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
    assert sent_steps(sim, 0) == [{"type": "user_input", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "data": base64.b64encode(PNG).decode(), "mime_type": "image/png"},
    ]}]
    assert history[0].content_items[1] == ImageUrlDone(image_url=url)  # the URL is kept


async def test_an_in_stream_error_event_is_a_provider_stream_error() -> None:
    reply = Reply(items=SCENARIO, usage=USAGE, finish_reason=FinishReason.TOOL_CALL,
                  error_after=5)
    async with Simulator.running(reply) as sim, client_for(sim) as client:
        events, error = await collect(client.streaming_response([QUESTION], CONFIG))
    assert isinstance(error, ProviderStreamError)
    assert (error.code, error.error_type) == (503, "UNAVAILABLE")
    assert error.retryable
    assert all(e.event_type == "delta" for e in events)
    assert len(sim.requests) == 1


@pytest.mark.parametrize(("status", "error_type"), [(429, "RESOURCE_EXHAUSTED"),
                                                    (500, "INTERNAL")])
async def test_http_errors_carry_googles_error(status: int, error_type: str) -> None:
    reply = Reply(status=status, message="simulated trouble")
    async with Simulator.running(reply) as sim, client_for(sim) as client:
        events, error = await collect(client.streaming_response([QUESTION], CONFIG))
    assert events == []
    assert isinstance(error, ProviderHTTPError)
    assert (error.status, error.error_type, error.provider_message) == (
        status, error_type, "simulated trouble")


async def test_a_wrong_key_is_refused_and_never_shown() -> None:
    async with (
        Simulator.running(Reply(items=SCENARIO, usage=USAGE)) as sim,
        client_for(sim, api_key="AIza-wrong-canary") as client,
    ):
        events, error = await collect(client.streaming_response([QUESTION], None))
    assert events == []
    assert isinstance(error, ProviderHTTPError)
    assert (error.status, error.error_type) == (401, "UNAUTHENTICATED")
    assert "AIza-wrong-canary" not in f"{error} {error!r} {error.provider_message}"
