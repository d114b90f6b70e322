"""End to end: ``AutoLLMClient`` over real loopback HTTP against the provider simulator.

Every wire protocol the simulator and the adapters both speak runs every test, under asyncio
and trio. The scenarios' items are fixed points of each protocol's documented normalisation
(its renderer's docstring): a signature on Anthropic thinking, a ``reasoning_field`` on Chat
thinking, ``channel: summary`` on Responses thinking; text and tool calls without fidelity.
So the public stream must give back exactly the items, usage and finish reason sent.
"""

from __future__ import annotations

import gc
import json
import socket
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import adapters
from mmsp_core.model import (
    DoneItem,
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
from mmsp_core.sse import SSEDecoder
from mmsp_core.testing import assert_stream_grammar
from mmsp_io import (
    AbortedError,
    AbortSignal,
    AutoLLMClient,
    IncompleteStreamError,
    MMSPError,
    ProviderConnectionError,
    ProviderHTTPError,
    ProviderStreamError,
    StreamTimeoutError,
    Timeouts,
)
from mmsp_io.simulator import Reply, Simulator, simulated_protocols

pytestmark = pytest.mark.anyio

#: Event-stream protocols: a one-body protocol (embeddings) streams no generation scenario
#: (tests/io/test_e2e_embeddings.py runs those).
PROTOCOLS = [
    p for p in simulated_protocols()
    if isinstance(adapters.PROTOCOLS[p].new_decoder(), SSEDecoder)
]
THOUGHT = "Let me think about Paris and the weather there."
SCENARIOS: dict[str, tuple[DoneItem, ...]] = {
    "ant-messages": (
        ThinkingDone(thinking=THOUGHT, fidelity={"signature": "c2lnbmF0dXJl"}),
        TextDone(text="I will look the weather up."),
        ToolCallDone(name="get_weather", tool_call_id="toolu_01", arguments={"city": "Paris"}),
    ),
    "openai-chat": (
        ThinkingDone(thinking=THOUGHT, fidelity={"reasoning_field": "reasoning_content"}),
        TextDone(text="I will look the weather up."),
        ToolCallDone(name="get_weather", tool_call_id="call_01", arguments={"city": "Paris"}),
    ),
    "openai-responses": (
        ThinkingDone(thinking=THOUGHT, fidelity={"channel": "summary"}),
        TextDone(text="I will look the weather up."),
        ToolCallDone(name="get_weather", tool_call_id="call_01", arguments={"city": "Paris"}),
    ),
    "google-genai": (
        ThinkingDone(thinking=THOUGHT, fidelity={"signature": "c2lnbmF0dXJl"}),
        TextDone(text="I will look the weather up."),
        ToolCallDone(name="get_weather", tool_call_id="call_01", arguments={"city": "Paris"}),
    ),
    "google-interactions": (
        ThinkingDone(thinking=THOUGHT, fidelity={"signature": "c2lnbmF0dXJl"}),
        TextDone(text="I will look the weather up."),
        ToolCallDone(name="get_weather", tool_call_id="call_01", arguments={"city": "Paris"}),
    ),
}
#: Protocols whose stream has no terminal event and ends with the body (08 D56).
NO_TERMINAL_EVENT = {"google-genai"}
#: Events a protocol's body sends before its first content, where not one (a lifecycle
#: event): generateContent's first chunk already carries content.
EVENTS_BEFORE_CONTENT = {"google-genai": 0}
USAGE = UsageMetadata(cached_tokens=3, prompt_tokens=20, thoughts_tokens=5, response_tokens=9)
WEATHER = ToolSchema(
    name="get_weather",
    description="The current weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
QUESTION = UniMessage(role="user", content_items=(TextDone(text="Weather in Paris?"),))
CONFIG = UniConfig(tools=(WEATHER,), trace_id="e2e/turn")
#: Long enough never to trip in a test unless the test means it to.
RELAXED = Timeouts(connect=5, first_event=10, idle=10, total=None)


@pytest.fixture(params=PROTOCOLS)
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def client_type_of(protocol: str) -> str:
    """The client type a protocol's name stands for (google-interactions: google-official)."""
    return adapters.PROTOCOLS[protocol].compatible_client or protocol


def scenario(protocol: str, **delivery: Any) -> Reply:
    return Reply(
        items=SCENARIOS[protocol], usage=USAGE, finish_reason=FinishReason.TOOL_CALL, **delivery
    )


def body_of(protocol: str) -> bytes:
    """The body the simulator sends for ``scenario(protocol)``."""
    items, finish = SCENARIOS[protocol], FinishReason.TOOL_CALL
    return adapters.render(protocol, items, USAGE, finish, model="sim-model")


def half_body(protocol: str) -> int:
    """Bytes in the first half of the scenario's body: some items, no stop."""
    return len(body_of(protocol)) // 2


def half_events(protocol: str) -> int:
    """Bytes in the first half of the scenario's events: a stall there is between events."""
    events = body_of(protocol).split(b"\n\n")
    return sum(len(event) + 2 for event in events[: len(events) // 2])


def client_for(sim: Simulator, protocol: str, tmp_path: Path, **options: Any) -> AutoLLMClient:
    options = {"max_retries": 0, "timeouts": RELAXED, **options}
    return AutoLLMClient(
        "sim-model",
        api_key=options.pop("api_key", sim.api_key),
        base_url=sim.base_url(protocol),
        client_type=client_type_of(protocol),
        trace_dir=tmp_path / "traces",
        **options,
    )


async def collect(stream: AsyncIterator[UniEvent]) -> tuple[list[UniEvent], MMSPError | None]:
    """Drain ``stream``: the events it yielded and the MMSP error it ended with, if any."""
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
        e.content_items[0]
        for e in events
        if e.event_type == "delta" and e.content_items[0].type.endswith(".done")
    ]  # type: ignore[misc]


def traces(tmp_path: Path) -> list[Path]:
    root = tmp_path / "traces"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def assert_failed_trace(tmp_path: Path, error: MMSPError | None) -> None:
    """The failed call left its trace (08 D78): the two files of trace_id ``e2e/turn``, with
    ``error``."""
    root = tmp_path / "traces"
    assert [p.relative_to(root).as_posix() for p in traces(tmp_path)] == ["e2e/turn.json",
                                                                          "e2e/turn.txt"]
    document = json.loads((root / "e2e" / "turn.json").read_text(encoding="utf-8"))
    assert (document["outcome"], document["error"]["type"]) == ("error", type(error).__name__)


async def wait_disconnect(sim: Simulator) -> None:
    with anyio.fail_after(5):
        await sim.wait_disconnects(1)
    assert sim.disconnects == sim.requests[-1:]


# -- the public stream -----------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", [None, 3, 64])
async def test_the_public_stream_gives_back_the_scenario(
    protocol: str, chunk_size: int | None, tmp_path: Path
) -> None:
    async with (
        Simulator.running(scenario(protocol, chunk_size=chunk_size)) as sim,
        client_for(sim, protocol, tmp_path) as client,
    ):
        events, error = await collect(client.streaming_response([QUESTION], CONFIG))
    assert error is None
    assert_stream_grammar(events)
    assert done_items(events) == list(SCENARIOS[protocol])
    stop = events[-1]
    assert (stop.event_type, stop.usage_metadata, stop.finish_reason) == (
        "stop",
        USAGE,
        FinishReason.TOOL_CALL,
    )
    assert all(e.created_at and e.created_at > 1_600_000_000_000 for e in events)
    assert len(traces(tmp_path)) == 2  # the .json and .txt of trace_id "e2e/turn"
    [request] = sim.requests
    assert request.protocol == protocol
    if protocol == "google-genai":  # the model is in the path, streaming is ?alt=sse (04 §4)
        assert (request.path, request.query) == (
            "/v1/models/sim-model:streamGenerateContent", "alt=sse"
        )
    else:
        assert request.json["model"] == "sim-model"
        assert request.json["stream"] is True
    assert sim.disconnects == []


async def test_each_client_sends_its_key_in_its_own_header(protocol: str, tmp_path: Path) -> None:
    async with (
        Simulator.running(scenario(protocol), api_key="sk-canary-e2e") as sim,
        client_for(sim, protocol, tmp_path) as client,
    ):
        await collect(client.streaming_response([QUESTION], None))
    [request] = sim.requests
    carrying = sorted(name for name, value in request.headers if "sk-canary-e2e" in value)
    if protocol == "ant-messages":  # both forms (spec 04 §3)
        assert carrying == ["authorization", "x-api-key"]
        assert request.header("x-api-key") == "sk-canary-e2e"
        assert request.header("anthropic-version")
    elif protocol in ("google-genai", "google-interactions"):  # never in the URL (08 D17)
        assert carrying == ["x-goog-api-key"]
        assert "sk-canary-e2e" not in request.query
    else:
        assert carrying == ["authorization"]
    if "authorization" in carrying:
        assert request.header("authorization") == "Bearer sk-canary-e2e"


async def test_list_models(protocol: str, tmp_path: Path) -> None:
    async with (
        Simulator.running(models=("sim-a", "sim-b")) as sim,
        client_for(sim, protocol, tmp_path) as client,
    ):
        assert await client.list_models() == ["sim-a", "sim-b"]


@pytest.mark.parametrize("keepalive", [None, 0.05])
async def test_a_stream_ends_at_its_terminal_event_on_a_connection_held_open(
    protocol: str, keepalive: float | None, tmp_path: Path
) -> None:
    """08 D56: the whole body then a server that keeps the socket open (silent, or sending
    keep-alive comments): the last item and the stop come at once, and the client closes the
    connection instead of waiting for the idle timeout."""
    if protocol in NO_TERMINAL_EVENT:
        pytest.skip("generateContent has no terminal event: its stream ends with the body")
    reply = scenario(protocol, stall_at=len(body_of(protocol)), keepalive=keepalive)
    async with (
        Simulator.running(reply) as sim,
        client_for(sim, protocol, tmp_path, timeouts=Timeouts(first_event=10, idle=3)) as client,
    ):
        with anyio.fail_after(2):
            events, error = await collect(client.streaming_response([QUESTION], CONFIG))
            await wait_disconnect(sim)
    assert error is None
    assert done_items(events) == list(SCENARIOS[protocol])
    assert events[-1].event_type == "stop"
    assert events[-1].usage_metadata == USAGE


async def test_leaving_a_stream_early_leaves_no_generator_to_the_garbage_collector(
    protocol: str, tmp_path: Path
) -> None:
    """08 D62: httpx reads a body through nested async generators; leaving early must end
    them all, or trio warns (``ResourceWarning``) about each one collected unfinished."""
    async with (
        Simulator.running(scenario(protocol, stall_at=half_events(protocol))) as sim,
        client_for(sim, protocol, tmp_path) as client,
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):
                async with aclosing(client.streaming_response([QUESTION], None)) as stream:
                    async for _event in stream:
                        break
                gc.collect()
                await anyio.sleep(0.01)
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


# -- a tool-call round trip and the history ----------------------------------------------------


async def test_a_tool_call_round_trip_through_the_stateful_call(
    protocol: str, tmp_path: Path
) -> None:
    # The demo script answers: a call to the first tool, then an answer quoting its result.
    async with Simulator.running() as sim, client_for(sim, protocol, tmp_path) as client:
        first, error = await collect(client.streaming_response_stateful(QUESTION, CONFIG))
        assert error is None
        call = done_items(first)[-1]
        assert isinstance(call, ToolCallDone)
        assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "Paris"})
        assert first[-1].finish_reason == FinishReason.TOOL_CALL

        result = ToolResultDone(text="18 C and rain", tool_call_id=call.tool_call_id)
        answer = UniMessage(role="user", content_items=(result,))
        second, error = await collect(client.streaming_response_stateful(answer, CONFIG))
        assert error is None
        history = client.get_history()

    assert_stream_grammar(second)
    assert done_items(second) == [TextDone(text="Here is what I found: 18 C and rain")]
    assert second[-1].finish_reason == FinishReason.STOP
    # The history: the question, the first answer, the tool result, the final answer.
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[0].content_items == QUESTION.content_items
    assert list(history[1].content_items) == done_items(first)
    assert history[1].usage_metadata == first[-1].usage_metadata
    assert history[1].finish_reason == FinishReason.TOOL_CALL
    assert history[2].content_items == (result,)
    assert list(history[3].content_items) == done_items(second)
    assert history[3].created_at == second[-1].created_at
    # The second request carried the whole conversation, the call and its result included.
    sent = sim.requests[1].body.decode()
    assert call.tool_call_id in sent
    assert "18 C and rain" in sent


async def test_the_history_is_unchanged_by_a_failed_turn(protocol: str, tmp_path: Path) -> None:
    async with (
        Simulator.running(scenario(protocol)) as sim,
        client_for(sim, protocol, tmp_path) as client,
    ):
        await collect(client.streaming_response_stateful(QUESTION, None))
        before = client.get_history()
        assert len(before) == 2
        sim.script.extend([Reply(status=500), scenario(protocol, cut_after=half_body(protocol))])
        for _ in range(2):
            events, error = await collect(client.streaming_response_stateful(QUESTION, None))
            assert error is not None
            assert all(e.event_type == "delta" for e in events)
            assert client.get_history() == before


# -- errors across the network ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "types"),
    [
        (401, {"ant-messages": "authentication_error", "openai": "invalid_request_error",
               "google-genai": "UNAUTHENTICATED", "google-interactions": "UNAUTHENTICATED"}),
        (429, {"ant-messages": "rate_limit_error", "openai": "requests",
               "google-genai": "RESOURCE_EXHAUSTED", "google-interactions": "RESOURCE_EXHAUSTED"}),
        (500, {"ant-messages": "api_error", "openai": "server_error",
               "google-genai": "INTERNAL", "google-interactions": "INTERNAL"}),
    ],
)
async def test_http_errors_carry_the_providers_error(
    protocol: str, status: int, types: dict[str, str], tmp_path: Path
) -> None:
    reply = Reply(status=status, message="simulated trouble", retry_after=7)
    async with Simulator.running(reply) as sim, client_for(sim, protocol, tmp_path) as client:
        events, error = await collect(client.streaming_response([QUESTION], CONFIG))
    assert events == []
    assert isinstance(error, ProviderHTTPError)
    assert error.status == status
    assert error.client == client_type_of(protocol)
    assert error.error_type == types.get(protocol, types["openai"])
    assert error.provider_message == "simulated trouble"
    assert error.request_id == "req_sim_1"
    assert error.retry_after == 7
    assert error.retryable == (status != 401)
    assert_failed_trace(tmp_path, error)


