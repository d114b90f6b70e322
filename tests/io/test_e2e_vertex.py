"""End to end for Gemini on Vertex AI: ``AutoLLMClient`` on google-genai over loopback HTTP
against the simulator's Vertex endpoints and token endpoint, under asyncio and trio (08 D72,
D61; issue 23 items 4, 6 and 7).

The client is given a throwaway service-account key (``vertexkit``) whose ``token_uri`` is the
simulator's, and the simulator's origin as its base URL: a Vertex client (its key says so)
keeps Vertex's paths under that origin. The simulator takes only tokens its own token endpoint
issued for the key it was told to trust. No metadata service is probed: the credential is the
key given or a file named by ``GOOGLE_APPLICATION_CREDENTIALS``; Application Default
Credentials need a Vertex host, which no loopback origin is, and are exercised through the
token they bring in ``test_vertex_auth``.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from httpfakes import clean_environment
from test_security import shown_texts
from vertexkit import PROJECT, USER, key_text, private_key_pem, trust

from mmsp_core.model import (
    DoneItem,
    EmbeddingDone,
    FinishReason,
    TextDone,
    ThinkingDone,
    ToolCallDelta,
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
    Timeouts,
    UnsupportedOperationError,
    UnsupportedParameterError,
)
from mmsp_io.simulator import RecordedRequest, Reply, Simulator

__all__ = ["clean_environment"]

pytestmark = pytest.mark.anyio

RELAXED = Timeouts(connect=5, first_event=10, idle=10, total=30)
WEATHER = ToolSchema(
    name="get_weather",
    description="The current weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
QUESTION = UniMessage("user", (TextDone("What is the weather in Paris?"),))
CONFIG = UniConfig(tools=(WEATHER,))
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "google-genai"
VERTEX_PREFIX = f"/v1beta1/projects/{PROJECT}/locations/global/publishers/google/models/"


@pytest.fixture(autouse=True)
def no_google_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests see none of Google Cloud's variables unless they set one, and an empty home: no
    real Application Default Credentials are ever read."""
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CONFIG",
                 "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def client_for(sim: Simulator, model: str = "gemini-3.8-flash", **options: Any) -> AutoLLMClient:
    options = {"max_retries": 0, "timeouts": RELAXED, "api_key": key_text(sim), **options}
    return AutoLLMClient(model, client_type="google-genai", base_url=sim.url, **options)


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
        cast("DoneItem", item) for event in events if event.event_type == "delta"
        for item in event.content_items if item.type.endswith(".done")
    ]


def model_calls(sim: Simulator) -> list[RecordedRequest]:
    return [request for request in sim.requests if request.path != "/token"]


def assert_sent_to_vertex(sim: Simulator, method: str) -> None:
    """Every model call went to Vertex's path under the project with a token the simulator
    issued, and never with a Gemini API key."""
    calls = model_calls(sim)
    assert calls and sim.vertex.exchanges >= 1
    for request in calls:
        assert request.path.startswith(VERTEX_PREFIX) and request.path.endswith(f":{method}")
        assert (request.header("authorization") or "").startswith("Bearer ya29.sim-")
        assert request.header("x-goog-api-key") is None


@pytest.mark.parametrize("chunk_size", [None, 7])
async def test_an_agent_turn_runs_on_vertex(chunk_size: int | None) -> None:
    """Thinking and a tool call, then the tool's result and the answer, on the demo script;
    one token serves both calls."""
    async with Simulator.running(chunk_size=chunk_size) as sim:
        trust(sim)
        async with client_for(sim) as client:
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
    assert_sent_to_vertex(sim, "streamGenerateContent")
    assert sim.vertex.exchanges == 1
    assert [r.query for r in model_calls(sim)] == ["alt=sse", "alt=sse"]


