"""The gateway's front doors (08 D73) over real loopback HTTP, through both front ends (the h11
one and the ASGI app under hypercorn), under asyncio and trio.

The gateway points at the provider simulator's rows of every provider (each row named like
its protocol); callers are the official ``openai`` and ``anthropic`` SDKs, ``AutoLLMClient``
speaking each door's protocol, and raw HTTP. What a caller reports through a door is compared
with what ``AutoLLMClient`` reports on the same row directly, given what the door read of the
caller's request, so what the door adds or loses shows.

Both SDKs run on httpx and anyio and so run under trio too: their tests take both backends.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import attrs
import httpx
import pytest
from serverkit import AUTH, FRONTS, RELAXED, TOKEN, client_type_of, config, running

import adapters
from adapters import FrontDoor
from adapters.anthropic_messages.usage import InputCounts, from_message_delta
from adapters.openai_chat.usage import read_usage
from adapters.openai_responses.usage import usage_from_wire
from adapters.testing import check_protocol
from mmsp_core.errors import (
    AbortedError,
    IncompleteStreamError,
    InvalidMessageError,
    MMSPError,
    ProviderConnectionError,
    ProviderHTTPError,
    ProviderStreamError,
    StreamTimeoutError,
    UnsupportedParameterError,
    UpstreamError,
)
from mmsp_core.messages import concat_uni_events_to_uni_message
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    ToolSchema,
    UniConfig,
    UniEvent,
    UniMessage,
    UsageMetadata,
)
from mmsp_core.sse import SSEDecoder
from mmsp_core.wire import to_wire
from mmsp_io import AutoLLMClient
from mmsp_io.server import Gateway
from mmsp_io.server.doors import error_status, ignored_fields_header
from mmsp_io.simulator import Reply, Simulator, simulated_protocols

if TYPE_CHECKING:  # the SDKs are imported where a test uses them: each costs a second to load
    import anthropic
    import httpx2
    import openai

pytestmark = pytest.mark.anyio

#: The simulator's rows of every provider that streams a generation (embeddings answer one
#: body; Bedrock signs its requests and has its own tests).
ROWS = [p for p in simulated_protocols()
        if isinstance(adapters.PROTOCOLS[p].new_decoder(), SSEDecoder)]
#: The protocols whose records have a front door.
DOORS = [name for name, record in adapters.PROTOCOLS.items() if record.front is not None]
QUESTION = "Weather in Paris?"
WEATHER = {
    "name": "get_weather",
    "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]},
}
FORECAST = "Sunny, 21 degrees"
#: A 1x1 PNG.
PIXEL = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")).decode()
#: How each door's protocol spells a finish reason.
FINISH = {
    "openai-chat": {FinishReason.STOP: "stop", FinishReason.TOOL_CALL: "tool_calls"},
    "openai-responses": {FinishReason.STOP: "completed", FinishReason.TOOL_CALL: "completed"},
    "ant-messages": {FinishReason.STOP: "end_turn", FinishReason.TOOL_CALL: "tool_use"},
}


#: Every row through the h11 front end, and one through the ASGI app too: both twins run the
#: same handling (``Gateway.handle``), so a row sweep through both would only double the time.
ROW_FRONTS = [*((row, "h11") for row in ROWS), (ROWS[0], "asgi")]
STREAMS = pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def door_of(protocol: str) -> FrontDoor:
    door = adapters.PROTOCOLS[protocol].front
    assert door is not None, f"{protocol} has no front door"
    return door


def gateway(sim: Simulator, tmp_path: Path, rows: Sequence[str] = ROWS) -> Gateway:
    """A gateway over the simulator's ``rows``, each named like its protocol, keyed with
    ``TOKEN``."""
    return Gateway(config(sim, rows), timeouts=RELAXED, max_retries=0,
                   trace_dir=tmp_path / "traces")


@asynccontextmanager
async def serving(
    tmp_path: Path, front: str, rows: Sequence[str] = ROWS
) -> AsyncIterator[tuple[Simulator, str]]:
    """The simulator and a gateway over its ``rows`` served through ``front``: ``(sim,
    origin)``."""
    async with Simulator.running() as sim, running(gateway(sim, tmp_path, rows), front) as origin:
        yield sim, origin


def zeroed(usage: UsageMetadata) -> UsageMetadata:
    """``usage`` with unknown counts as 0: a whole response writes every count, as the
    protocol's servers do (the doors' documented normalisation)."""
    return UsageMetadata(*(count or 0 for count in attrs.astuple(usage)))


@attrs.frozen
class Report:
    """What a caller reports of one turn: the text, the thinking, the tool calls as ``(id,
    name, arguments)``, the usage (unknown counts as 0) and the finish reason as the protocol
    spells it."""

    text: str
    thinking: str
    calls: tuple[tuple[str, str, dict[str, Any]], ...]
    usage: UsageMetadata = attrs.field(converter=zeroed)
    finish: str


class Recorder:
    """The requests a client sent, and their JSON bodies, recorded by an httpx request hook."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request | httpx2.Request] = []
        self.bodies: list[Any] = []

    async def hook(self, request: httpx.Request | httpx2.Request) -> None:
        if request.method == "POST":
            self.requests.append(request)
            self.bodies.append(json.loads(request.content))

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(event_hooks={"request": [self.hook]}, timeout=30)

    def client2(self) -> httpx2.AsyncClient:
        """The same for the anthropic SDK, which runs on httpx2 and takes only its client."""
        import httpx2

        return httpx2.AsyncClient(event_hooks={"request": [self.hook]}, timeout=30)


