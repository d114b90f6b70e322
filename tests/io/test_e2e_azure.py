"""End to end for Azure OpenAI: ``AutoLLMClient`` on openai-chat, openai-responses and
openai-embedding over loopback HTTP against the simulator's Azure endpoint, under asyncio and
trio (08 D72, D19, D61; spec 04 §3).

The simulator's Azure endpoint lives on a loopback host, so its base URL is Azure's by the
``api-version`` in its query (a private endpoint); a base URL on Azure's host is checked through
an ``httpx.MockTransport`` (no network). Azure's endpoint takes the key in ``api-key`` only,
answers Chat chunks annotated with its content-filter results, and errors in its own body.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import httpx
import pytest
from httpfakes import Body, clean_environment, mock_client
from test_security import ECHO, LONG_KEY, leaks, shown_texts

import adapters
from adapters.openai_chat.simulate import azure_annotations
from mmsp_core.model import (
    DoneItem,
    EmbeddingDone,
    FinishReason,
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
from mmsp_io import (
    ApiKeyRequiredError,
    AutoLLMClient,
    MMSPError,
    ProviderHTTPError,
    ProviderStreamError,
    Timeouts,
)
from mmsp_io.simulator import Reply, Simulator

__all__ = ["clean_environment"]

pytestmark = pytest.mark.anyio

KEY = "az-sim-0123456789abcdef0123"
VERSION = "2025-04-01-preview"
RELAXED = Timeouts(connect=5, first_event=10, idle=10, total=None)
#: The generation client types Azure serves, and the path each one's requests go to.
AGENTS = {"openai-chat": "chat/completions", "openai-responses": "responses"}
WEATHER = ToolSchema(
    name="get_weather",
    description="The current weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
QUESTION = UniMessage("user", (TextDone("What is the weather in Paris?"),))
CONFIG = UniConfig(tools=(WEATHER,))
USAGE = UsageMetadata(cached_tokens=0, prompt_tokens=10, response_tokens=5)


@pytest.fixture(autouse=True)
def no_azure_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see none of Azure's variables unless they set one (``clean_environment`` clears
    the ``_API_KEY`` and ``_BASE_URL`` ones)."""
    for name in ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)


def azure_url(sim: Simulator, protocol: str) -> str:
    """The simulator's Azure endpoint of ``protocol`` with an ``api-version``: Azure's by it."""
    return f"{sim.base_url(protocol, azure=True)}?api-version={VERSION}"


def client_for(sim: Simulator, client_type: str, **options: Any) -> AutoLLMClient:
    options = {"max_retries": 0, "timeouts": RELAXED, "api_key": KEY, **options}
    return AutoLLMClient("my-deployment", client_type=client_type,
                         base_url=options.pop("base_url", azure_url(sim, client_type)), **options)


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
        item for event in events if event.event_type == "delta"
        for item in event.content_items if item.type.endswith(".done")
    ]


def assert_sent_as_azure(sim: Simulator, path: str) -> None:
    """Every request went to Azure's ``path`` with the api-version, the key in api-key only."""
    assert sim.requests
    for request in sim.requests:
        assert (request.path, request.query) == (f"/azure/openai/v1/{path}",
                                                 f"api-version={VERSION}")
        assert request.header("api-key") == KEY
        assert request.header("authorization") is None


# -- an agent turn and embeddings ------------------------------------------------------------


@pytest.mark.parametrize("client_type", list(AGENTS))
@pytest.mark.parametrize("chunk_size", [None, 7])
async def test_an_agent_turn_runs_on_azure(client_type: str, chunk_size: int | None) -> None:
    """Thinking and a tool call, then the tool's result and the answer, on the demo script;
    Azure's filter annotations on Chat chunks are skipped."""
    async with (
        Simulator.running(api_key=KEY, chunk_size=chunk_size) as sim,
        client_for(sim, client_type) as client,
    ):
        first, error = await collect(client.streaming_response_stateful(QUESTION, CONFIG))
        assert error is None
        assert_stream_grammar(first)
        thinking, call = done_items(first)
        assert isinstance(thinking, ThinkingDone) and "get_weather" in thinking.thinking
        assert isinstance(call, ToolCallDone)
        assert (call.name, call.arguments) == ("get_weather", {"city": "Paris"})
        assert first[-1].finish_reason == FinishReason.TOOL_CALL
        result = UniMessage("user", (ToolResultDone('{"sky": "sunny"}', call.tool_call_id),))
        second, error = await collect(client.streaming_response_stateful(result, CONFIG))
        assert error is None
        assert_stream_grammar(second)
        assert done_items(second) == [TextDone('Here is what I found: {"sky": "sunny"}')]
        assert second[-1].finish_reason == FinishReason.STOP
    assert_sent_as_azure(sim, AGENTS[client_type])
    assert sim.requests[0].json["model"] == "my-deployment"


