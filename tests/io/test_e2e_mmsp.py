"""The mmsp client end to end over loopback HTTP, under asyncio and trio (spec 07 §4, §6; 03 §4,
§5; 08 D13, D20, D38, D40, D56).

The provider simulator plays an MMSP server (the mmsp protocol's dialect): ``POST /v1/stream``
answered with the public stream that ``adapters.render("mmsp", ...)`` writes, refusals as
``{"error": {"type", "message"}}``, and error events as the server sends them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from httpfakes import mock_client

import adapters
from adapters.mmsp.render import DONE, error_event
from mmsp_core.errors import InvalidMessageError
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    InlineDataDone,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniEvent,
    UniMessage,
    UsageMetadata,
)
from mmsp_core.testing import assert_stream_grammar
from mmsp_core.wire import event_from_wire
from mmsp_io import (
    AbortedError,
    AbortSignal,
    AutoLLMClient,
    IncompleteStreamError,
    MalformedEventError,
    MMSPError,
    Timeouts,
    UpstreamError,
)
from mmsp_io.simulator import Reply, Simulator, simulated_protocols

pytestmark = pytest.mark.anyio

PROTOCOL = "mmsp"
ITEMS: tuple[DoneItem, ...] = (
    ThinkingDone("The user wants the weather in Paris.", {"signature": "c2lnbmF0dXJl"}),
    TextDone("Je regarde la météo."),
    InlineDataDone(bytes(range(48)), "image/png"),
    ToolCallDone("get_weather", "call_01", {"city": "Paris"}),
)
USAGE = UsageMetadata(cached_tokens=3, prompt_tokens=20, thoughts_tokens=5, response_tokens=9)
WEATHER = ToolSchema("get_weather", "The weather in a city.",
                     {"type": "object", "properties": {"city": {"type": "string"}}})
QUESTION = UniMessage.user("Weather in Paris?")
CONFIG = {"tools": [{"name": "get_weather", "description": "The weather in a city.",
                     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
          "trace_id": "runs/mmsp", "vendor_flag": True}
RELAXED = Timeouts(connect=5, first_event=10, idle=10, total=None)


def body() -> bytes:
    return adapters.render(PROTOCOL, ITEMS, USAGE, FinishReason.TOOL_CALL, model="sim-model")


def scenario(**delivery: Any) -> Reply:
    return Reply(items=ITEMS, usage=USAGE, finish_reason=FinishReason.TOOL_CALL, **delivery)


def sent_events() -> list[UniEvent]:
    """The public events the server wrote, as the client must yield them."""
    return [event_from_wire(json.loads(block[6:])) for block in body().split(b"\n\n")[:-2]]


def client_for(sim: Simulator, tmp_path: Path, **options: Any) -> AutoLLMClient:
    options = {"max_retries": 0, "timeouts": RELAXED, "api_key": sim.api_key, **options}
    return AutoLLMClient("sim-model", base_url=sim.base_url(PROTOCOL), client_type=PROTOCOL,
                         trace_dir=tmp_path / "traces", **options)


async def collect(stream: AsyncIterator[UniEvent]) -> tuple[list[UniEvent], MMSPError | None]:
    events: list[UniEvent] = []
    try:
        async with aclosing(stream) as items:  # type: ignore[type-var]
            async for event in items:
                events.append(event)
    except MMSPError as exc:
        return events, exc
    return events, None


def sse(*blocks: bytes) -> Reply:
    return Reply(body=b"".join(blocks), content_type="text/event-stream; charset=utf-8")


def test_the_gateway_is_served_but_not_listed_as_a_provider() -> None:
    assert PROTOCOL not in simulated_protocols()


@pytest.mark.parametrize("chunk_size", [None, 5])
async def test_the_servers_stream_is_yielded_unchanged(
    chunk_size: int | None, tmp_path: Path
) -> None:
    async with (
        Simulator.running(scenario(chunk_size=chunk_size)) as sim,
        client_for(sim, tmp_path) as client,
    ):
        events, error = await collect(client.streaming_response([QUESTION], CONFIG))
    assert error is None
    assert events == sent_events()  # created_at as the server stamped them, bytes decoded
    assert_stream_grammar(events)
    assert not (tmp_path / "traces").exists()  # the server's client traces, not this one
    [request] = sim.requests
    assert (request.method, request.path, request.protocol) == ("POST", "/v1/stream", PROTOCOL)
    assert request.header("authorization") == f"Bearer {sim.api_key}"
    assert request.header("content-type") == "application/json"
    assert request.header("accept") == "text/event-stream"
    assert request.json["model"] == "sim-model"
    assert request.json["config"] == CONFIG  # verbatim: the unknown key and trace_id too
    [message] = request.json["messages"]
    assert message["content_items"] == [{"type": "text.done", "text": "Weather in Paris?"}]
    assert message["created_at"] > 1_600_000_000_000  # stamped on a copy (08 D38)
    assert QUESTION.created_at is None


async def test_a_tool_round_trip_posts_the_whole_history(tmp_path: Path) -> None:
    async with Simulator.running() as sim, client_for(sim, tmp_path) as client:  # demo script
        first, error = await collect(client.streaming_response_stateful(
            QUESTION, {"tools": [{"name": "get_weather", "description": "",
                                  "parameters": WEATHER.parameters}]}))
        assert error is None and first[-1].finish_reason == FinishReason.TOOL_CALL
        [call] = [item for e in first for item in e.content_items
                  if isinstance(item, ToolCallDone)]
        assert call.arguments == {"city": "Paris"}
        result = UniMessage("user", (ToolResultDone("18 degrees C", call.tool_call_id),))
        second, error = await collect(client.streaming_response_stateful(result))
        assert error is None
        assert [m.role for m in client.get_history()] == ["user", "assistant"] * 2
    assert second[-2].content_items[0] == TextDone("Here is what I found: 18 degrees C")
    posted = [m["role"] for m in sim.requests[1].json["messages"]]
    assert posted == ["user", "assistant", "user"]


@pytest.mark.parametrize(("reply", "status", "error_type", "message"), [
    (Reply(status=404, message="The model 'x' does not exist; GET /v1/models lists the models "
                               "this server serves."),
     404, "NotFoundError", "The model 'x' does not exist"),
    (Reply(status=400, message="config must be an object."), 400, "InvalidRequestError",
     "config must be an object."),
    (Reply(status=502), 502, "ServerError", "Simulated error 502."),
], ids=["404", "400", "502"])
async def test_a_refusal_is_an_upstream_error_and_not_retried(
    reply: Reply, status: int, error_type: str, message: str, tmp_path: Path
) -> None:
    async with (
        Simulator.running(reply) as sim,
        client_for(sim, tmp_path, max_retries=3) as client,
    ):
        events, error = await collect(client.streaming_response([QUESTION]))
    assert events == []
    assert isinstance(error, UpstreamError)
    assert (error.client, error.status, error.error_type) == ("mmsp", status, error_type)
    assert message in error.error["message"] and message in str(error)
    assert len(sim.requests) == 1  # every error the server reports is its own (08 D13)


async def test_a_wrong_key_is_the_servers_401(tmp_path: Path) -> None:
    async with (
        Simulator.running(scenario()) as sim,
        client_for(sim, tmp_path, api_key="sk-wrong") as client,
    ):
        _, error = await collect(client.streaming_response([QUESTION]))
    assert isinstance(error, UpstreamError)
    assert (error.status, error.error_type, error.error["message"]) == (
        401, "AuthenticationError", "Invalid or missing API key.")


async def test_an_open_server_gets_no_key(tmp_path: Path) -> None:
    async with (
        Simulator.running(scenario()) as sim,
        AutoLLMClient("sim-model", client_type=PROTOCOL, base_url=sim.base_url(PROTOCOL),
                      timeouts=RELAXED) as client,
    ):
        await collect(client.streaming_response([QUESTION]))
    [request] = sim.requests  # refused by the simulator's key check, but sent without a key
    assert request.header("authorization") is None


DEEP = "[" * 600 + "]" * 600
LONG_KEY = "sk-mmsp-0123456789abcdefghijklmnopqrstuvwxyz"


@pytest.mark.parametrize(("status", "expected"), [
    (400, UpstreamError), (200, MalformedEventError)
], ids=["http-refusal", "error-event"])
async def test_an_error_object_nested_too_deeply_is_still_an_mmsp_error(
    status: int, expected: type[MMSPError]
) -> None:
    # The key redaction (08 D61) walks an UpstreamError's object: nothing may exhaust the stack.
    error = f'{{"error": {{"type": "X", "message": "m", "x": {DEEP}}}}}'

    def server(request: httpx.Request) -> httpx.Response:
        if status != 200:
            return httpx.Response(status, text=error, headers={"content-type": "application/json"})
        return httpx.Response(200, content=f"data: {error}\n\n".encode() + DONE,
                              headers={"content-type": "text/event-stream"})

    async with AutoLLMClient("served", client_type=PROTOCOL, api_key=LONG_KEY,
                             base_url="http://gateway.test/v1", max_retries=0,
                             http_client=mock_client(server)) as client:
        _, caught = await collect(client.streaming_response([QUESTION]))
    assert isinstance(caught, expected)
    if isinstance(caught, UpstreamError):  # a stand-in for the object, as for a non-JSON body
        assert (caught.status, caught.error_type) == (400, "HTTPError")


async def test_a_stateful_answer_too_deep_to_keep_is_malformed(tmp_path: Path) -> None:
    arguments = json.loads('{"a": ' + DEEP + "}")
    call = ToolCallDone("get_weather", "call_1", arguments)
    reply = Reply(items=[call], usage=USAGE, finish_reason=FinishReason.TOOL_CALL,
                  fragment_size=1 << 12)
    async with Simulator.running(reply) as sim, client_for(sim, tmp_path) as client:
        events, error = await collect(client.streaming_response_stateful(QUESTION))
        assert client.get_history() == []
    assert events[-1].content_items == (call,)  # every event before the stop
    assert isinstance(error, MalformedEventError)


async def test_an_error_before_the_request_arrives_under_200(tmp_path: Path) -> None:
    refusal = InvalidMessageError("openai-chat", None, 0, detail="no content items")
    async with (
        Simulator.running(sse(error_event(refusal))) as sim,
        client_for(sim, tmp_path) as client,
    ):
        events, error = await collect(client.streaming_response([UniMessage("user", ())]))
    assert events == []
    assert isinstance(error, UpstreamError)
    assert (error.status, error.error_type) == (None, "InvalidMessageError")
    assert (error.error["message_index"], error.error["client"]) == (0, "openai-chat")
    # The empty message went to the server, which checks messages itself (08 D58).
    [message] = sim.requests[0].json["messages"]
    assert (message["role"], message["content_items"]) == ("user", [])


async def test_an_upstream_error_midway_comes_after_the_events_before_it(tmp_path: Path) -> None:
    async with (
        Simulator.running(scenario(error_after=4)) as sim,
        client_for(sim, tmp_path) as client,
    ):
        events, error = await collect(client.streaming_response([QUESTION]))
    assert events == sent_events()[:4]
    assert isinstance(error, UpstreamError)
    assert error.error_type == "ProviderStreamError"
    assert error.error["error_type"] == "server_error"


@pytest.mark.parametrize("ending", [DONE, b""], ids=["done", "eof"])
async def test_a_stream_that_ends_before_its_stop_is_incomplete(
    ending: bytes, tmp_path: Path
) -> None:
    blocks = body().split(b"\n\n")[:-3]
    reply = sse(*(block + b"\n\n" for block in blocks), ending)
    async with Simulator.running(reply) as sim, client_for(sim, tmp_path) as client:
        events, error = await collect(client.streaming_response([QUESTION]))
    assert events == sent_events()[:-1]
    assert isinstance(error, IncompleteStreamError)
    assert (error.client, error.missing) == ("mmsp", ("usage_metadata", "finish_reason"))


async def test_a_stream_breaking_the_grammar_is_malformed(tmp_path: Path) -> None:
    blocks = body().split(b"\n\n")
    events = [json.loads(block[6:]) for block in blocks[:2]]
    events[0]["content_items"] += events[1]["content_items"]  # two items in one event
    reply = sse(b"data: " + json.dumps(events[0]).encode() + b"\n\n", *(
        block + b"\n\n" for block in blocks[2:-1]))
    async with Simulator.running(reply) as sim, client_for(sim, tmp_path) as client:
        yielded, error = await collect(client.streaming_response([QUESTION]))
    assert yielded == []
    assert isinstance(error, MalformedEventError)  # the server's fault (08 D59)


async def test_the_stream_ends_at_done_on_a_connection_held_open(tmp_path: Path) -> None:
    reply = scenario(stall_at=len(body()), keepalive=0.05)
    async with Simulator.running(reply) as sim, client_for(sim, tmp_path) as client:
        with anyio.fail_after(5):
            events, error = await collect(client.streaming_response([QUESTION]))
    assert error is None and events == sent_events()


async def test_abort_before_the_request_sends_nothing(tmp_path: Path) -> None:
    signal = AbortSignal()
    signal.abort("not now")
    async with Simulator.running(scenario()) as sim, client_for(sim, tmp_path) as client:
        events, error = await collect(client.streaming_response([QUESTION], None, signal))
    assert events == [] and isinstance(error, AbortedError) and error.reason == "not now"
    assert sim.requests == []


async def test_abort_while_waiting_closes_the_connection(tmp_path: Path) -> None:
    signal = AbortSignal()
    events: list[UniEvent] = []
    half = sum(len(block) + 2 for block in body().split(b"\n\n")[:4])
    async with (
        Simulator.running(scenario(stall_at=half)) as sim,
        client_for(sim, tmp_path) as client,
        anyio.create_task_group() as tasks,
    ):
        stream = client.streaming_response([QUESTION], None, signal)
        with pytest.raises(AbortedError) as caught:
            async with aclosing(stream) as items:  # type: ignore[type-var]
                async for event in items:
                    events.append(event)
                    if len(events) == 1:
                        tasks.start_soon(_abort_later, signal)
        with anyio.fail_after(5):
            await sim.wait_disconnects(1)
    assert caught.value.reason == "while waiting"
    assert events == sent_events()[:4]


async def _abort_later(signal: AbortSignal) -> None:
    await anyio.sleep(0.2)
    signal.abort("while waiting")


async def test_list_models(tmp_path: Path) -> None:
    async with (
        Simulator.running(models=("gpt-fast", "claude-deep")) as sim,
        client_for(sim, tmp_path) as client,
    ):
        assert await client.list_models() == ["gpt-fast", "claude-deep"]
    assert sim.requests[0].path == "/v1/models"


# -- relaying: a server whose row is mmsp, pointing at another server (07 §2) -----------------


def gateway_row(served: str, model: str, key: str, base_url: str, client_type: str) -> Any:
    return {"server_model_id": served, "model_id": model, "api_key": key, "base_url": base_url,
            "client_type": client_type}


async def test_a_relaying_server_streams_what_the_provider_sent(tmp_path: Path) -> None:
    server = pytest.importorskip("mmsp_io.server", reason="the MMSP server is not built yet")
    reply = Reply(items=ITEMS[:2] + ITEMS[3:], usage=USAGE, finish_reason=FinishReason.TOOL_CALL)
    async with Simulator.running(reply) as sim:
        async with AutoLLMClient("sim-model", client_type="openai-responses",
                                 api_key=sim.api_key, base_url=sim.base_url("openai-responses"),
                                 max_retries=0) as direct_client:
            direct, error = await collect(direct_client.streaming_response([QUESTION]))
        assert error is None
        first = server.Gateway({"models": [gateway_row(
            "upstream", "sim-model", sim.api_key, sim.base_url("openai-responses"),
            "openai-responses")], "api_keys": ["tok-first"]}, trace_dir=tmp_path / "first")
        async with server.serve(first) as first_server:
            relay = server.Gateway({"models": [gateway_row(
                "relayed", "upstream", "tok-first", first_server.url + "/v1", PROTOCOL)],
                "api_keys": ["tok-relay"]}, trace_dir=tmp_path / "relay")
            async with (
                server.serve(relay) as relay_server,
                AutoLLMClient("relayed", client_type=PROTOCOL, api_key="tok-relay",
                              base_url=relay_server.url + "/v1", timeouts=RELAXED) as client,
            ):
                # The unknown key crosses both servers to the provider's client, which is the
                # one that ignores it (08 D57).
                with pytest.warns(UserWarning, match="ignores the config key 'vendor_flag'"):
                    relayed, error = await collect(client.streaming_response(
                        [QUESTION], {"vendor_flag": 1}))
                empty, refusal = await collect(client.streaming_response(
                    [UniMessage("user", ())]))
    assert error is None
    assert [without_stamp(e) for e in relayed] == [without_stamp(e) for e in direct]
    assert sim.requests[-1].json["model"] == "sim-model"
    # An error crosses both servers: the relay reports the first server's report of it.
    assert empty == [] and isinstance(refusal, UpstreamError)
    assert (refusal.error_type, refusal.error["error_type"]) == (
        "UpstreamError", "InvalidMessageError")
    assert refusal.error["error"]["message_index"] == 0


def without_stamp(event: UniEvent) -> tuple[Any, ...]:
    """An event without its ``created_at``: each server's client stamps its own clock."""
    return (event.event_type, event.content_items, event.usage_metadata, event.finish_reason)