async def direct(sim: Simulator, protocol: str, row: str, body: Any, tmp_path: Path) -> Report:
    """What ``AutoLLMClient`` reports on the simulator's ``row`` itself, given what
    ``protocol``'s door reads of ``body``."""
    read = door_of(protocol).read_request(body)
    client = AutoLLMClient("sim-model", api_key=sim.api_key, base_url=sim.base_url(row),
                           client_type=adapters.resolve(row)[0].client_type, timeouts=RELAXED,
                           max_retries=0, trace_dir=tmp_path / "direct")
    async with client:
        stream = client.streaming_response(read.messages, read.config)
        events = [event async for event in stream]
    items = [e.content_items[0] for e in events if e.event_type == "delta"]
    stop = events[-1]
    assert stop.usage_metadata is not None and stop.finish_reason is not None
    return Report(
        text="".join(i.text for i in items if isinstance(i, TextDone)),
        thinking="".join(i.thinking for i in items if isinstance(i, ThinkingDone)),
        calls=tuple((i.tool_call_id, i.name, dict(i.arguments)) for i in items
                    if isinstance(i, ToolCallDone)),
        usage=adapters.PROTOCOLS[protocol].normalize_usage(stop.usage_metadata),
        finish=FINISH[protocol][stop.finish_reason],
    )


def same_upstream_request(sim: Simulator) -> None:
    """The gateway's request upstream (the one before last) is the one the direct call sent
    (the last)."""
    through_gateway, straight = sim.requests[-2:]
    assert through_gateway.json == straight.json


# -- the openai SDK: Chat Completions --------------------------------------------------------


def chat_tools() -> list[dict[str, Any]]:
    return [{"type": "function", "function": WEATHER}]


async def chat_turn(
    client: openai.AsyncOpenAI, model: str, messages: list[Any], *, stream: bool
) -> tuple[Report, dict[str, Any]]:
    """One Chat Completions turn through the SDK: its report and the assistant message to
    send back."""
    options: dict[str, Any] = {"model": model, "messages": messages, "tools": chat_tools(),
                               "reasoning_effort": "medium"}
    text, thinking, finish = "", "", ""
    calls: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    if stream:
        chunks = await client.chat.completions.create(
            **options, stream=True, stream_options={"include_usage": True})
        async for chunk in chunks:
            if chunk.usage is not None:
                usage = chunk.usage.model_dump(exclude_none=True)
            for choice in chunk.choices:
                delta = choice.delta
                text += delta.content or ""
                thinking += (delta.model_extra or {}).get("reasoning_content") or ""
                for call in delta.tool_calls or []:
                    entry = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                    entry["id"] += call.id or ""
                    if call.function is not None:
                        entry["name"] += call.function.name or ""
                        entry["arguments"] += call.function.arguments or ""
                finish = choice.finish_reason or finish
    else:
        completion = await client.chat.completions.create(**options)
        choice = completion.choices[0]
        text = choice.message.content or ""
        thinking = (choice.message.model_extra or {}).get("reasoning_content") or ""
        for index, call in enumerate(choice.message.tool_calls or []):
            calls[index] = {"id": call.id, "name": call.function.name,
                            "arguments": call.function.arguments}
        finish = choice.finish_reason
        assert completion.model == model  # the row's server_model_id (08 D73)
        assert completion.usage is not None
        usage = completion.usage.model_dump(exclude_none=True)
    read = read_usage({"usage": usage})
    assert read is not None
    report = Report(text, thinking, tuple(
        (c["id"], c["name"], json.loads(c["arguments"])) for c in calls.values()), read, finish)
    assistant: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        assistant["tool_calls"] = [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()]
    return report, assistant


