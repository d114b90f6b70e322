"""What a user scripts the simulator to answer (``Reply`` and its helpers), what the canned
agent turn answers (``demo_script``), and what the simulator records, through
``AutoLLMClient`` under asyncio and trio (issue 26 item 2)."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import pytest
from httpfakes import clean_environment
from test_simulator_faults import PROTOCOLS, client_for, done_items, framing_of

import adapters
from mmsp_core.model import (
    EmbeddingDone,
    FinishReason,
    InlineDataDone,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniEvent,
    UniMessage,
    UsageMetadata,
)
from mmsp_core.testing import assert_stream_grammar
from mmsp_io import MMSPError, ProviderHTTPError, Timeouts
from mmsp_io.simulator import RecordedRequest, Reply, Simulator

__all__ = ["clean_environment"]

pytestmark = pytest.mark.anyio

RELAXED = Timeouts(connect=5, first_event=10, idle=10)
#: The protocols that generate (not embeddings), and the embedding ones.
GENERATING = [name for name in PROTOCOLS if framing_of(name) != "body"]
EMBEDDING = [name for name in PROTOCOLS if framing_of(name) == "body"]
WEATHER = ToolSchema(
    name="get_weather",
    description="The current weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}},
                "required": ["city"]},
)


async def collect(
    stream: Any,
) -> tuple[list[UniEvent], MMSPError | None]:
    events: list[UniEvent] = []
    try:
        async with aclosing(stream) as received:
            async for event in received:
                events.append(event)
    except MMSPError as exc:
        return events, exc
    return events, None


# -- the canned agent turn -------------------------------------------------------------------


@pytest.mark.parametrize("protocol", GENERATING)
async def test_a_second_question_gets_a_new_tool_call_not_the_first_result_again(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The canned turn answers only the tool results that follow the last question: asked
    about Tokyo after Paris, it calls the tool for Tokyo instead of quoting Paris's weather."""
    config = UniConfig(tools=(WEATHER,))
    async with Simulator.running() as sim, client_for(sim, protocol, monkeypatch,
                                                      RELAXED) as client:
        answers: list[list[Any]] = []
        message = UniMessage.user("What is the weather in Paris?")
        for result in ("18 degrees in Paris", None, "24 degrees in Tokyo", None):
            events, error = await collect(client.streaming_response_stateful(message, config))
            assert error is None, error
            answers.append(done_items(events))
            calls = [item for item in answers[-1] if isinstance(item, ToolCallDone)]
            if result is None:
                message = UniMessage.user("And what is the weather in Tokyo?")
                continue
            assert [call.arguments for call in calls] == [
                {"city": "Paris" if "Paris" in result else "Tokyo"}]
            message = UniMessage("user", (ToolResultDone(result, calls[0].tool_call_id),))
    assert answers[1][-1] == TextDone("Here is what I found: 18 degrees in Paris")
    assert answers[3][-1] == TextDone("Here is what I found: 24 degrees in Tokyo")