async def test_embeddings_run_on_vertex_one_content_per_call() -> None:
    reply = Reply(items=[EmbeddingDone((0.5, -0.25, 1.0))], usage=UsageMetadata(prompt_tokens=7))
    async with Simulator.running(reply) as sim:
        trust(sim)
        async with client_for(sim, "gemini-embedding-2") as client:
            events, error = await collect(client.streaming_response(
                [UniMessage.user("The cat sat.")], {"embedding_config": {"dimensions": 3}}))
            _none, refused = await collect(client.streaming_response(
                [UniMessage.user("a"), UniMessage.user("b")]))
    assert error is None
    assert_stream_grammar(events)
    assert done_items(events) == [EmbeddingDone((0.5, -0.25, 1.0))]
    assert events[-1].usage_metadata == UsageMetadata(prompt_tokens=7)  # statistics.tokenCount
    assert isinstance(refused, UnsupportedParameterError) and refused.parameter == "messages"
    assert_sent_to_vertex(sim, "embedContent")
    [call] = model_calls(sim)
    assert call.json == {"content": {"role": "user", "parts": [{"text": "The cat sat."}]},
                         "outputDimensionality": 3}


@pytest.mark.parametrize("chunk_size", [None, 5])
async def test_streamed_function_arguments_arrive_as_fragments_of_one_call(
    chunk_size: int | None,
) -> None:
    """Vertex's recorded ``partialArgs`` stream, through the client: each call's fragments, the
    first with its name and id, join into its arguments (08 D72)."""
    recording = FIXTURES / "vertex-partial-args-streaming.sse"
    async with Simulator.running(Reply.recorded(recording, chunk_size=chunk_size)) as sim:
        trust(sim)
        async with client_for(sim, "gemini-3.1-pro-preview") as client:
            events, error = await collect(client.streaming_response([QUESTION], CONFIG))
    assert error is None
    assert_stream_grammar(events)
    calls = [item for item in done_items(events) if isinstance(item, ToolCallDone)]
    assert [(c.name, c.arguments) for c in calls] == [
        ("getWeather", {"location": "Boston"}), ("getWeather", {"location": "San Francisco"})]
    fragments = [item for event in events if event.event_type == "delta"
                 for item in event.content_items if isinstance(item, ToolCallDelta)]
    assert [f.name for f in fragments if f.name] == ["getWeather", "getWeather"]
    assert "".join(f.arguments for f in fragments) == (
        '{"location": "Boston"}{"location": "San Francisco"}')
    assert events[-1].finish_reason == FinishReason.TOOL_CALL


async def test_a_revoked_token_is_fetched_again_once_after_the_401() -> None:
    async with Simulator.running() as sim:
        trust(sim)
        async with client_for(sim) as client:
            _events, error = await collect(client.streaming_response([QUESTION]))
            assert error is None
            sim.vertex.revoke()
            events, error = await collect(client.streaming_response([QUESTION]))
    assert error is None
    assert done_items(events)[-1] == TextDone("You asked: What is the weather in Paris?")
    assert sim.vertex.exchanges == 2
    assert [r.path.endswith(":streamGenerateContent") for r in model_calls(sim)] == [True] * 3


async def test_a_401_that_stays_is_the_callers_after_one_new_token() -> None:
    async with Simulator.running() as sim:
        trust(sim)
        sim.script.extend([Reply(status=401), Reply(status=401), Reply(status=401)])
        async with client_for(sim, max_retries=2) as client:
            _events, error = await collect(client.streaming_response([QUESTION]))
    assert isinstance(error, ProviderHTTPError) and error.status == 401
    assert sim.vertex.exchanges == 2
    assert len(model_calls(sim)) == 2