@STREAMS
@pytest.mark.parametrize(("row", "front"), ROW_FRONTS)
async def test_the_openai_sdk_runs_a_chat_agent_turn_through_the_gateway(
    row: str, stream: bool, front: str, tmp_path: Path
) -> None:
    """Thinking and a tool call, then the tool's result and the answer: the SDK reports what
    ``AutoLLMClient`` reports on the row directly."""
    recorder = Recorder()
    async with serving(tmp_path, front, [row]) as (sim, origin), recorder.client() as http:
        import openai

        sdk = openai.AsyncOpenAI(base_url=origin + "/v1", api_key=TOKEN, max_retries=0,
                                 http_client=http)
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        first, assistant = await chat_turn(sdk, row, messages, stream=stream)
        assert first == await direct(sim, "openai-chat", row, recorder.bodies[-1], tmp_path)
        same_upstream_request(sim)
        assert first.thinking and first.finish == "tool_calls"
        ((call_id, name, arguments),) = first.calls
        assert (name, arguments) == ("get_weather", {"city": "Paris"})
        messages += [assistant, {"role": "tool", "tool_call_id": call_id, "content": FORECAST}]
        second, _ = await chat_turn(sdk, row, messages, stream=stream)
        assert second == await direct(sim, "openai-chat", row, recorder.bodies[-1], tmp_path)
        same_upstream_request(sim)
    assert FORECAST in second.text and second.finish == "stop"


# -- the openai SDK: Responses ---------------------------------------------------------------


def responses_tools() -> list[dict[str, Any]]:
    return [{"type": "function", **WEATHER}]


async def responses_turn(
    client: openai.AsyncOpenAI, model: str, items: list[Any], *, stream: bool
) -> tuple[Report, list[dict[str, Any]]]:
    """One Responses turn through the SDK: its report and its output items to send back."""
    options: dict[str, Any] = {"model": model, "input": items, "tools": responses_tools(),
                               "reasoning": {"effort": "medium", "summary": "auto"}}
    if stream:
        streamed, final = "", None
        events = await client.responses.create(**options, stream=True)
        async for event in events:
            if event.type == "response.output_text.delta":
                streamed += event.delta
            elif event.type == "response.completed":
                final = event.response
        assert final is not None
        assert streamed == final.output_text  # the text arrived event by event
    else:
        final = await client.responses.create(**options)
    assert final.model == model  # the row's server_model_id (08 D73)
    output = [item.model_dump(exclude_none=True) for item in final.output]
    thinking = "".join(part["text"] for item in output if item["type"] == "reasoning"
                       for part in [*item.get("summary", ()), *item.get("content", ())])
    calls = tuple((item["call_id"], item["name"], json.loads(item["arguments"]))
                  for item in output if item["type"] == "function_call")
    assert final.usage is not None
    usage = usage_from_wire(final.usage.model_dump(exclude_none=True))
    return Report(final.output_text, thinking, calls, usage, final.status or ""), output


@STREAMS
@pytest.mark.parametrize(("row", "front"), ROW_FRONTS)
async def test_the_openai_sdk_runs_a_responses_agent_turn_through_the_gateway(
    row: str, stream: bool, front: str, tmp_path: Path
) -> None:
    """Reasoning and a function call, then its output and the answer: the SDK reports what
    ``AutoLLMClient`` reports on the row directly; the reasoning item goes back as it came."""
    recorder = Recorder()
    async with serving(tmp_path, front, [row]) as (sim, origin), recorder.client() as http:
        import openai

        sdk = openai.AsyncOpenAI(base_url=origin + "/v1", api_key=TOKEN, max_retries=0,
                                 http_client=http)
        items: list[Any] = [{"role": "user", "content": QUESTION}]
        first, output = await responses_turn(sdk, row, items, stream=stream)
        assert first == await direct(sim, "openai-responses", row, recorder.bodies[-1],
                                     tmp_path)
        same_upstream_request(sim)
        assert first.thinking
        ((call_id, name, arguments),) = first.calls
        assert (name, arguments) == ("get_weather", {"city": "Paris"})
        items += [*output, {"type": "function_call_output", "call_id": call_id,
                            "output": FORECAST}]
        second, _ = await responses_turn(sdk, row, items, stream=stream)
        assert second == await direct(sim, "openai-responses", row, recorder.bodies[-1],
                                      tmp_path)
        same_upstream_request(sim)
    assert FORECAST in second.text and second.finish == "completed"


# -- the anthropic SDK: Messages -------------------------------------------------------------


#: A turn of thinking with a signature (as Claude and Gemini sign theirs) and a tool call.
SIGNED_TURN = Reply(
    items=[ThinkingDone(thinking="The user wants the weather; I will ask the tool.",
                        fidelity={"signature": "c2lnbmF0dXJlLTE="}),
           ToolCallDone(name="get_weather", tool_call_id="toolu_1", arguments={"city": "Paris"})],
    usage=UsageMetadata(cached_tokens=2, prompt_tokens=30, response_tokens=12),
    finish_reason=FinishReason.TOOL_CALL,
)