async def test_embeddings_run_on_azure() -> None:
    vectors = [(0.5, -0.25, 1.0), (2.0, 0.125, 0.0)]
    reply = Reply(items=[EmbeddingDone(v) for v in vectors], usage=UsageMetadata(prompt_tokens=7))
    messages = [UniMessage("user", (TextDone("The cat sat."),)),
                UniMessage("user", (TextDone("Rain again."),))]
    async with (
        Simulator.running(reply, api_key=KEY) as sim,
        client_for(sim, "openai-embedding") as client,
    ):
        events, error = await collect(client.streaming_response(
            messages, {"embedding_config": {"dimensions": 3}}))
    assert error is None
    assert_stream_grammar(events)
    assert [i.embedding for i in done_items(events) if isinstance(i, EmbeddingDone)] == vectors
    assert events[-1].usage_metadata == UsageMetadata(prompt_tokens=7)
    assert_sent_as_azure(sim, "embeddings")
    assert sim.requests[0].json == {"model": "my-deployment", "dimensions": 3,
                                    "input": ["The cat sat.", "Rain again."],
                                    "encoding_format": "base64"}


async def test_the_environments_azure_credentials_go_to_the_endpoint_it_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``base_url="azure"``: AZURE_OPENAI_ENDPOINT, its key and api-version; the OpenAI key set
    beside them is never sent."""
    async with Simulator.running(api_key=KEY) as sim:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", sim.base_url("openai-chat", azure=True))
        monkeypatch.setenv("AZURE_OPENAI_API_VERSION", VERSION)
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-stays-home")
        async with AutoLLMClient("my-deployment", client_type="openai-chat", base_url="azure",
                                 timeouts=RELAXED) as client:
            events, error = await collect(client.streaming_response([QUESTION]))
            models = await client.list_models()
    assert error is None
    assert done_items(events)[-1] == TextDone("You asked: What is the weather in Paris?")
    assert models == ["sim-model"]
    chat, listing = sim.requests
    assert (chat.path, listing.path) == ("/azure/openai/v1/chat/completions",
                                         "/azure/openai/v1/models")
    for request in sim.requests:
        assert request.query == f"api-version={VERSION}"
        assert request.header("api-key") == KEY
        assert not any("sk-openai" in value for _name, value in request.headers)


async def test_the_openai_key_is_refused_for_an_azure_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-stays-home")
    async with Simulator.running(api_key=KEY) as sim:
        with pytest.raises(ApiKeyRequiredError) as caught:
            AutoLLMClient("my-deployment", client_type="openai-chat",
                          base_url=azure_url(sim, "openai-chat"))
    assert caught.value.api_key_env == "AZURE_OPENAI_API_KEY"
    assert not sim.requests


async def test_an_azure_host_gets_its_v1_path_its_api_version_and_api_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bare resource URL on Azure's host: ``/openai/v1`` is added, then the path, then
    AZURE_OPENAI_API_VERSION; the key goes as api-key, never as a Bearer token."""
    seen: list[httpx.Request] = []
    body = azure_annotations(adapters.render("openai-chat", [TextDone("Hi")], USAGE, "stop"))

    def serve(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, stream=Body(body),
                              headers={"content-type": "text/event-stream"})

    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", VERSION)
    async with AutoLLMClient("my-deployment", client_type="openai-chat", api_key=KEY,
                             base_url="https://contoso.openai.azure.com",
                             http_client=mock_client(serve)) as client:
        events, error = await collect(client.streaming_response([QUESTION]))
    assert error is None
    assert done_items(events) == [TextDone("Hi")]
    (request,) = seen
    assert str(request.url) == (
        f"https://contoso.openai.azure.com/openai/v1/chat/completions?api-version={VERSION}")
    assert request.headers["api-key"] == KEY
    assert "authorization" not in request.headers