async def test_a_wrong_key_is_refused_and_never_shown(protocol: str, tmp_path: Path) -> None:
    async with (
        Simulator.running(scenario(protocol)) as sim,
        client_for(sim, protocol, tmp_path, api_key="sk-wrong-canary", max_retries=2) as client,
    ):
        events, error = await collect(client.streaming_response([QUESTION], None))
        assert "sk-wrong-canary" not in repr(client)
    assert events == []
    assert isinstance(error, ProviderHTTPError)
    assert error.status == 401
    assert not error.retryable
    assert len(sim.requests) == 1  # a 401 is not retried
    assert "sk-wrong-canary" not in f"{error} {error!r} {error.provider_message}"


async def test_connection_refused(protocol: str, refusing_port: int) -> None:
    client = AutoLLMClient(
        "sim-model",
        api_key="sk-sim",
        base_url=f"http://127.0.0.1:{refusing_port}"
        + ("/v1" if protocol.startswith("openai") else ""),
        client_type=client_type_of(protocol),
        max_retries=0,
    )
    async with client:
        events, error = await collect(client.streaming_response([QUESTION], None))
    assert events == []
    assert isinstance(error, ProviderConnectionError)
    assert error.retryable
    assert isinstance(error.__cause__, httpx.ConnectError)


async def test_a_body_cut_mid_stream(protocol: str, tmp_path: Path) -> None:
    reply = scenario(protocol, cut_after=half_body(protocol))
    async with (
        Simulator.running(reply) as sim,
        client_for(sim, protocol, tmp_path, max_retries=2) as client,
    ):
        events, error = await collect(client.streaming_response([QUESTION], CONFIG))
    assert isinstance(error, IncompleteStreamError)
    assert error.retryable
    assert isinstance(error.__cause__, httpx.TransportError)
    assert events, "the events before the cut reach the caller"
    assert all(e.event_type == "delta" for e in events)
    assert len(sim.requests) == 1  # events were yielded: nothing is retried (08 D21)
    assert sim.disconnects == []  # the simulator closed, not the client
    assert_failed_trace(tmp_path, error)


