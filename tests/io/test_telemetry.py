"""OpenTelemetry spans, opt-in (issue 25; ``mmsp_io._telemetry``): a client's span per call and
the gateway's span per request, read from the SDK's in-memory exporter.

Each test builds its own ``TracerProvider`` and hands it over explicitly
(``Telemetry(tracer_provider=...)``): the global provider can be set only once per process.
The caller's trace context crosses HTTP through the global propagator, W3C ``traceparent`` by
default. Every async test runs under asyncio and trio, against the provider simulator.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import urllib.parse
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import aclosing
from typing import Any

import anyio
import attrs
import httpx
import pytest
from opentelemetry import propagate, trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from serverkit import AUTH, FRONTS, RELAXED, TOKEN, post_stream, row, running, stream_body

from adapters.clients import telemetry_provider
from mmsp_core.model import ToolCallDone, UniEvent, UniMessage, UsageMetadata
from mmsp_io import (
    AutoLLMClient,
    ProviderHTTPError,
    Telemetry,
    UnsupportedOperationError,
)
from mmsp_io.server import Gateway
from mmsp_io.server.config import ConfigError, resolve_config
from mmsp_io.simulator import Reply, Simulator

QUESTION = "What is the secret word?"
ANSWER = "The word is marmalade."
USAGE = UsageMetadata(cached_tokens=3, prompt_tokens=12, thoughts_tokens=4, response_tokens=8)


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    """The spans of the test's own tracer provider (``provider`` sends them here)."""
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider
    tracer_provider.shutdown()


def chat_client(sim: Simulator, provider: TracerProvider, **options: Any) -> AutoLLMClient:
    """An openai-chat client of the simulator whose spans go to ``provider``."""
    options = {"max_retries": 0, "timeouts": RELAXED,
               "telemetry": Telemetry(tracer_provider=provider), **options}
    return AutoLLMClient("sim-model", api_key=sim.api_key, base_url=sim.base_url("openai-chat"),
                         client_type="openai-chat", **options)


async def drain(stream: AsyncIterator[UniEvent]) -> list[UniEvent]:
    async with aclosing(stream) as events:  # type: ignore[type-var]
        return [event async for event in events]


def one_span(exporter: InMemorySpanExporter, kind: SpanKind = SpanKind.CLIENT) -> ReadableSpan:
    spans = [span for span in exporter.get_finished_spans() if span.kind == kind]
    assert len(spans) == 1, spans
    return spans[0]


def traceparent_of(span: ReadableSpan) -> str:
    """The W3C ``traceparent`` a request sent in ``span`` carries."""
    assert span.context is not None
    context = span.context
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


def recorded_text(spans: Sequence[ReadableSpan]) -> str:
    """Every attribute value of ``spans`` and of their events, as one text."""
    values = [value for span in spans for attributes in
              [span.attributes, *(event.attributes for event in span.events)]
              for value in (attributes or {}).values()]
    return json.dumps(values, default=str)


