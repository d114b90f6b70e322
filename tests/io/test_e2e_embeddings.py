"""End to end: embeddings through ``AutoLLMClient`` over loopback HTTP against the simulator.

Four ways in (spec 04 §1, §2, 08 D64): the ``openai-embedding`` client type, ``openai-official``
with a ``text-embedding-*`` id (routed to ``openai-embedding``), and a Gemini embedding id on
``google-genai`` and on ``google-official`` (both send it to ``google-embedding``: one
``:batchEmbedContents`` call for every message). Each runs under asyncio and trio. The answer
is one JSON body, and the caller sees the same grammar as a stream: one ``embedding.delta`` and
``embedding.done`` per message in input order, then a stop with ``prompt_tokens`` (02 §10).
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
    EmbeddingDone,
    FinishReason,
    ImageUrlDone,
    TextDone,
    UniEvent,
    UniMessage,
    UsageMetadata,
)
from mmsp_core.testing import assert_stream_grammar
from mmsp_io import (
    AutoLLMClient,
    IncompleteStreamError,
    MalformedEventError,
    MMSPError,
    ProviderHTTPError,
    ProviderStreamError,
    Timeouts,
    UnsupportedContentError,
)
from mmsp_io.simulator import Reply, Simulator

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RELAXED = Timeouts(connect=5, first_event=10, idle=10, total=None)

#: (client type, model id, the protocol the simulator should see).
WAYS = [
    ("openai-embedding", "text-embedding-3-small", "openai-embedding"),
    ("openai-official", "text-embedding-3-large", "openai-embedding"),
    ("google-genai", "gemini-embedding-2", "google-embedding"),
    ("google-official", "gemini-embedding-2", "google-embedding"),
]
MESSAGES = [
    UniMessage("user", (TextDone("The cat sat"), TextDone(" on the mat."))),
    UniMessage("assistant", (TextDone("A dog barked."),)),
    UniMessage("user", (TextDone("Rain again."),)),
]
VECTORS = [(0.5, -0.25, 1.0), (), (2.0, 0.125)]
USAGE = UsageMetadata(prompt_tokens=14)


@pytest.fixture(params=WAYS, ids=[f"{client}:{model}" for client, model, _ in WAYS])
def way(request: pytest.FixtureRequest) -> tuple[str, str, str]:
    return request.param  # type: ignore[no-any-return]


def client_for(sim: Simulator, way: tuple[str, str, str], **options: Any) -> AutoLLMClient:
    client_type, model, protocol = way
    options = {"max_retries": 0, "timeouts": RELAXED, **options}
    return AutoLLMClient(model, api_key=sim.api_key, base_url=sim.base_url(protocol),
                         client_type=client_type, **options)


async def collect(stream: AsyncIterator[UniEvent]) -> tuple[list[UniEvent], MMSPError | None]:
    events: list[UniEvent] = []
    try:
        async with aclosing(stream) as items:  # type: ignore[type-var]
            async for event in items:
                events.append(event)
    except MMSPError as exc:
        return events, exc
    return events, None


def vectors(events: list[UniEvent]) -> list[tuple[float, ...]]:
    return [i.embedding for e in events for i in e.content_items if isinstance(i, EmbeddingDone)]


async def test_one_vector_per_message_in_input_order_then_the_input_count(
    way: tuple[str, str, str],
) -> None:
    reply = Reply(items=[EmbeddingDone(v) for v in VECTORS], usage=USAGE,
                  finish_reason=FinishReason.STOP)
    async with Simulator.running(reply) as sim, client_for(sim, way) as client:
        events, error = await collect(client.streaming_response(MESSAGES, {
            "embedding_config": {"dimensions": 3}}))
    assert error is None
    assert_stream_grammar(events)
    assert [e.content_items[0].type for e in events[:-1]] == [
        "embedding.delta", "embedding.done"] * 3
    assert vectors(events) == VECTORS
    assert (events[-1].usage_metadata, events[-1].finish_reason) == (USAGE, FinishReason.STOP)
    (request,) = sim.requests
    assert request.protocol == way[2]
    body = request.json
    if way[2] == "openai-embedding":
        assert request.path == "/v1/embeddings"
        assert request.header("authorization") == f"Bearer {sim.api_key}"
        assert body == {"model": way[1], "input": [
            "The cat sat on the mat.", "A dog barked.", "Rain again."],
            "dimensions": 3, "encoding_format": "base64"}
    else:
        assert request.path == f"/v1/models/{way[1]}:batchEmbedContents"
        assert request.header("x-goog-api-key") == sim.api_key
        assert [entry["content"]["role"] for entry in body["requests"]] == [
            "user", "model", "user"]
        assert {entry["outputDimensionality"] for entry in body["requests"]} == {3}


async def test_the_simulators_demo_gives_the_same_vector_for_the_same_text(
    way: tuple[str, str, str],
) -> None:
    same = [UniMessage.user("twice"), UniMessage.user("other"), UniMessage.user("twice")]
    async with Simulator.running() as sim, client_for(sim, way) as client:
        events, error = await collect(client.streaming_response(same, None))
    assert error is None
    first, other, again = vectors(events)
    assert first == again != other and len(first) == 8
    assert events[-1].usage_metadata is not None
    assert events[-1].usage_metadata.prompt_tokens == len(sim.requests[0].body) // 4


async def test_openai_vectors_are_paired_with_inputs_by_index(anyio_backend: str) -> None:
    recorded = FIXTURES / "openai-embedding" / "handmade-out-of-order-no-usage.json"
    expected = json.loads(recorded.with_name(
        "handmade-out-of-order-no-usage.expected.json").read_text())
    way = WAYS[1]
    async with Simulator.running(Reply.recorded(recorded)) as sim, client_for(sim, way) as client:
        events, error = await collect(client.streaming_response(MESSAGES, None))
    assert error is None
    assert vectors(events) == [tuple(item["embedding"]) for item in expected["items"]]
    assert events[-1].usage_metadata == UsageMetadata()


async def test_an_http_error_carries_the_providers_error(way: tuple[str, str, str]) -> None:
    reply = Reply(status=404, message="no such model")
    async with Simulator.running(reply) as sim, client_for(sim, way) as client:
        events, error = await collect(client.streaming_response(MESSAGES[:1], None))
    assert events == []
    assert isinstance(error, ProviderHTTPError)
    assert error.status == 404
    assert error.provider_message == "no such model"
    assert error.error_type == (
        "invalid_request_error" if way[2] == "openai-embedding" else "NOT_FOUND")


async def test_an_overload_in_the_body_is_retried_then_the_answer_comes(
    way: tuple[str, str, str],
) -> None:
    ok = Reply(items=[EmbeddingDone((1.0,))], usage=USAGE)
    async with Simulator.running(ok) as sim, client_for(sim, way, max_retries=1) as client:
        sim.script.append(Reply(items=[EmbeddingDone((1.0,))], error_after=0))
        events, error = await collect(client.streaming_response(MESSAGES[:1], None))
    assert error is None
    assert vectors(events) == [(1.0,)]
    assert len(sim.requests) == 2


async def test_an_overload_without_retries_is_a_provider_stream_error(
    way: tuple[str, str, str],
) -> None:
    reply = Reply(items=[EmbeddingDone((1.0,))], error_after=0)
    async with Simulator.running(reply) as sim, client_for(sim, way) as client:
        events, error = await collect(client.streaming_response(MESSAGES[:1], None))
    assert events == []
    assert isinstance(error, ProviderStreamError)
    assert error.retryable


async def test_a_body_cut_short_is_incomplete(way: tuple[str, str, str]) -> None:
    """A cut body is an incomplete answer chained from the transport failure (08 D19), though
    what arrived of one JSON body is not JSON."""
    reply = Reply(items=[EmbeddingDone(v) for v in VECTORS], usage=USAGE, cut_after=20)
    async with Simulator.running(reply) as sim, client_for(sim, way) as client:
        events, error = await collect(client.streaming_response(MESSAGES, None))
    assert events == []
    assert isinstance(error, IncompleteStreamError)
    assert error.missing == ("usage_metadata", "finish_reason")
    assert isinstance(error.__cause__, httpx.TransportError)


async def test_a_whole_body_that_is_not_an_answer_is_malformed(anyio_backend: str) -> None:
    reply = Reply(body=b'{"data": "not a list"}', content_type="application/json")
    async with Simulator.running(reply) as sim, client_for(sim, WAYS[0]) as client:
        events, error = await collect(client.streaming_response(MESSAGES, None))
    assert events == []
    assert isinstance(error, MalformedEventError)


async def test_content_the_endpoint_cannot_embed_is_refused_before_any_request(
    anyio_backend: str,
) -> None:
    image = UniMessage("user", (ImageUrlDone("data:image/png;base64,iVBORw0KGgo="),))
    async with Simulator.running() as sim, client_for(sim, WAYS[0]) as client:
        events, error = await collect(client.streaming_response([image], None))
    assert events == []
    assert isinstance(error, UnsupportedContentError)
    assert error.item_type == "image_url"
    assert sim.requests == []


async def test_gemini_embeds_images_as_inline_data(anyio_backend: str) -> None:
    image = UniMessage("user", (TextDone("a pixel"),
                                ImageUrlDone("data:image/png;base64,iVBORw0KGgo=")))
    async with Simulator.running() as sim, client_for(sim, WAYS[2]) as client:
        events, error = await collect(client.streaming_response([image], None))
    assert error is None and len(vectors(events)) == 1
    parts = sim.requests[0].json["requests"][0]["content"]["parts"]
    assert parts == [{"text": "a pixel"},
                     {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]


@pytest.mark.parametrize("client_type", ["google-genai", "google-official"])
async def test_gemini_embeds_an_http_image_fetched_as_inline_data(
    client_type: str, anyio_backend: str
) -> None:
    """Gemini takes no arbitrary image URLs: the client fetches them first (08 D37)."""
    png = b"\x89PNG\r\n\x1a\n-pixels"

    def images(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=png, headers={"content-type": "image/png"})

    url = "https://images.test/cat.png"
    message = UniMessage("user", (TextDone("a cat"), ImageUrlDone(url)))
    async with (
        Simulator.running() as sim,
        httpx.AsyncClient(mounts={"https://images.test": httpx.MockTransport(images)}) as http,
        client_for(sim, (client_type, "gemini-embedding-2", "google-embedding"),
                   http_client=http) as client,
    ):
        events, error = await collect(client.streaming_response([message], None))
    assert error is None and len(vectors(events)) == 1
    assert sim.requests[-1].json["requests"][0]["content"]["parts"][1] == {
        "inlineData": {"mimeType": "image/png", "data": base64.b64encode(png).decode()}}


async def test_the_openai_embedding_client_lists_models(anyio_backend: str) -> None:
    async with (
        Simulator.running(models=("text-embedding-3-small", "gpt-6")) as sim,
        client_for(sim, WAYS[0]) as client,
    ):
        assert await client.list_models() == ["text-embedding-3-small", "gpt-6"]