async def test_an_in_stream_error_event(protocol: str, tmp_path: Path) -> None:
    reply = scenario(protocol, error_after=body_of(protocol).count(b"\n\n") // 2)
    async with (
        Simulator.running(reply) as sim,
        client_for(sim, protocol, tmp_path, max_retries=2) as client,
    ):
        events, error = await collect(client.streaming_response([QUESTION], CONFIG))
    assert isinstance(error, ProviderStreamError)
    assert error.retryable  # an overload
    assert events and all(e.event_type == "delta" for e in events)
    assert len(sim.requests) == 1
    assert_failed_trace(tmp_path, error)


# -- timeouts --------------------------------------------------------------------------------


@contextmanager
def unanswered_port() -> Iterator[int]:
    """A loopback port whose listen queue is full, so a new connection never completes."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    try:
        for _ in range(4):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            fillers.append(filler)
        yield port
    finally:
        for filler in fillers:
            filler.close()
        server.close()


async def test_the_connect_timeout(protocol: str) -> None:
    with unanswered_port() as port:
        client = AutoLLMClient(
            "sim-model",
            api_key="sk-sim",
            base_url=f"http://127.0.0.1:{port}/v1",
            client_type=client_type_of(protocol),
            max_retries=0,
        )
        async with client:
            timeouts = Timeouts(connect=0.2, first_event=10, idle=10)
            with anyio.fail_after(5):
                events, error = await collect(
                    client.streaming_response([QUESTION], None, timeouts=timeouts)
                )
    assert events == []
    assert isinstance(error, StreamTimeoutError)
    assert (error.which, error.seconds) == ("connect", 0.2)


@pytest.mark.parametrize(
    ("which", "delivery", "timeouts"),
    [
        ("first_event", {"stall_before_headers": True}, Timeouts(first_event=0.2, idle=10)),
        ("idle", {"stall_at": "half"}, Timeouts(first_event=10, idle=0.2)),
        ("total", {"chunk_size": 64, "delay": 0.05}, Timeouts(first_event=10, idle=10, total=0.3)),
        # Keep-alive comments are liveness: the idle timeout never trips, the total one does.
        ("total", {"stall_at": "half", "keepalive": 0.05}, Timeouts(idle=0.2, total=0.6)),
    ],
)
async def test_a_stall_trips_the_named_timeout(
    protocol: str, which: str, delivery: dict[str, Any], timeouts: Timeouts, tmp_path: Path
) -> None:
    if delivery.get("stall_at") == "half":
        delivery = {**delivery, "stall_at": half_events(protocol)}
    async with (
        Simulator.running(scenario(protocol, **delivery)) as sim,
        client_for(sim, protocol, tmp_path) as client,
    ):
        with anyio.fail_after(5):
            events, error = await collect(
                client.streaming_response([QUESTION], CONFIG, timeouts=timeouts)
            )
        await wait_disconnect(sim)
    assert isinstance(error, StreamTimeoutError)
    assert error.which == which
    assert error.retryable
    assert all(e.event_type == "delta" for e in events)
    assert_failed_trace(tmp_path, error)


@pytest.mark.parametrize("stall", ["before_headers", "half"])
async def test_the_timeout_of_a_callers_http_client_stands(
    protocol: str, stall: str, tmp_path: Path
) -> None:
    """08 D62: the caller's ``httpx.AsyncClient(timeout=0.3)`` keeps its read timeout under
    the library's looser named timeouts: the tighter one wins."""
    delivery: dict[str, Any] = (
        {"stall_before_headers": True} if stall == "before_headers"
        else {"stall_at": half_events(protocol)}
    )
    async with (
        Simulator.running(scenario(protocol, **delivery)) as sim,
        httpx.AsyncClient(timeout=0.3) as http_client,
        client_for(sim, protocol, tmp_path, http_client=http_client,
                   timeouts=Timeouts(first_event=3, idle=3)) as client,
    ):
        with anyio.fail_after(2):
            events, error = await collect(client.streaming_response([QUESTION], None))
    assert isinstance(error, StreamTimeoutError)
    assert (error.which, error.seconds) == ("idle", 0.3)
    assert all(e.event_type == "delta" for e in events)


# -- retries ---------------------------------------------------------------------------------


async def test_retries_before_the_first_event_then_success(protocol: str, tmp_path: Path) -> None:
    async with Simulator.running(scenario(protocol)) as sim:
        sim.script.extend(
            [
                # an overload before any content
                scenario(protocol, error_after=EVENTS_BEFORE_CONTENT.get(protocol, 1)),
                Reply(status=500, retry_after=0),
                Reply(status=429, retry_after=0),
            ]
        )
        async with client_for(sim, protocol, tmp_path, max_retries=3) as client:
            events, error = await collect(client.streaming_response([QUESTION], CONFIG))
    assert error is None
    assert done_items(events) == list(SCENARIOS[protocol])
    assert len(sim.requests) == 4
    assert len({r.body for r in sim.requests}) == 1  # the same request each time


async def test_retries_give_up_after_max_retries(protocol: str, tmp_path: Path) -> None:
    async with (
        Simulator.running(Reply(status=503, retry_after=0)) as sim,
        client_for(sim, protocol, tmp_path, max_retries=2) as client,
    ):
        events, error = await collect(client.streaming_response([QUESTION], None))
    assert events == []
    assert isinstance(error, ProviderHTTPError)
    assert error.status == 503
    assert len(sim.requests) == 3


async def test_nothing_is_retried_after_the_first_event(protocol: str, tmp_path: Path) -> None:
    async with Simulator.running(scenario(protocol)) as sim:
        sim.script.append(scenario(protocol, error_after=body_of(protocol).count(b"\n\n") - 2))
        async with client_for(sim, protocol, tmp_path, max_retries=3) as client:
            events, error = await collect(client.streaming_response([QUESTION], None))
    assert isinstance(error, ProviderStreamError)
    assert error.retryable  # the caller may retry; the client did not
    assert done_items(events)
    assert len(sim.requests) == 1


# -- abort -----------------------------------------------------------------------------------


async def test_abort_before_the_request(protocol: str, tmp_path: Path) -> None:
    signal = AbortSignal()
    signal.abort("changed my mind")
    async with (
        Simulator.running(scenario(protocol)) as sim,
        client_for(sim, protocol, tmp_path) as client,
    ):
        events, error = await collect(client.streaming_response_stateful(QUESTION, CONFIG, signal))
        assert client.get_history() == []
    assert events == []
    assert isinstance(error, AbortedError)
    assert error.reason == "changed my mind"
    assert sim.requests == []
    assert traces(tmp_path) == []


async def abort_midway(
    protocol: str, tmp_path: Path, how: str
) -> tuple[list[UniEvent], MMSPError | None, Simulator, AutoLLMClient]:
    """Stream a stateful turn whose body stalls halfway and stop it after the first event.

    ``how``: ``"waiting"`` aborts while the client waits for bytes, ``"between"`` aborts
    while the caller holds an event, ``"aclose"`` closes the generator early.
    """
    signal = AbortSignal()
    events: list[UniEvent] = []
    error: MMSPError | None = None
    async with Simulator.running(scenario(protocol, stall_at=half_events(protocol))) as sim:
        client = client_for(sim, protocol, tmp_path)
        async with client, anyio.create_task_group() as tasks:
            stream = client.streaming_response_stateful(QUESTION, CONFIG, signal)
            try:
                async with aclosing(stream) as items:  # type: ignore[type-var]
                    async for event in items:
                        events.append(event)
                        if len(events) > 1:
                            continue
                        if how == "aclose":
                            break
                        if how == "between":
                            signal.abort("between events")
                        else:

                            async def abort_later() -> None:
                                await anyio.sleep(0.2)
                                signal.abort("while waiting")

                            tasks.start_soon(abort_later)
            except MMSPError as exc:
                error = exc
            await wait_disconnect(sim)
            # An aborted or closed call leaves nothing behind: the next turn just works.
            sim.script.append(scenario(protocol))
            after, next_error = await collect(client.streaming_response_stateful(QUESTION, None))
            assert next_error is None and after[-1].event_type == "stop"
    return events, error, sim, client


@pytest.mark.parametrize("how", ["waiting", "between", "aclose"])
async def test_abort_midway_closes_the_connection_and_leaves_no_trace(
    protocol: str, how: str, tmp_path: Path
) -> None:
    events, error, sim, client = await abort_midway(protocol, tmp_path, how)
    if how == "aclose":
        assert error is None
    else:
        assert isinstance(error, AbortedError)
        assert error.reason == ("between events" if how == "between" else "while waiting")
    if how == "between":
        assert len(events) == 1  # nothing after the abort
    assert events and all(e.event_type == "delta" for e in events)
    assert sim.disconnects == sim.requests[:1]
    # The aborted turn (trace_id "e2e/turn") wrote nothing (08 D20); the next one, without a
    # trace_id, is traced under a made id, as every call is with an explicit trace_dir (08 D78).
    written = traces(tmp_path)
    assert len(written) == 2 and all(p.parent == tmp_path / "traces" for p in written)
    # Only the turn after the abort is in the history.
    assert [m.role for m in client.get_history()] == ["user", "assistant"]