@pytest.mark.parametrize("protocol", EMBEDDING)
@pytest.mark.parametrize("dimensions", [3, 100])
async def test_the_canned_embeddings_have_the_size_the_request_asks_for(
    protocol: str, dimensions: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Simulator.running() as sim, client_for(sim, protocol, monkeypatch,
                                                      RELAXED) as client:
        sized, error = await collect(client.streaming_response(
            [UniMessage.user("The cat sat.")], {"embedding_config": {"dimensions": dimensions}}))
        default, default_error = await collect(client.streaming_response(
            [UniMessage.user("The cat sat.")]))
    assert error is None and default_error is None, (error, default_error)
    [vector] = [item.embedding for item in done_items(sized)]
    [eight] = [item.embedding for item in done_items(default)]
    assert len(vector) == dimensions
    assert len(eight) == 8
    assert all(-1 <= value < 1 for value in vector)


@pytest.mark.parametrize("protocol", EMBEDDING)
async def test_an_embedding_size_past_the_bound_is_refused(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Simulator.running() as sim, client_for(sim, protocol, monkeypatch,
                                                      RELAXED) as client:
        _, error = await collect(client.streaming_response(
            [UniMessage.user("x")], {"embedding_config": {"dimensions": 10**6}}))
    assert isinstance(error, ProviderHTTPError) and error.status == 400, error
    assert "at most 65536 dimensions" in str(error)


# -- scripted answers ------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", GENERATING)
async def test_scripted_text_thinking_and_tool_calls_arrive_in_order(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    usage = UsageMetadata(cached_tokens=0, prompt_tokens=40, response_tokens=9)
    async with Simulator.running() as sim, client_for(sim, protocol, monkeypatch,
                                                      RELAXED) as client:
        sim.script.extend([
            Reply.tool_call("get_weather", {"city": "Lima", "days": [1, 2]},
                            thinking="Lima, then.", usage=usage),
            Reply.text("Overcast.", finish_reason=FinishReason.LENGTH, usage=usage),
        ])
        first, error = await collect(client.streaming_response([UniMessage.user("Lima?")]))
        second, second_error = await collect(client.streaming_response(
            [UniMessage.user("Lima?")]))
    assert error is None and second_error is None, (error, second_error)
    assert_stream_grammar(first)
    thinking, call = done_items(first)
    assert isinstance(thinking, ThinkingDone) and thinking.thinking == "Lima, then."
    assert isinstance(call, ToolCallDone)
    assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "Lima", "days": [1, 2]})
    assert first[-1].finish_reason == FinishReason.TOOL_CALL
    assert done_items(second) == [TextDone("Overcast.")]
    assert second[-1].finish_reason == FinishReason.LENGTH
    # What each wire carries of the usage survives it (the record's normalize_usage).
    normalize_usage = adapters.PROTOCOLS[protocol].normalize_usage
    assert first[-1].usage_metadata == second[-1].usage_metadata == normalize_usage(usage)
    assert sim.script == type(sim.script)()  # both scripted answers were taken


async def test_a_scripted_image_arrives_on_a_wire_that_carries_images(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    image = InlineDataDone(data=b"\x89PNG\r\n\x1a\n-pixels", mime_type="image/png")
    async with (
        Simulator.running(Reply(items=[TextDone("Here it is."), image])) as sim,
        client_for(sim, "google-genai", monkeypatch, RELAXED) as client,
    ):
        events, error = await collect(client.streaming_response([UniMessage.user("Draw")]))
    assert error is None, error
    assert done_items(events) == [TextDone("Here it is."), image]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_error_status_with_its_body_and_retry_after(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = b'{"error": {"message": "Slow down.", "type": "rate_limit_error"}}'
    async with Simulator.running() as sim, client_for(sim, protocol, monkeypatch,
                                                      RELAXED) as client:
        sim.script.append(Reply.error(429, body=body, retry_after=7))
        _, error = await collect(client.streaming_response([UniMessage.user("hi")]))
    assert isinstance(error, MMSPError), error
    if adapters.PROTOCOLS[protocol].traits.upstream_errors:
        return  # a gateway's refusal is its UpstreamError, read from its own body shape
    assert isinstance(error, ProviderHTTPError), error
    assert (error.status, error.retry_after) == (429, 7.0)
    assert error.provider_message == "Slow down."


def test_an_error_reply_needs_an_error_status() -> None:
    with pytest.raises(ValueError, match="400-599"):
        Reply.error(200)


async def test_without_a_body_the_error_is_the_providers_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with (
        Simulator.running(Reply.error(503, message="Down for a bit.")) as sim,
        client_for(sim, "ant-messages", monkeypatch, RELAXED) as client,
    ):
        _, error = await collect(client.streaming_response([UniMessage.user("hi")]))
    assert isinstance(error, ProviderHTTPError), error
    assert (error.status, error.error_type, error.provider_message) == (
        503, "api_error", "Down for a bit.")


# -- what the simulator records --------------------------------------------------------------


async def test_requests_are_recorded_and_print_without_their_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with (
        Simulator.running(api_key="sk-sim-secret-value") as sim,
        client_for(sim, "ant-messages", monkeypatch, RELAXED) as client,
    ):
        _, error = await collect(client.streaming_response([UniMessage.user("Hello")]))
    assert error is None, error
    [request] = sim.requests
    assert (request.method, request.path, request.protocol) == ("POST", "/v1/messages",
                                                                "ant-messages")
    assert request.json["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Hello"}]}]
    # The key is where the client put it, for a test to check, but never shown.
    assert request.header("x-api-key") == "sk-sim-secret-value"
    assert dict(request.safe_headers)["x-api-key"] == "[redacted]"
    assert "sk-sim-secret-value" not in repr(request)
    assert "sk-sim-secret-value" not in repr(sim.requests)
    assert "[redacted]" in repr(request)


def test_safe_headers_hide_every_credential_header() -> None:
    headers = (("Authorization", "Bearer a"), ("x-api-key", "b"), ("x-goog-api-key", "c"),
               ("api-key", "d"), ("x-amz-security-token", "e"), ("content-type", "f"))
    request = RecordedRequest("POST", "/", "", headers, b"", None, None)
    assert [value for _, value in request.safe_headers] == ["[redacted]"] * 5 + ["f"]


async def test_a_scripted_embedding_of_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    vector = tuple(i / 64 for i in range(-32, 32))
    async with (
        Simulator.running(Reply(items=[EmbeddingDone(vector)])) as sim,
        client_for(sim, "openai-embedding", monkeypatch, RELAXED) as client,
    ):
        events, error = await collect(client.streaming_response([UniMessage.user("x")]))
    assert error is None, error
    assert [item.embedding for item in done_items(events)] == [vector]