def messages_tools() -> list[dict[str, Any]]:
    return [{"name": WEATHER["name"], "description": WEATHER["description"],
             "input_schema": WEATHER["parameters"]}]


async def messages_turn(
    client: anthropic.AsyncAnthropic, model: str, messages: list[Any], *, stream: bool
) -> tuple[Report, list[dict[str, Any]]]:
    """One Messages turn through the SDK, thinking on: its report and its content blocks to
    send back."""
    options: dict[str, Any] = {"model": model, "max_tokens": 4096, "messages": messages,
                               "tools": messages_tools(),
                               "thinking": {"type": "enabled", "budget_tokens": 4096}}
    if stream:
        async with client.messages.stream(**options) as events:
            streamed = "".join([text async for text in events.text_stream])
            final = await events.get_final_message()
    else:
        final = await client.messages.create(**options)
    assert final.model == model  # the row's server_model_id (08 D73)
    content = [block.model_dump(exclude_none=True) for block in final.content]
    text = "".join(block["text"] for block in content if block["type"] == "text")
    if stream:
        assert streamed == text  # the text arrived event by event
    thinking = "".join(block["thinking"] for block in content if block["type"] == "thinking")
    calls = tuple((block["id"], block["name"], block["input"]) for block in content
                  if block["type"] == "tool_use")
    usage = from_message_delta(final.usage.model_dump(exclude_none=True), InputCounts())
    return Report(text, thinking, calls, usage, final.stop_reason or ""), content