async def test_no_error_shows_the_private_key_or_the_token() -> None:
    """An endpoint that echoes the request's token and a piece of the key (08 D61)."""
    piece = private_key_pem()[100:160]

    def echo(request: RecordedRequest) -> Reply:
        return Reply(status=400, message=f"{request.header('authorization')} {piece}")

    async with Simulator.running(echo) as sim:
        trust(sim)
        key = key_text(sim)
        async with client_for(sim, api_key=key) as client:
            _events, error = await collect(client.streaming_response([QUESTION]))
    assert isinstance(error, ProviderHTTPError)
    [call] = model_calls(sim)
    token = (call.header("authorization") or "").removeprefix("Bearer ")
    shown = "\n".join(shown_texts(error))
    for secret in (token, piece, key):
        tail = secret[8:]
        assert not any(tail[i : i + 12] in shown for i in range(len(tail) - 11)), secret[:10]


class ToSimulator(httpx.AsyncBaseTransport):
    """Sends what is addressed to Vertex's host to the simulator instead (loopback only)."""

    def __init__(self, sim: Simulator) -> None:
        self._origin = httpx.URL(sim.url)
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.host == "aiplatform.googleapis.com":
            request.url = request.url.copy_with(scheme="http", host=self._origin.host,
                                                port=self._origin.port)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@pytest.mark.parametrize("source", ["GOOGLE_APPLICATION_CREDENTIALS", "default"])
async def test_the_catalogs_vertex_endpoint_with_a_key_file_or_default_credentials(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No key in code: a service-account file named by the variable, or gcloud's user
    credentials in the home folder with GOOGLE_CLOUD_PROJECT."""
    async with Simulator.running() as sim, httpx.AsyncClient(transport=ToSimulator(sim)) as http:
        trust(sim)
        if source == "default":
            folder = tmp_path / ".config" / "gcloud"
            folder.mkdir(parents=True)
            user = {**USER, "token_uri": f"{sim.url}/token"}
            (folder / "application_default_credentials.json").write_text(json.dumps(user))
            monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
        else:
            (tmp_path / "sa.json").write_text(key_text(sim))
            monkeypatch.setenv(source, str(tmp_path / "sa.json"))
        monkeypatch.setenv("GEMINI_API_KEY", "AIza-stays-home-0123456789")
        async with AutoLLMClient("gemini-3.8-flash", client_type="google-genai",
                                 base_url="https://aiplatform.googleapis.com", http_client=http,
                                 timeouts=RELAXED, max_retries=0) as client:
            events, error = await collect(client.streaming_response([QUESTION]))
    assert error is None
    assert done_items(events)[-1] == TextDone("You asked: What is the weather in Paris?")
    assert_sent_to_vertex(sim, "streamGenerateContent")
    assert not any("AIza" in value for request in sim.requests for _n, value in request.headers)


async def test_list_models_is_refused_on_vertex() -> None:
    async with Simulator.running() as sim, client_for(sim) as client:
        with pytest.raises(UnsupportedOperationError):
            await client.list_models()
    assert not sim.requests


def test_without_google_auth_the_client_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "google.auth.jwt", None)
    with pytest.raises(UnsupportedOperationError) as caught:
        AutoLLMClient("gemini-3.8-flash", client_type="google-genai",
                      base_url="https://aiplatform.googleapis.com")
    assert "pip install 'mmsp-sansio[vertex]'" in str(caught.value)


def test_an_api_key_on_a_vertex_host_is_refused_when_the_client_is_built() -> None:
    with pytest.raises(UnsupportedOperationError) as caught:
        AutoLLMClient("gemini-3.8-flash", client_type="google-genai", api_key="AIza-key-0123",
                      base_url="https://aiplatform.googleapis.com")
    assert caught.value.operation == "Vertex AI" and "AIza-key" not in str(caught.value)


async def test_the_demo_says_what_to_install_without_google_auth(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mmsp_io.cli import demo
    from mmsp_io.cli.printer import StreamPrinter

    monkeypatch.setitem(sys.modules, "google.auth", None)
    out = io.StringIO()
    async with Simulator.running() as sim:
        await demo._demo_vertex(sim, StreamPrinter(out))
    assert out.getvalue() == "\n== Vertex AI is left out: pip install 'mmsp-sansio[vertex]'\n"
    assert not sim.requests