@pytest.mark.anyio
async def test_client_span_has_the_genai_attributes_and_the_upstream_request_its_context(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    """One CLIENT span per call, named and attributed after the GenAI conventions, with the
    first event as a span event; the simulator saw the span's traceparent."""
    async with (Simulator.running(Reply.text(ANSWER, usage=USAGE)) as sim,
                chat_client(sim, provider) as client):
        events = await drain(client.streaming_response([UniMessage.user(QUESTION)]))
    assert events[-1].event_type == "stop"
    span = one_span(exporter)
    assert span.name == "chat sim-model"
    assert span.attributes is not None
    assert dict(span.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "sim-model",
        "server.address": "127.0.0.1",
        "server.port": urllib.parse.urlsplit(sim.base_url("openai-chat")).port,
        "gen_ai.response.model": "sim-model",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.cache_read.input_tokens": 3,
        "gen_ai.usage.reasoning.output_tokens": 4,
        "gen_ai.usage.output_tokens": 12,
        "mmsp.attempts": 1,
    }
    assert [event.name for event in span.events] == ["mmsp.first_event"]
    assert span.status.status_code is StatusCode.UNSET
    assert span.parent is None
    assert sim.requests[0].header("traceparent") == traceparent_of(span)


@pytest.mark.anyio
async def test_stateful_call_has_its_span_and_keeps_its_turn(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    async with (Simulator.running(Reply.text(ANSWER)) as sim,
                chat_client(sim, provider) as client):
        await drain(client.streaming_response_stateful(UniMessage.user(QUESTION)))
        assert len(client.get_history()) == 2
    span = one_span(exporter)
    assert span.attributes is not None
    assert span.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert sim.requests[0].header("traceparent") == traceparent_of(span)


@pytest.mark.anyio
async def test_error_span_names_the_error_class(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    """An HTTP 500 the call cannot retry: the span's ``error.type`` is the MMSP error class,
    its status ERROR, and it is ended."""
    async with (Simulator.running(Reply.error(500, message="upstream broke")) as sim,
                chat_client(sim, provider) as client):
        with pytest.raises(ProviderHTTPError):
            await drain(client.streaming_response([UniMessage.user(QUESTION)]))
    span = one_span(exporter)
    assert span.attributes is not None
    assert span.attributes["error.type"] == "ProviderHTTPError"
    assert span.attributes["mmsp.attempts"] == 1
    assert "gen_ai.response.finish_reasons" not in span.attributes
    assert span.status.status_code is StatusCode.ERROR
    assert span.events == ()


@pytest.mark.anyio
async def test_attempts_count_the_retries(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    """A 500 then an answer: one span, two attempts, no error."""
    async with Simulator.running(Reply.text(ANSWER)) as sim:
        sim.script.append(Reply.error(500, retry_after=0))
        async with chat_client(sim, provider, max_retries=1) as client:
            await drain(client.streaming_response([UniMessage.user(QUESTION)]))
    span = one_span(exporter)
    assert span.attributes is not None
    assert span.attributes["mmsp.attempts"] == 2
    assert "error.type" not in span.attributes
    assert [request.header("traceparent") for request in sim.requests] == [
        traceparent_of(span)] * 2


@pytest.mark.anyio
async def test_no_content_is_recorded_by_default(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    async with (Simulator.running(Reply.text(ANSWER)) as sim,
                chat_client(sim, provider) as client):
        await drain(client.streaming_response([UniMessage.user(QUESTION)],
                                              {"system_prompt": "Be terse."}))
    text = recorded_text(exporter.get_finished_spans())
    for content in (QUESTION, ANSWER, "Be terse.", "marmalade"):
        assert content not in text


@pytest.mark.anyio
async def test_content_is_recorded_when_turned_on(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    """``record_content``: the system prompt, the input and the answer in the conventions'
    message shape."""
    call = ToolCallDone("lookup", "call_1", {"word": "secret"})
    async with Simulator.running(Reply.text(ANSWER)) as sim:
        telemetry = Telemetry(record_content=True, tracer_provider=provider)
        async with chat_client(sim, provider, telemetry=telemetry) as client:
            await drain(client.streaming_response(
                [UniMessage.user(QUESTION), UniMessage("assistant", (call,)),
                 UniMessage.tool_result(call, "marmalade")],
                {"system_prompt": "Be terse."}))
    attributes = one_span(exporter).attributes
    assert attributes is not None
    assert json.loads(str(attributes["gen_ai.system_instructions"])) == [
        {"type": "text", "content": "Be terse."}]
    assert json.loads(str(attributes["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "lookup",
                                         "arguments": {"word": "secret"}}]},
        {"role": "user", "parts": [{"type": "tool_call_response", "id": "call_1",
                                    "response": "marmalade"}]},
    ]
    assert json.loads(str(attributes["gen_ai.output.messages"])) == [
        {"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]


@pytest.mark.anyio
async def test_span_ends_when_the_consumer_stops_early(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    """Closing the stream after its first event ends the span, without an error or a stop."""
    async with (Simulator.running(Reply.text(ANSWER, fragment_size=2)) as sim,
                chat_client(sim, provider) as client,
                aclosing(client.streaming_response([UniMessage.user(QUESTION)])) as events):
        await anext(events)
    span = one_span(exporter)
    assert span.end_time is not None
    assert span.attributes is not None
    assert "error.type" not in span.attributes
    assert "gen_ai.response.finish_reasons" not in span.attributes
    assert [event.name for event in span.events] == ["mmsp.first_event"]


@pytest.mark.anyio
async def test_a_stream_cancelled_from_outside_ends_its_span_as_aborted(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    """A cancel scope around the stream (how the gateway stops a call it aborts) ends the span
    with ``error.type`` AbortedError, as an abort signal's own error does."""
    async with (Simulator.running(Reply.text(ANSWER, fragment_size=2, delay=0.05)) as sim,
                chat_client(sim, provider) as client):
        with anyio.CancelScope() as scope:
            async with aclosing(client.streaming_response([UniMessage.user(QUESTION)])) as events:
                await anext(events)
                scope.cancel()
                await anext(events)
    span = one_span(exporter)
    assert span.end_time is not None and span.attributes is not None
    assert span.attributes["error.type"] == "AbortedError"
    assert span.status.status_code == StatusCode.ERROR


@pytest.mark.anyio
async def test_embedding_span_is_an_embeddings_operation(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    async with (Simulator.running() as sim,
                AutoLLMClient("text-embedding-3-small", api_key=sim.api_key,
                              base_url=sim.base_url("openai-embedding"),
                              client_type="openai-embedding", timeouts=RELAXED,
                              telemetry=Telemetry(tracer_provider=provider)) as client):
        await drain(client.streaming_response([UniMessage.user("The cat sat")]))
    span = one_span(exporter)
    assert span.name == "embeddings text-embedding-3-small"
    assert span.attributes is not None
    assert span.attributes["gen_ai.operation.name"] == "embeddings"
    assert span.attributes["gen_ai.usage.input_tokens"] > 0  # type: ignore[operator]


@pytest.mark.anyio
@pytest.mark.parametrize("front", FRONTS)
async def test_gateway_trace_runs_from_the_caller_through_the_upstream_request(
    exporter: InMemorySpanExporter, provider: TracerProvider, front: str
) -> None:
    """The caller's span is the parent of the gateway's SERVER span, whose child is the row
    client's CLIENT span, and the upstream request carries that span's context: one trace."""
    caller_tracer = provider.get_tracer("caller")
    async with Simulator.running(Reply.text(ANSWER, usage=USAGE)) as sim:
        config = resolve_config({"models": [row(sim, "openai-chat")], "api_keys": [TOKEN],
                                 "telemetry": {"enabled": True}})
        config = attrs.evolve(config, telemetry=Telemetry(tracer_provider=provider))
        gateway = Gateway(config, timeouts=RELAXED, max_retries=0)
        async with running(gateway, front) as origin, httpx.AsyncClient(timeout=10) as http:
            with caller_tracer.start_as_current_span("caller", kind=SpanKind.CLIENT):
                carrier: dict[str, str] = {}
                propagate.inject(carrier)
                response, events = await post_stream(http, origin, stream_body("openai-chat"),
                                                     headers={**AUTH, **carrier})
    assert response.status_code == 200
    assert events[-1] == "[DONE]"
    spans = exporter.get_finished_spans()
    caller = next(span for span in spans if span.name == "caller")
    server = one_span(exporter, SpanKind.SERVER)
    client = next(span for span in spans if span.kind == SpanKind.CLIENT and span is not caller)
    assert caller.context is not None and server.context is not None
    assert server.parent is not None and server.parent.span_id == caller.context.span_id
    assert client.parent is not None and client.parent.span_id == server.context.span_id
    assert {span.context.trace_id for span in (caller, server, client)
            if span.context is not None} == {caller.context.trace_id}
    assert sim.requests[0].header("traceparent") == traceparent_of(client)
    assert server.name == "chat openai-chat"
    assert server.attributes is not None
    assert server.attributes["gen_ai.request.model"] == "openai-chat"
    assert server.attributes["gen_ai.usage.output_tokens"] == 12
    assert client.attributes is not None
    assert client.attributes["gen_ai.request.model"] == "sim-model"
    assert QUESTION not in recorded_text(spans)


@pytest.mark.anyio
async def test_gateway_span_records_the_error_of_its_call(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    """An upstream 500 on ``/v1/stream``: the gateway's span and its client's name the
    error class; a request without a traceparent starts a trace of its own."""
    async with Simulator.running(Reply.error(500)) as sim:
        config = attrs.evolve(resolve_config({"models": [row(sim, "openai-chat")],
                                              "api_keys": [TOKEN]}),
                              telemetry=Telemetry(tracer_provider=provider))
        gateway = Gateway(config, timeouts=RELAXED, max_retries=0)
        async with running(gateway, "h11") as origin, httpx.AsyncClient(timeout=10) as http:
            response, events = await post_stream(http, origin, stream_body("openai-chat"))
    assert response.status_code == 200
    assert events[0]["error"]["type"] == "ProviderHTTPError"
    server, client = one_span(exporter, SpanKind.SERVER), one_span(exporter, SpanKind.CLIENT)
    assert server.parent is None
    for span in (server, client):
        assert span.attributes is not None
        assert span.attributes["error.type"] == "ProviderHTTPError"
        assert span.status.status_code is StatusCode.ERROR


def test_configuration_telemetry_setting() -> None:
    models = [{"model_id": "m", "api_key": "k", "server_model_id": "m"}]
    assert resolve_config({"models": models}).telemetry is None
    assert resolve_config({"models": models, "telemetry": {"enabled": False}}).telemetry is False
    assert resolve_config({"models": models, "telemetry": {"enabled": True}}).telemetry == (
        Telemetry())
    assert resolve_config({"models": models, "telemetry": {
        "enabled": True, "record_content": True}}).telemetry == Telemetry(record_content=True)
    with pytest.raises(ConfigError, match="telemetry has unknown keys"):
        resolve_config({"models": models, "telemetry": {"enabled": True, "content": True}})
    with pytest.raises(ConfigError, match=r"telemetry\.record_content must be true or false"):
        resolve_config({"models": models, "telemetry": {"enabled": True, "record_content": 1}})


def test_telemetry_argument_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(TypeError, match=r"telemetry must be a bool or a mmsp_io\.Telemetry"):
        AutoLLMClient("gpt-6", api_key="sk-test", telemetry="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(("client_type", "base_url", "api_key", "expected"), [
    ("openai-official", None, "k", "openai"),
    ("openai-chat", "https://example-resource.openai.azure.com", "k", "azure.ai.openai"),
    ("anthropic-official", "bedrock://us-east-1", None, "aws.bedrock"),
    ("ant-messages", "http://127.0.0.1:1", "k", "anthropic"),
    ("google-genai", None, "k", "gcp.gemini"),
    ("google-genai", "https://us-central1-aiplatform.googleapis.com", None, "gcp.vertex_ai"),
    ("mmsp", None, None, "mmsp"),
])
def test_provider_name_per_client_type(
    client_type: str, base_url: str | None, api_key: str | None, expected: str
) -> None:
    assert telemetry_provider(client_type, base_url, api_key) == expected


def _fresh_interpreter(code: str, **environ: str) -> str:
    """Run ``code`` in a fresh interpreter with ``environ`` over a copy of this one's
    environment without ``MMSP_OTEL``; return what it prints."""
    import os

    env = {name: value for name, value in os.environ.items() if name != "MMSP_OTEL"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60, env={**env, **environ}, check=True)
    return done.stdout.strip()


def test_telemetry_off_never_imports_opentelemetry() -> None:
    """Neither a client nor a gateway without telemetry loads opentelemetry."""
    printed = _fresh_interpreter("""
        import sys
        from mmsp_io import AutoLLMClient
        from mmsp_io.server import Gateway
        AutoLLMClient("gpt-6", api_key="sk-test")
        Gateway({"models": [{"model_id": "gpt-6", "api_key": "sk-test",
                             "server_model_id": "gpt-6"}]})
        print(sorted(name for name in sys.modules if name.startswith("opentelemetry")))
    """)
    assert printed == "[]"


def test_telemetry_without_the_package_names_the_extra() -> None:
    """With opentelemetry missing, ``telemetry=True`` and ``MMSP_OTEL=1`` raise the typed
    error naming the extra, and the gateway refuses its setting at start."""
    printed = _fresh_interpreter("""
        import sys
        sys.modules["opentelemetry"] = None  # as if it were not installed
        from mmsp_io import AutoLLMClient, UnsupportedOperationError
        from mmsp_io.server import Gateway
        from mmsp_io.server.config import ConfigError
        for options in ({"telemetry": True}, {}):
            try:
                AutoLLMClient("gpt-6", api_key="sk-test", **options)
            except UnsupportedOperationError as exc:
                print(type(exc).__name__, exc)
        try:
            Gateway({"models": [{"model_id": "gpt-6", "api_key": "sk-test",
                                 "server_model_id": "gpt-6"}],
                     "telemetry": {"enabled": True}})
        except ConfigError as exc:
            print(type(exc).__name__, exc)
    """, MMSP_OTEL="1")
    lines = printed.splitlines()
    assert len(lines) == 3, printed
    assert all("pip install 'mmsp-sansio[otel]'" in line for line in lines)
    assert [line.split()[0] for line in lines] == [UnsupportedOperationError.__name__] * 2 + [
        ConfigError.__name__]


def test_an_explicit_no_wins_over_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """``telemetry=False`` keeps spans off whatever ``MMSP_OTEL`` says (no tracer is asked)."""
    monkeypatch.setenv("MMSP_OTEL", "1")
    seen: list[object] = []
    monkeypatch.setattr(trace, "get_tracer", lambda *args, **kwargs: seen.append(args))
    AutoLLMClient("gpt-6", api_key="sk-test", telemetry=False)
    assert seen == []