@STREAMS
@pytest.mark.parametrize(("row", "front"), ROW_FRONTS)
async def test_the_anthropic_sdk_runs_a_messages_agent_turn_through_the_gateway(
    row: str, stream: bool, front: str, tmp_path: Path
) -> None:
    """An image and a question, thinking and a tool call, then the tool's result with the
    thinking replayed, signature and all, and the answer: the SDK reports what
    ``AutoLLMClient`` reports on the row directly."""
    recorder = Recorder()
    async with serving(tmp_path, front, [row]) as (sim, origin), recorder.client2() as http:
        import anthropic

        sdk = anthropic.AsyncAnthropic(base_url=origin, api_key=TOKEN, max_retries=0,
                                       http_client=http)
        image = {"type": "image",
                 "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}}
        messages: list[Any] = [{"role": "user", "content": [
            image, {"type": "text", "text": QUESTION}]}]
        sim.script.extend([SIGNED_TURN, SIGNED_TURN])  # through the gateway, then directly
        first, content = await messages_turn(sdk, row, messages, stream=stream)
        assert PIXEL in sim.requests[-1].body.decode()  # the image went upstream
        assert first == await direct(sim, "ant-messages", row, recorder.bodies[-1], tmp_path)
        same_upstream_request(sim)
        assert first.thinking and first.finish == "tool_use"
        ((call_id, name, arguments),) = first.calls
        assert (name, arguments) == ("get_weather", {"city": "Paris"})
        messages += [{"role": "assistant", "content": content},
                     {"role": "user", "content": [
                         {"type": "tool_result", "tool_use_id": call_id, "content": FORECAST}]}]
        second, _ = await messages_turn(sdk, row, messages, stream=stream)
        replayed = sim.requests[-1].json
        assert second == await direct(sim, "ant-messages", row, recorder.bodies[-1], tmp_path)
        same_upstream_request(sim)
    assert FORECAST in second.text and second.finish == "end_turn"
    (thought,) = [block for block in content if block["type"] == "thinking"]
    if row == "ant-messages":  # the signature the caller got is the one sent upstream again
        assert thought["signature"] == "c2lnbmF0dXJlLTE="
        assert thought in replayed["messages"][1]["content"]


# -- AutoLLMClient speaking each door's protocol ---------------------------------------------


def door_base_url(protocol: str, origin: str) -> str:
    """The base URL a client of ``protocol`` is given for the gateway at ``origin`` (the
    protocol's own base path, as the simulator serves it)."""
    dialect = adapters.PROTOCOLS[protocol].traits.dialect
    assert dialect is not None
    return origin + dialect.base_path


#: Thinking, text and a tool call, with every count of usage.
SCRIPTED_TURN = Reply(
    items=[ThinkingDone(thinking="The user wants the weather.",
                        fidelity={"signature": "c2lnbmF0dXJlLTI="}),
           TextDone(text="I will look the weather up."),
           ToolCallDone(name="get_weather", tool_call_id="call_7", arguments={"city": "Paris"})],
    usage=UsageMetadata(cached_tokens=3, prompt_tokens=20, thoughts_tokens=5, response_tokens=9),
    finish_reason=FinishReason.TOOL_CALL,
)


def turn_config() -> UniConfig:
    return UniConfig(tools=(ToolSchema(**WEATHER),))


async def public_stream(client: AutoLLMClient) -> tuple[list[UniEvent], UniMessage]:
    """One turn with the weather tool: the public stream and the assistant message."""
    stream = client.streaming_response([UniMessage.user(QUESTION)], turn_config())
    async with aclosing(stream) as events:
        seen = [event async for event in events]
    return seen, concat_uni_events_to_uni_message(seen)


@pytest.mark.parametrize("protocol", DOORS)
@pytest.mark.parametrize(("row", "front"), ROW_FRONTS)
async def test_auto_llm_client_through_a_door_yields_the_rows_public_stream(
    protocol: str, row: str, front: str, tmp_path: Path
) -> None:
    """The gateway is a provider of each door's protocol: the public stream a client of that
    protocol gets from it is the row's own, up to what the protocol carries (its documented
    normalisation)."""
    async with serving(tmp_path, front, [row]) as (sim, origin):
        sim.script.extend([SCRIPTED_TURN, SCRIPTED_TURN])  # the same answer either way
        through = AutoLLMClient(row, api_key=TOKEN, base_url=door_base_url(protocol, origin),
                                client_type=client_type_of(protocol), timeouts=RELAXED,
                                max_retries=0, trace_dir=tmp_path / "through")
        straight = AutoLLMClient("sim-model", api_key=sim.api_key, base_url=sim.base_url(row),
                                 client_type=client_type_of(row), timeouts=RELAXED,
                                 max_retries=0, trace_dir=tmp_path / "straight")
        async with through, straight:
            events, got = await public_stream(through)
            _, expected = await public_stream(straight)
    record = adapters.PROTOCOLS[protocol]
    assert expected.finish_reason is not None and expected.usage_metadata is not None
    items, finish = record.normalize(expected.content_items, expected.finish_reason)
    assert (list(got.content_items), got.finish_reason) == (items, finish)
    assert got.usage_metadata == record.normalize_usage(expected.usage_metadata)
    deltas = [e.content_items[0] for e in events if e.event_type == "delta"
              and not isinstance(e.content_items[0], DoneItem)]
    assert deltas, "the door wrote the stream whole, not event by event"


@pytest.mark.parametrize("protocol", DOORS)
async def test_bodies_recorded_from_each_door_pass_check_protocol(
    protocol: str, tmp_path: Path
) -> None:
    """What a door sends for a row's turn (thinking, text and a tool call) is a conforming
    body of its protocol (``adapters.testing.check_protocol``)."""
    recorder = Recorder()
    bodies: list[Path] = []
    async with serving(tmp_path, "h11", ROWS[:1]) as (_sim, origin), \
            recorder.client() as http:
        client = AutoLLMClient(ROWS[0], api_key=TOKEN, base_url=door_base_url(protocol, origin),
                               client_type=client_type_of(protocol), timeouts=RELAXED,
                               max_retries=0, trace_dir=tmp_path / "through", http_client=http)
        async with client:
            _, message = await public_stream(client)
        request = recorder.requests[-1]
        answer = await http.post(str(request.url), content=request.content,
                                 headers=request.headers)
    assert answer.status_code == 200
    body = tmp_path / "turn.sse"
    body.write_bytes(answer.content)
    stop = {"usage_metadata": to_wire(message.usage_metadata),
            "finish_reason": message.finish_reason}
    expected = {"items": [to_wire(item) for item in message.content_items], "stop": stop}
    (tmp_path / "turn.expected.json").write_text(json.dumps(expected))
    bodies.append(body)
    check_protocol(protocol, bodies, examples=3)


# -- refusals in each protocol's own error body ----------------------------------------------


def request_body(protocol: str, model: str, *, stream: bool, **fields: Any) -> dict[str, Any]:
    """The smallest request of ``protocol``'s door, plus ``fields``."""
    question = [{"role": "user", "content": QUESTION}]
    shapes: dict[str, dict[str, Any]] = {
        "openai-chat": {"messages": question},
        "openai-responses": {"input": QUESTION},
        "ant-messages": {"messages": question, "max_tokens": 256},
    }
    return {"model": model, **shapes[protocol], "stream": stream, **fields}


def door_url(protocol: str, origin: str) -> str:
    return origin + door_of(protocol).path


def assert_error_body(protocol: str, answer: httpx.Response, param: str | None = None) -> str:
    """``answer``'s body is ``protocol``'s error body for its status (``param`` naming the
    refused field); its message."""
    body = answer.json()
    message = body["error"]["message"]
    assert body == door_of(protocol).error_body(answer.status_code, message, param=param)
    assert answer.headers["content-type"] == "application/json"
    return str(message)


#: A field each door refuses (08 D73): honouring it would change the answer.
REFUSED = {
    "openai-chat": ("n", 2),
    "openai-responses": ("background", True),
    "ant-messages": ("mcp_servers", [{"type": "url", "url": "https://mcp.example/sse",
                                      "name": "example"}]),
}


@pytest.mark.parametrize("protocol", DOORS)
async def test_a_refused_field_is_a_400_in_the_protocols_error_body(
    protocol: str, front: str, tmp_path: Path
) -> None:
    field, value = REFUSED[protocol]
    body = request_body(protocol, ROWS[0], stream=True, **{field: value})
    async with serving(tmp_path, front, ROWS[:1]) as (sim, origin), \
            httpx.AsyncClient() as http:
        answer = await http.post(door_url(protocol, origin), json=body, headers=AUTH)
    assert answer.status_code == 400
    assert field in assert_error_body(protocol, answer, field)
    assert sim.requests == []


@pytest.mark.parametrize("protocol", DOORS)
async def test_an_unknown_model_is_a_404_in_the_protocols_error_body(
    protocol: str, front: str, tmp_path: Path
) -> None:
    body = request_body(protocol, "no-such-model", stream=False)
    async with serving(tmp_path, front, ROWS[:1]) as (sim, origin), \
            httpx.AsyncClient() as http:
        answer = await http.post(door_url(protocol, origin), json=body, headers=AUTH)
    assert answer.status_code == 404
    assert "'no-such-model' does not exist" in assert_error_body(protocol, answer)
    assert sim.requests == []


@pytest.mark.parametrize("protocol", DOORS)
async def test_a_body_that_is_no_json_object_is_a_400_in_the_protocols_error_body(
    protocol: str, tmp_path: Path
) -> None:
    """Also a JSON body not declared ``application/json`` (a web page could send that without
    asking first)."""
    async with serving(tmp_path, "h11", ROWS[:1]) as (sim, origin), \
            httpx.AsyncClient() as http:
        url = door_url(protocol, origin)
        plain = {**AUTH, "content-type": "text/plain"}
        answers = [await http.post(url, content=b"[1, 2]", headers=AUTH),
                   await http.post(url, json=request_body(protocol, ROWS[0], stream=False),
                                   headers=plain)]
    for answer in answers:
        assert answer.status_code == 400
        assert assert_error_body(protocol, answer) == "Request body must be a JSON object."
    assert sim.requests == []


@pytest.mark.parametrize("style", ["authorization", "x-api-key"])
@pytest.mark.parametrize("protocol", DOORS)
async def test_a_bad_key_in_either_style_is_a_401_in_the_protocols_error_body(
    protocol: str, style: str, front: str, tmp_path: Path
) -> None:
    def key(token: str) -> dict[str, str]:
        return {"authorization": f"Bearer {token}"} if style == "authorization" else {
            "x-api-key": token}

    body = request_body(protocol, ROWS[0], stream=False)
    async with serving(tmp_path, front, ROWS[:1]) as (sim, origin), \
            httpx.AsyncClient() as http:
        refused = await http.post(door_url(protocol, origin), json=body, headers=key("bad"))
        missing = await http.post(door_url(protocol, origin), json=body)
        accepted = await http.post(door_url(protocol, origin), json=body, headers=key(TOKEN))
    for answer in (refused, missing):
        assert answer.status_code == 401
        assert assert_error_body(protocol, answer) == "Invalid or missing API key."
    assert accepted.status_code == 200
    assert len(sim.requests) == 1


async def test_x_api_key_is_a_key_on_every_route(front: str, tmp_path: Path) -> None:
    async with serving(tmp_path, front, ROWS[:1]) as (_sim, origin), \
            httpx.AsyncClient() as http:
        models = await http.get(origin + "/v1/models", headers={"x-api-key": TOKEN})
        refused = await http.get(origin + "/v1/models", headers={"x-api-key": "bad"})
    assert models.status_code == 200
    assert refused.status_code == 401


# -- errors from upstream --------------------------------------------------------------------


def cut_reply(cut_after: int) -> Reply:
    """A long text answer whose connection closes after ``cut_after`` body bytes."""
    return Reply(items=[TextDone(text="A long answer. " * 40)], fragment_size=8,
                 cut_after=cut_after)


@STREAMS
@pytest.mark.parametrize("protocol", DOORS)
async def test_a_cut_upstream_stream_ends_with_the_protocols_error(
    protocol: str, stream: bool, front: str, tmp_path: Path
) -> None:
    """Streamed, the head is out: the stream ends with the protocol's in-stream error, which
    the protocol's own machine reads as an error, never as a clean end. Whole: a 502."""
    async with serving(tmp_path, front, ROWS[:1]) as (sim, origin), \
            httpx.AsyncClient() as http:
        sim.script.append(cut_reply(600))
        answer = await http.post(door_url(protocol, origin), headers=AUTH,
                                 json=request_body(protocol, ROWS[0], stream=stream))
    if not stream:
        assert answer.status_code == 502
        assert "stream ended without" in assert_error_body(protocol, answer)
        return
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/event-stream; charset=utf-8"
    events: list[UniEvent] = []
    with pytest.raises(ProviderStreamError):
        events.extend(adapters.decode(protocol, [answer.content]))
    assert events and all(e.event_type == "delta" for e in events)


@pytest.mark.parametrize("protocol", DOORS)
async def test_an_upstream_that_fails_before_its_first_event_is_an_http_error(
    protocol: str, front: str, tmp_path: Path
) -> None:
    """The head waits for the upstream: a cut before any event is a 502, the provider's 429
    a 429 with its ``Retry-After``, each in the protocol's error body."""
    async with serving(tmp_path, front, ROWS[:1]) as (sim, origin), \
            httpx.AsyncClient() as http:
        sim.script.extend([cut_reply(0), Reply(status=429, retry_after=7)])
        url, body = door_url(protocol, origin), request_body(protocol, ROWS[0], stream=True)
        cut = await http.post(url, json=body, headers=AUTH)
        limited = await http.post(url, json=body, headers=AUTH)
    assert cut.status_code == 502
    assert_error_body(protocol, cut)
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "7"
    assert_error_body(protocol, limited)


@STREAMS
@pytest.mark.parametrize("protocol", DOORS)
async def test_a_value_the_rows_client_refuses_is_a_400_naming_it(
    protocol: str, stream: bool, front: str, tmp_path: Path
) -> None:
    """The door maps ``temperature``; the row's client refuses it for its model before any
    request (as GPT-6 does): a 400 in the protocol's error body, ``param`` naming it."""
    async with Simulator.running() as sim:
        row = {**config(sim, ["openai-responses"])["models"][0], "server_model_id": "gpt",
               "model_id": "gpt-6", "client_type": "openai-official"}
        gate = Gateway({"models": [row], "api_keys": [TOKEN]}, timeouts=RELAXED,
                       max_retries=0, trace_dir=tmp_path / "traces")
        body = request_body(protocol, "gpt", stream=stream, temperature=0.5)
        async with running(gate, front) as origin, httpx.AsyncClient() as http:
            answer = await http.post(door_url(protocol, origin), json=body, headers=AUTH)
    assert answer.status_code == 400
    assert "temperature" in assert_error_body(protocol, answer, "temperature")
    assert sim.requests == []


@pytest.mark.parametrize("protocol", DOORS)
async def test_a_stream_aborted_at_shutdown_ends_with_the_protocols_error(
    protocol: str, front: str, tmp_path: Path
) -> None:
    """``abort_streams`` (graceful shutdown): a door's stream already under way ends with the
    protocol's error, never cleanly; one whose upstream had not answered is a 503."""
    async with Simulator.running() as sim:
        gate = gateway(sim, tmp_path, ROWS[:1])
        sim.script.extend([Reply(items=[TextDone(text="A long answer. " * 40)],
                                 fragment_size=8, stall_at=2000),
                           Reply(stall_before_headers=True)])
        url_body = request_body(protocol, ROWS[0], stream=True)
        waiting: list[httpx.Response] = []
        async with running(gate, front) as origin, httpx.AsyncClient(timeout=10) as http:
            url = door_url(protocol, origin)

            async def unanswered() -> None:
                waiting.append(await http.post(url, json=url_body, headers=AUTH))

            async with http.stream("POST", url, json=url_body, headers=AUTH) as streamed:
                chunks = streamed.aiter_raw()
                first = await anext(chunks)  # the head and the first frames are out
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(unanswered)
                    with anyio.fail_after(5):
                        while len(sim.requests) < 2:
                            await anyio.sleep(0.01)
                    gate.abort_streams("the server is shutting down")
                    body = first + b"".join([chunk async for chunk in chunks])
    assert streamed.status_code == 200
    with pytest.raises(ProviderStreamError):
        list(adapters.decode(protocol, [body]))
    (refused,) = waiting
    assert refused.status_code == 503
    assert "shutting down" in assert_error_body(protocol, refused)


# -- what the doors answer besides ------------------------------------------------------------


@pytest.mark.parametrize("protocol", DOORS)
async def test_ignored_fields_are_named_in_a_header(
    protocol: str, front: str, tmp_path: Path
) -> None:
    """A field the door neither maps nor refuses is ignored and named (08 D73); a name that
    could break the header is percent-encoded."""
    fields = {"metadata": {"a": "b"}, "x-odd\r\nname": 1}
    async with serving(tmp_path, front, ROWS[:1]) as (_sim, origin), \
            httpx.AsyncClient() as http:
        answers = [await http.post(door_url(protocol, origin), headers=AUTH,
                                   json=request_body(protocol, ROWS[0], stream=stream, **fields))
                   for stream in (True, False)]
    for answer in answers:
        assert answer.status_code == 200
        assert answer.headers["x-mmsp-ignored-fields"] == "metadata, x-odd%0D%0Aname"


@pytest.mark.parametrize("protocol", DOORS)
async def test_every_response_gets_its_own_id_in_the_protocols_shape(
    protocol: str, tmp_path: Path
) -> None:
    """The gateway gives each response, streamed or whole, a fresh id starting with the
    door's ``id_prefix`` (the pure writers make none): no two callers share one."""
    prefix = door_of(protocol).id_prefix
    fresh = re.compile(re.escape(prefix) + "[0-9a-f]{24}")
    async with serving(tmp_path, "h11", ROWS[:1]) as (_sim, origin), \
            httpx.AsyncClient() as http:
        answers = [await http.post(door_url(protocol, origin), headers=AUTH,
                                   json=request_body(protocol, ROWS[0], stream=stream))
                   for stream in (True, True, False, False)]
    ids = []
    for answer in answers:
        assert answer.status_code == 200
        (found,) = set(fresh.findall(answer.text))  # one id, wherever the protocol repeats it
        ids.append(found)
    assert [answer.json()["id"] for answer in answers[2:]] == ids[2:]
    assert len(set(ids)) == len(ids)


def test_the_ignored_fields_header_is_bounded() -> None:
    names = [f"field_{index}" for index in range(10_000)]
    ((name, value),) = ignored_fields_header(names)
    assert name == "x-mmsp-ignored-fields"
    assert len(value) <= 1024 + len(", ...")
    assert value.startswith("field_0, field_1, ") and value.endswith(", ...")
    assert ignored_fields_header([]) == ()


@pytest.mark.parametrize(("error", "status"), [
    (UnsupportedParameterError("openai-chat", "n"), 400),
    (InvalidMessageError("openai-chat"), 400),
    (ProviderHTTPError("anthropic-official", 429, retry_after=3), 429),
    (ProviderHTTPError("anthropic-official", 529), 529),
    (ProviderHTTPError("anthropic-official", 404), 404),
    (ProviderHTTPError("anthropic-official", 401), 502),  # the row's own key
    (ProviderHTTPError("anthropic-official", 403), 502),
    (UpstreamError("mmsp", status=None), 502),
    (StreamTimeoutError("openai-chat", "first_event", 10.0), 504),
    (AbortedError("openai-chat", "the server is shutting down"), 503),
    (IncompleteStreamError("openai-chat", ("usage",)), 502),
    (ProviderConnectionError("openai-chat", "refused"), 502),
])
def test_the_status_of_an_error_before_the_head(error: MMSPError, status: int) -> None:
    assert error_status(error) == status


async def test_models_are_listed_in_openai_s_shape_or_anthropic_s(
    front: str, tmp_path: Path
) -> None:
    """Both SDKs list the served models; so does the mmsp client (``data[].id``)."""
    import anthropic
    import openai

    async with serving(tmp_path, front) as (_sim, origin), httpx.AsyncClient() as http:
        async with openai.AsyncOpenAI(base_url=origin + "/v1", api_key=TOKEN,
                                      max_retries=0) as openai_sdk:
            listed_openai = [model.id async for model in openai_sdk.models.list()]
        async with anthropic.AsyncAnthropic(base_url=origin, api_key=TOKEN,
                                            max_retries=0) as anthropic_sdk:
            listed_anthropic = [model.id async for model in anthropic_sdk.models.list()]
        mmsp = AutoLLMClient(ROWS[0], client_type="mmsp", base_url=origin + "/v1",
                             api_key=TOKEN)
        async with mmsp:
            listed_mmsp = await mmsp.list_models()
        shaped = (await http.get(origin + "/v1/models",
                                 headers={**AUTH, "anthropic-version": "2023-06-01"})).json()
    assert listed_openai == listed_anthropic == listed_mmsp == ROWS
    assert shaped["has_more"] is False
    assert (shaped["first_id"], shaped["last_id"]) == (ROWS[0], ROWS[-1])
    assert {entry["type"] for entry in shaped["data"]} == {"model"}