# -- Azure's errors as typed errors (08 D19) ---------------------------------------------------


async def test_a_bearer_token_gets_azures_401() -> None:
    """The Azure path without an api-version is no Azure base URL: the key goes as a Bearer
    token, which Azure's endpoint refuses in its own body."""
    async with Simulator.running(api_key=KEY) as sim:
        plain_path = sim.base_url("openai-chat", azure=True)
        async with client_for(sim, "openai-chat", base_url=plain_path) as client:
            _, error = await collect(client.streaming_response([QUESTION]))
    assert isinstance(error, ProviderHTTPError)
    assert (error.status, error.error_type) == (401, "401")
    assert (error.provider_message or "").startswith("Access denied due to invalid subscription")
    assert sim.requests[0].header("authorization") == f"Bearer {KEY}"


@pytest.mark.parametrize("client_type", [*AGENTS, "openai-embedding"])
@pytest.mark.parametrize(
    ("status", "error_type", "retryable"),
    [(400, "content_filter", False), (429, "429", True), (500, "500", True)],
)
async def test_azures_error_bodies_are_typed_errors(
    client_type: str, status: int, error_type: str, retryable: bool
) -> None:
    reply = Reply(status=status, message="Azure says no.", retry_after=0)
    async with Simulator.running(reply, api_key=KEY) as sim, client_for(sim, client_type) as client:
        _, error = await collect(client.streaming_response([QUESTION]))
    assert isinstance(error, ProviderHTTPError)
    assert (error.status, error.error_type, error.provider_message) == (
        status, error_type, "Azure says no.")
    assert error.retryable is retryable


async def test_an_error_inside_an_azure_chat_stream_is_a_provider_stream_error() -> None:
    """Azure's prompt-filter chunk and the first annotated chunk, then the overload chunk."""
    reply = Reply(items=[TextDone("Partly")], error_after=2)
    async with (
        Simulator.running(reply, api_key=KEY) as sim,
        client_for(sim, "openai-chat") as client,
    ):
        _, error = await collect(client.streaming_response([QUESTION]))
    assert isinstance(error, ProviderStreamError)
    assert error.code == "overloaded"


# -- no run of the key shows (08 D61) ----------------------------------------------------------


def _echo_key(kind: str) -> Any:
    """A provider that echoes the ``api-key`` it was sent inside longer text: in a 401 body,
    or in an error chunk of a Chat stream."""
    def serve(request: httpx.Request) -> httpx.Response:
        echoed = ECHO.replace(LONG_KEY, request.headers.get("api-key", "none"))
        if kind == "http":
            return httpx.Response(401, json={"error": {"code": "401", "message": echoed}})
        chunk = {"error": {"code": "content_filter", "message": echoed}}
        stream = b"data: " + json.dumps(chunk).encode() + b"\n\n"
        return httpx.Response(200, stream=Body(stream),
                              headers={"content-type": "text/event-stream"})

    return serve


@pytest.mark.parametrize(
    ("client_type", "kind"),
    [(client_type, "http") for client_type in [*AGENTS, "openai-embedding"]]
    + [("openai-chat", "in-stream")],
)
async def test_no_run_of_the_azure_key_shows_in_any_error(
    client_type: str, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """08 D61 on Azure: the key echoed back inside longer text leaves no run of 12 of its
    characters in any error field, text, chain or log record."""
    caplog.set_level(logging.DEBUG)
    async with AutoLLMClient("my-deployment", client_type=client_type, api_key=LONG_KEY,
                             base_url="https://contoso.openai.azure.com/openai/v1",
                             max_retries=0, http_client=mock_client(_echo_key(kind))) as client:
        _, error = await collect(client.streaming_response([QUESTION]))
        errors = [error]
        if kind == "http":
            with pytest.raises(MMSPError) as listing:
                await client.list_models()
            errors.append(listing.value)
    expected = ProviderHTTPError if kind == "http" else ProviderStreamError
    assert all(isinstance(e, expected) for e in errors)
    texts = [text for e in errors if e is not None for text in shown_texts(e)]
    assert any("[redacted]" in text for text in texts)
    assert not any(leaks(text) for text in texts), texts
    assert not leaks(caplog.text)
    assert not leaks(repr(client))
