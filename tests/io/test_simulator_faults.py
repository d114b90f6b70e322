"""The simulator's faults (``mmsp_io.simulator.faults``) against ``AutoLLMClient``, on every
protocol the simulator serves, under asyncio and trio: each gives the typed error the spec
names (03, 08 D19, D22, D4), or the complete stream where it is harmless (issue 26 item 3).

A fault that makes no sense for a protocol's framing is skipped, saying why; what the framing
is comes from the protocol's record (its dialect's content type and ping, its binary framing),
never from its name.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import httpx
import pytest
from httpfakes import clean_environment

import adapters
from mmsp_core import NEED_DATA
from mmsp_core.model import (
    DoneItem,
    EmbeddingDone,
    FinishReason,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    UniEvent,
    UniMessage,
    UsageMetadata,
)
from mmsp_core.testing import assert_stream_grammar
from mmsp_io import (
    AutoLLMClient,
    IncompleteStreamError,
    MMSPError,
    ProviderHTTPError,
    ProviderStreamError,
    StreamTimeoutError,
    Timeouts,
    UpstreamError,
)
from mmsp_io.simulator import RecordedRequest, Reply, Simulator, faults

__all__ = ["clean_environment"]

pytestmark = pytest.mark.anyio

#: Every protocol the simulator serves: the providers', the gateway's and the cloud routes'.
PROTOCOLS = [name for name, record in adapters.PROTOCOLS.items()
             if record.traits.dialect is not None]
#: Text with characters of two, three and four bytes in UTF-8.
TEXT = "Grüße aus Tōkyō 🌧 — 東京"
USAGE = UsageMetadata(cached_tokens=0, prompt_tokens=12, response_tokens=8)
#: Short limits for the faults that stall: a timeout test checks the typed error, never a
#: duration (08 D80).
SHORT = Timeouts(connect=5, first_event=0.3, idle=0.3)
RELAXED = Timeouts(connect=5, first_event=10, idle=10)
#: How long a stall lasts: longer than ``SHORT``; the client leaves first.
STALL = 30.0


def dialect(protocol: str) -> adapters.SimulatorDialect:
    found = adapters.PROTOCOLS[protocol].traits.dialect
    assert found is not None
    return found


def framing_of(protocol: str) -> str:
    """``"sse"``, ``"frames"`` (a binary framing) or ``"body"`` (one JSON document)."""
    if adapters.PROTOCOLS[protocol].traits.framing is not None:
        return "frames"
    return "sse" if dialect(protocol).content_type.startswith("text/event-stream") else "body"


def items_for(protocol: str) -> tuple[list[DoneItem], FinishReason]:
    """What the simulator answers: a vector on an embedding wire, else thinking, text and a
    tool call, all holding multi-byte characters."""
    if framing_of(protocol) == "body":
        return [EmbeddingDone((0.5, -0.25, 0.125))], FinishReason.STOP
    call = ToolCallDone(name="get_weather", tool_call_id="call_1", arguments={"city": "Zürich"})
    return [ThinkingDone(thinking=TEXT), TextDone(text=TEXT), call], FinishReason.TOOL_CALL


def reply(protocol: str, fault: faults.Fault | None) -> Reply:
    items, finish = items_for(protocol)
    return Reply(items=items, usage=USAGE, finish_reason=finish, fault=fault)


def after(protocol: str) -> int:
    """Where a fault placed "after some events" goes: after the first event, or at the start
    of a one-body answer (which has no event inside it)."""
    return 0 if framing_of(protocol) == "body" else 1


def has_terminal_event(protocol: str) -> bool:
    """Whether the protocol's stream ends at a terminal event (08 D56), rather than at the end
    of the body: its pipeline says it finished before the end of input."""
    items, finish = items_for(protocol)
    body = adapters.render(protocol, items, USAGE, finish, model="sim-model")
    pipeline = adapters.new_pipeline(protocol, clock=lambda: 0)
    pipeline.receive_data(body)
    while pipeline.next_event() is not NEED_DATA:
        pass
    return pipeline.finished


@asynccontextmanager
async def client_for(
    sim: Simulator, protocol: str, monkeypatch: pytest.MonkeyPatch, timeouts: Timeouts
) -> AsyncIterator[AutoLLMClient]:
    """A client of ``protocol`` pointed at ``sim``, which never retries (a retry would take
    the simulator's next, fault-free answer)."""
    spec, _, _ = adapters.resolve(protocol)
    served = dialect(protocol)
    options: dict[str, Any] = {"api_key": sim.api_key, "max_retries": 0, "timeouts": timeouts,
                               "client_type": spec.client_type}
    if served.endpoint_variable is not None:  # a cloud route (Bedrock, 08 D72)
        monkeypatch.setenv(served.endpoint_variable, sim.url)
        options["base_url"] = "bedrock://us-east-1"
    else:
        options["base_url"] = sim.base_url(protocol)
    async with AutoLLMClient(served.demo_model, **options) as client:
        yield client


async def outcome(
    protocol: str, fault: faults.Fault | None, monkeypatch: pytest.MonkeyPatch,
    timeouts: Timeouts = RELAXED,
) -> tuple[list[UniEvent], MMSPError | None]:
    """The public events and the error of one call answered with ``fault``."""
    events: list[UniEvent] = []
    async with (
        Simulator.running(reply(protocol, fault)) as sim,
        client_for(sim, protocol, monkeypatch, timeouts) as client,
    ):
        try:
            stream = client.streaming_response([UniMessage.user("Weather in Zürich?")])
            async with aclosing(stream) as received:
                async for event in received:
                    events.append(event)
        except MMSPError as exc:
            return events, exc
    return events, None


def done_items(events: list[UniEvent]) -> list[Any]:
    return [item for event in events for item in event.content_items
            if item.type.endswith(".done")]


async def assert_harmless(
    protocol: str, fault: faults.Fault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fault`` changes nothing the caller sees: the same items, usage and finish reason as
    without it, in a stream that keeps the grammar."""
    events, error = await outcome(protocol, fault, monkeypatch)
    expected, expected_error = await outcome(protocol, None, monkeypatch)
    assert error is None and expected_error is None, (error, expected_error)
    assert_stream_grammar(events)
    assert done_items(events) == done_items(expected)
    assert (events[-1].usage_metadata, events[-1].finish_reason) == (
        expected[-1].usage_metadata, expected[-1].finish_reason)


def assert_incomplete(error: MMSPError | None) -> None:
    """The stream broke mid-body: ``IncompleteStreamError`` chained from the transport's
    error (03 §2, 08 D19)."""
    assert isinstance(error, IncompleteStreamError), error
    assert isinstance(error.__cause__, httpx.TransportError), error.__cause__


# -- faults that break the stream ------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_cut_after_an_event_is_an_incomplete_stream(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, error = await outcome(protocol, faults.cut(after_events=after(protocol)), monkeypatch)
    assert_incomplete(error)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_cut_at_a_byte_is_an_incomplete_stream(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, error = await outcome(protocol, faults.cut(at_byte=10), monkeypatch)
    assert_incomplete(error)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_reset_is_an_incomplete_stream_from_the_transports_error(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, error = await outcome(protocol, faults.reset(after_events=after(protocol)), monkeypatch)
    assert_incomplete(error)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_error_event_is_the_providers_stream_error(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """08 D4: a provider's in-stream error is ``ProviderStreamError``; through a gateway (a
    protocol whose errors are the gateway's) its ``UpstreamError`` (03 §5)."""
    fault = faults.error_event(after_events=after(protocol))
    _, error = await outcome(protocol, fault, monkeypatch)
    if adapters.PROTOCOLS[protocol].traits.upstream_errors:
        assert isinstance(error, UpstreamError), error
    else:
        assert isinstance(error, ProviderStreamError), error


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_stall_longer_than_the_timeouts_is_a_stream_timeout(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fault = faults.stall(STALL, after_events=after(protocol))
    _, error = await outcome(protocol, fault, monkeypatch, SHORT)
    assert isinstance(error, StreamTimeoutError), error


# -- faults that are harmless ----------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_every_multibyte_character_split_across_writes_is_harmless(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    items, finish = items_for(protocol)
    body = adapters.render(protocol, items, USAGE, finish, model="sim-model")
    if not any(byte >= 0x80 for byte in body):
        why = ("its text travels base64-encoded inside binary frames"
               if framing_of(protocol) == "frames" else "its answer holds only numbers")
        pytest.skip(f"{protocol} sends no multi-byte character on the wire: {why}")
    await assert_harmless(protocol, faults.split_characters(), monkeypatch)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_keepalive_flood_is_harmless(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if framing_of(protocol) != "sse":
        pytest.skip(f"{protocol} is not an SSE stream: it has no comment lines")
    await assert_harmless(protocol, faults.keepalive_flood(300), monkeypatch)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_ping_flood_is_harmless(protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if dialect(protocol).ping is None:
        pytest.skip(f"{protocol} has no ping event")
    monkeypatch.setenv("MMSP_DEBUG", "1")  # strict mode: the machines know their pings
    await assert_harmless(protocol, faults.ping_flood(300), monkeypatch)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_trickle_of_one_byte_per_write_is_harmless(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await assert_harmless(protocol, faults.trickle(), monkeypatch)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_socket_held_open_after_the_terminal_event_is_harmless(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """08 D56: the client stops at the terminal event. A protocol without one ends at the end
    of the body, which never comes: the idle timeout ends the call; a one-body answer has its
    length, so holding the socket after it is HTTP's own keep-alive."""
    if has_terminal_event(protocol) or framing_of(protocol) == "body":
        await assert_harmless(protocol, faults.hold_open(), monkeypatch)
        return
    events, error = await outcome(protocol, faults.hold_open(), monkeypatch, SHORT)
    assert isinstance(error, StreamTimeoutError), error
    assert done_items(events)  # everything the body held arrived before the timeout


# -- the fault values ------------------------------------------------------------------------


async def test_a_fault_that_makes_no_sense_for_the_framing_is_a_500_naming_it() -> None:
    no_ping = next(name for name in PROTOCOLS if dialect(name).ping is None
                   and not adapters.PROTOCOLS[name].traits.upstream_errors)
    spec, _, _ = adapters.resolve(no_ping)
    async with (
        Simulator.running(reply(no_ping, faults.ping_flood(3))) as sim,
        AutoLLMClient(dialect(no_ping).demo_model, api_key=sim.api_key, max_retries=0,
                      base_url=sim.base_url(no_ping), client_type=spec.client_type) as client,
    ):
        with pytest.raises(ProviderHTTPError) as caught:
            async for _ in client.streaming_response([UniMessage.user("hi")]):
                pass
    assert caught.value.status == 500
    assert f"{no_ping} has no ping event" in str(caught.value)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: faults.cut(), "exactly one of"),
        (lambda: faults.cut(after_events=1, at_byte=3), "exactly one of"),
        (lambda: faults.cut(at_byte=-1), "at least 0"),
        (lambda: faults.keepalive_flood(-1), "at least 0"),
        (lambda: faults.ping_flood(-1), "at least 0"),
        (lambda: faults.stall(-0.5), "at least 0"),
        (lambda: faults.stall(1, after_events=-1), "after_events must be at least 0"),
        (lambda: faults.error_event(after_events=-1), "after_events must be at least 0"),
        (lambda: faults.reset(after_events=-2), "after_events must be at least 0"),
        (lambda: faults.cut(after_events=-1), "after_events must be at least 0"),
    ],
)
def test_fault_arguments_are_checked(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_a_one_body_answer_has_a_length_unless_the_fault_hangs_up() -> None:
    assert faults.declared_length([b"ab", faults.Pause(1.0), b"c", faults.Hold()]) == 3
    assert faults.declared_length([b"ab", faults.Hangup()]) is None


# -- faults on any answer --------------------------------------------------------------------

#: A recorded Anthropic-shaped body of three events (sent as it is, never parsed).
RECORDED = (b'event: message_start\ndata: {"type":"message_start"}\n\n'
            b'event: ping\ndata: {"type":"ping"}\n\n'
            b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
ANTHROPIC = {"x-api-key": "sk-sim", "anthropic-version": "2023-06-01"}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


async def test_a_fault_shapes_a_recorded_body_as_it_does_a_rendered_one() -> None:
    events = RECORDED.split(b"\n\n")[:-1]
    async with Simulator.running() as sim, httpx.AsyncClient() as http:
        sim.script.extend([Reply(body=RECORDED, fault=faults.trickle()),
                           Reply(body=RECORDED, fault=faults.keepalive_flood(2)),
                           Reply(body=RECORDED, fault=faults.cut(after_events=2))])
        trickled = await http.post(sim.url + "/v1/messages", headers=ANTHROPIC, json=CHAT)
        flooded = await http.post(sim.url + "/v1/messages", headers=ANTHROPIC, json=CHAT)
        received = b""
        with pytest.raises(httpx.RemoteProtocolError):
            async with http.stream("POST", sim.url + "/v1/messages", headers=ANTHROPIC,
                                   json=CHAT) as cut:
                async for chunk in cut.aiter_raw():
                    received += chunk
    assert trickled.content == RECORDED
    assert flooded.content == b"".join(faults.KEEPALIVE_COMMENT * 2 + event + b"\n\n"
                                       for event in events)
    assert received == events[0] + b"\n\n" + events[1] + b"\n\n"


async def test_a_behaviour_function_may_answer_with_a_fault(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def answer(request: RecordedRequest) -> Reply:
        return Reply.text(f"model {request.json['model']}", fault=faults.reset(after_events=1))

    async with (
        Simulator.running(answer) as sim,
        client_for(sim, "openai-chat", monkeypatch, RELAXED) as client,
    ):
        with pytest.raises(IncompleteStreamError):
            async for _ in client.streaming_response([UniMessage.user("hi")]):
                pass
