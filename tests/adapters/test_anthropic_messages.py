"""The Anthropic Messages machine and renderer (spec 06 §1, 02, 08 D4, D33, D34, D45, D49, D51).

Recorded bodies run through ``adapters.testing.check_protocol`` (``test_check_protocol.py``)
and, per client type, through ``check_fixture``; hand-written bodies run whole, byte by byte
and in random chunkings (``outcome_every_way``), which must all agree.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from harness import decode_every_way, fixture_cases
from hypothesis import given
from hypothesis import strategies as st

import adapters
from adapters.anthropic_messages import AnthropicMessagesMachine
from adapters.anthropic_messages.machine import MAX_OPEN_BLOCKS, SKIPPED_BLOCK_TYPES
from adapters.anthropic_messages.render import normalize
from mmsp_core import (
    NEED_DATA,
    EmptyResponseError,
    IncompleteStreamError,
    MalformedEventError,
    ProviderStreamError,
    StreamLimitError,
    StreamPipeline,
    ToolCallArgumentParseError,
    UnknownEventError,
    to_wire,
)
from mmsp_core.items import ClientEvent
from mmsp_core.kinds import THINKING, TOOL_CALL, Fragment
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolCallDelta,
    ToolCallDone,
    UniEvent,
    UsageMetadata,
)
from mmsp_core.sse import SSEEvent
from mmsp_core.testing import assert_stream_grammar, chunkings, outcome, run
from mmsp_core.testing.strategies import chunked, done_items, finish_reasons, json_objects, usage

SOURCE = "ant-messages"
PROFILE = adapters.CLIENTS[SOURCE].profile


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def frame(name: str, payload: Any) -> bytes:
    """One SSE event as the API frames it."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"event: {name}\ndata: {data}\n\n".encode()


def message_start(**usage_fields: int) -> bytes:
    usage_obj = usage_fields or {"input_tokens": 10, "output_tokens": 1}
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "usage": usage_obj,
    }
    return frame("message_start", {"type": "message_start", "message": message})


def block_start(index: int, block: dict[str, Any]) -> bytes:
    return frame(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def block_delta(index: int, delta: dict[str, Any]) -> bytes:
    return frame(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )


def block_stop(index: int) -> bytes:
    return frame("content_block_stop", {"type": "content_block_stop", "index": index})


def text_block(index: int, *parts: str) -> bytes:
    deltas = b"".join(block_delta(index, {"type": "text_delta", "text": p}) for p in parts)
    return block_start(index, {"type": "text", "text": ""}) + deltas + block_stop(index)


def tool_block(index: int, name: str, call_id: str, *parts: str, stop: bool = True) -> bytes:
    body = block_start(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}})
    for part in parts:
        body += block_delta(index, {"type": "input_json_delta", "partial_json": part})
    return body + (block_stop(index) if stop else b"")


def message_delta(stop_reason: str | None, **usage_fields: Any) -> bytes:
    payload: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
    }
    payload["usage"] = usage_fields or {"output_tokens": 5}
    return frame("message_delta", payload)


MESSAGE_STOP = frame("message_stop", {"type": "message_stop"})
PING = frame("ping", '{"type": "ping"}')


def finished(*blocks: bytes, stop_reason: str = "end_turn") -> bytes:
    return message_start() + b"".join(blocks) + message_delta(stop_reason) + MESSAGE_STOP


def _decode(body: bytes, chunks: list[bytes], **options: Any) -> tuple[list[UniEvent], Any]:
    ticks = iter(range(1 << 30))
    pipeline = adapters.new_pipeline(SOURCE, clock=lambda: next(ticks), **options)
    return run(pipeline, chunks)


def done(events: list[UniEvent]) -> list[dict[str, Any]]:
    return [
        to_wire(e.content_items[0])
        for e in events
        if e.event_type == "delta" and e.content_items[0].type.endswith(".done")
    ]


def stop_of(events: list[UniEvent]) -> UniEvent:
    assert_stream_grammar(events)
    return events[-1]


# --------------------------------------------------------------------------------------------
# Recorded bodies
# --------------------------------------------------------------------------------------------

CASES = fixture_cases("anthropic-messages")


def test_every_recorded_body_has_an_expected_file() -> None:
    assert len(CASES) == 15
    for case in CASES:
        assert case.with_suffix(".expected.json").exists(), case.name


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_both_clients_read_the_same_stream(case: Path) -> None:
    """One machine serves both client types (08 D32): only the client name differs."""
    body = case.read_bytes()
    ours, our_error = _decode(body, [body])
    ticks = iter(range(1 << 30))
    official = adapters.new_pipeline("anthropic-official", clock=lambda: next(ticks))
    theirs, their_error = run(official, [body])
    assert [to_wire(e) for e in theirs] == [to_wire(e) for e in ours]
    assert type(their_error) is type(our_error)
    if their_error is not None:
        assert their_error.client == "anthropic-official"  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------
# The machine's client stream (02 §2.1)
# --------------------------------------------------------------------------------------------


def _machine_events(body: bytes, *, strict: bool = False) -> list[list[ClientEvent]]:
    machine = AnthropicMessagesMachine(SOURCE, PROFILE, strict=strict, base_url=None)
    out = []
    for block in body.split(b"\n\n")[:-1]:
        name_line, data_line = block.decode().split("\n")
        out.append(machine.next_events(SSEEvent(name_line[7:], data_line[6:])))
    return out


def test_one_client_event_per_wire_event() -> None:
    body = finished(PING, tool_block(0, "f", "toolu_1", "", '{"a":', "1}"))
    per_event = _machine_events(body)
    assert all(len(events) == 1 for events in per_event)
    events = [e for [e] in per_event]
    start, ping, tool_start, empty_args, args1, args2, stop, delta, msg_stop = events
    assert start == UniEvent("stop", usage_metadata=UsageMetadata(None, 10, None, None))
    assert ping == UniEvent("delta")
    assert tool_start.content_items == (ToolCallDelta("f", "toolu_1", "", {"item_id": "0"}),)
    # Argument deltas are fragments, each standing for the delta it names (08 D65).
    assert args1 == Fragment(TOOL_CALL, '{"a":', "0")
    assert args1.item() == ToolCallDelta("", "", '{"a":', {"item_id": "0"})
    assert args2 == Fragment(TOOL_CALL, "1}", "0")
    assert empty_args == Fragment(TOOL_CALL, "", "0")
    assert stop == UniEvent("delta")
    assert delta == UniEvent(
        "stop", usage_metadata=UsageMetadata(None, None, None, 5), finish_reason=FinishReason.STOP
    )
    assert msg_stop == UniEvent("delta")


def test_thinking_items_carry_the_block_index() -> None:
    body = finished(
        block_start(3, {"type": "thinking", "thinking": "", "signature": ""}),
        block_delta(3, {"type": "thinking_delta", "thinking": "hm"}),
        block_delta(3, {"type": "signature_delta", "signature": "SIG"}),
        block_start(4, {"type": "redacted_thinking", "data": "DATA"}),
    )
    events = [e for [e] in _machine_events(body)]
    assert events[1] == UniEvent("delta")
    assert events[2] == Fragment(THINKING, "hm", "3")
    assert events[2].item() == ThinkingDelta("hm", {"item_id": "3"})
    assert events[3].content_items == (ThinkingDelta("", {"item_id": "3", "signature": "SIG"}),)
    assert events[4].content_items == (
        ThinkingDelta("_REDACTED_THINKING", {"item_id": "4", "signature": "DATA"}),
    )


def test_finish_does_not_decide_completeness() -> None:
    machine = AnthropicMessagesMachine(SOURCE, PROFILE, strict=True, base_url=None)
    assert machine.finish() == []


def test_a_failed_machine_refuses_more_input() -> None:
    machine = AnthropicMessagesMachine(SOURCE, PROFILE, strict=False, base_url=None)
    with pytest.raises(MalformedEventError):
        machine.next_events(SSEEvent("message_start", "{"))
    with pytest.raises(RuntimeError):
        machine.next_events(SSEEvent("ping", "{}"))


@pytest.mark.parametrize("strict", [False, True])
def test_skipped_events_are_skipped_whatever_their_data(strict: bool) -> None:
    """Only the handlers that read an event's data parse it (08 D51): a ping without JSON is
    still a ping, and an unknown or out-of-place event is unknown, not malformed."""
    machine = AnthropicMessagesMachine(SOURCE, PROFILE, strict=strict, base_url=None)
    assert machine.next_events(SSEEvent("ping", "")) == [UniEvent("delta")]
    assert machine.next_events(SSEEvent("ping", "not json")) == [UniEvent("delta")]
    for event, data in [("brand_new", "xx"), ("content_block_delta", "[[[")]:
        fresh = AnthropicMessagesMachine(SOURCE, PROFILE, strict=strict, base_url=None)
        if strict:
            with pytest.raises(UnknownEventError):
                fresh.next_events(SSEEvent(event, data))
        else:
            assert fresh.next_events(SSEEvent(event, data)) == [UniEvent("delta")]


def test_message_stop_finishes_the_machine() -> None:
    machine = AnthropicMessagesMachine(SOURCE, PROFILE, strict=True, base_url=None)
    for block in finished(text_block(0, "hi")).split(b"\n\n")[:-1]:
        assert not machine.finished
        name_line, data_line = block.decode().split("\n")
        machine.next_events(SSEEvent(name_line[7:], data_line[6:]))
    assert machine.finished
    with pytest.raises(UnknownEventError):
        machine.next_events(SSEEvent("message_start", "{}"))


# --------------------------------------------------------------------------------------------
# Stream endings (02 §7, 08 D4, D33)
# --------------------------------------------------------------------------------------------


def test_truncated_stream_closes_the_text_then_raises_incomplete() -> None:
    body = message_start() + text_block(0, "Hel", "lo")
    cut = body + b'event: message_delta\ndata: {"type":'  # cut inside the next event
    events, error = decode_every_way(SOURCE, cut)
    assert done(events) == [{"type": "text.done", "text": "Hello"}]
    assert isinstance(error, IncompleteStreamError)
    assert error.missing == ("finish_reason",)
    assert error.usage_metadata == UsageMetadata(None, 10, None, None)
    assert error.retryable


def test_stream_cut_inside_a_tool_call_is_incomplete_not_a_parse_error() -> None:
    body = (
        message_start() + text_block(0, "Let me") + tool_block(1, "f", "t1", '{"a": "x', stop=False)
    )
    events, error = decode_every_way(SOURCE, body)
    assert done(events) == [{"type": "text.done", "text": "Let me"}]
    assert isinstance(error, IncompleteStreamError)
    assert error.missing == ("finish_reason",)


def test_stream_without_any_usage_is_incomplete() -> None:
    start = {"type": "message_start", "message": {"id": "m", "content": []}}
    body = frame("message_start", start) + text_block(0, "hi")
    body += frame("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}})
    _, error = decode_every_way(SOURCE, body + MESSAGE_STOP)
    assert isinstance(error, IncompleteStreamError)
    assert error.missing == ("usage_metadata",)
    assert error.finish_reason == "stop"


def test_only_thinking_is_an_empty_response() -> None:
    thinking = (
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""})
        + block_delta(0, {"type": "thinking_delta", "thinking": "Let me think"})
        + block_delta(0, {"type": "signature_delta", "signature": "S"})
        + block_stop(0)
    )
    events, error = decode_every_way(SOURCE, finished(thinking))
    assert done(events) == [
        {"type": "thinking.done", "thinking": "Let me think", "fidelity": {"signature": "S"}}
    ]
    assert isinstance(error, EmptyResponseError)
    assert error.finish_reason == "stop"
    assert error.usage_metadata == UsageMetadata(None, 10, None, 5)


@pytest.mark.parametrize("arguments", ['{"a": ', "[1, 2]", '"text"'])
def test_bad_tool_arguments_at_message_end(arguments: str) -> None:
    body = finished(
        text_block(0, "ok"), tool_block(1, "f", "t1", arguments), stop_reason="tool_use"
    )
    events, error = decode_every_way(SOURCE, body)
    assert done(events) == [{"type": "text.done", "text": "ok"}]
    assert isinstance(error, ToolCallArgumentParseError)
    assert (error.tool_name, error.tool_call_id) == ("f", "t1")
    assert error.raw_arguments_length == len(arguments)


def test_in_stream_error_carries_the_usage_so_far() -> None:
    error_event = frame(
        "error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    body = (
        message_start(input_tokens=7, cache_read_input_tokens=3)
        + block_start(0, {"type": "text", "text": ""})
        + block_delta(0, {"type": "text_delta", "text": "Hi"})
        + error_event
        + MESSAGE_STOP
    )
    events, error = decode_every_way(SOURCE, body)
    assert [to_wire(e.content_items[0]) for e in events] == [{"type": "text.delta", "text": "Hi"}]
    assert isinstance(error, ProviderStreamError)
    assert (error.error_type, error.provider_message) == ("overloaded_error", "Overloaded")
    assert error.usage_metadata == UsageMetadata(3, 7, None, None)
    assert error.client == SOURCE
    assert error.retryable


def test_error_before_anything_has_no_usage_and_may_not_be_retryable() -> None:
    body = frame(
        "error", {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
    )
    events, error = decode_every_way(SOURCE, body)
    assert events == []
    assert isinstance(error, ProviderStreamError)
    assert error.usage_metadata is None
    assert not error.retryable


def test_error_with_a_bare_message() -> None:
    _, error = decode_every_way(SOURCE, message_start() + frame("error", {"error": "gateway down"}))
    assert isinstance(error, ProviderStreamError)
    assert (error.error_type, error.provider_message) == (None, "gateway down")


# --------------------------------------------------------------------------------------------
# Tool calls, skipped blocks, unknown events (08 D34, D45, D51)
# --------------------------------------------------------------------------------------------


def test_parallel_tool_calls() -> None:
    body = finished(
        tool_block(0, "get_weather", "toolu_a", "", '{"city": "Par', 'is", "days": [1, 2]}'),
        tool_block(1, "get_time", "toolu_b", "", '{"tz": {"name": "CET"}}'),
        tool_block(2, "noop", "toolu_c", ""),
        stop_reason="tool_use",
    )
    events, error = decode_every_way(SOURCE, body)
    assert error is None
    assert done(events) == [
        {
            "type": "tool_call.done",
            "name": "get_weather",
            "tool_call_id": "toolu_a",
            "arguments": {"city": "Paris", "days": [1, 2]},
        },
        {
            "type": "tool_call.done",
            "name": "get_time",
            "tool_call_id": "toolu_b",
            "arguments": {"tz": {"name": "CET"}},
        },
        {"type": "tool_call.done", "name": "noop", "tool_call_id": "toolu_c", "arguments": {}},
    ]
    assert stop_of(events).finish_reason == "tool_call"


def test_tool_call_without_any_argument_fragment_is_an_empty_object() -> None:
    events, error = decode_every_way(
        SOURCE, finished(tool_block(0, "f", "t1"), stop_reason="tool_use")
    )
    assert error is None
    assert done(events) == [
        {"type": "tool_call.done", "name": "f", "tool_call_id": "t1", "arguments": {}}
    ]


SERVER_BLOCKS = (
    block_start(
        1, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    )
    + block_delta(1, {"type": "input_json_delta", "partial_json": '{"query": "x"}'})
    + block_stop(1)
    + block_start(2, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []})
    + block_stop(2)
    + block_start(3, {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "m", "input": {}})
    + block_delta(3, {"type": "input_json_delta", "partial_json": "{}"})
    + block_stop(3)
    + block_start(4, {"type": "compaction", "content": None})
    + block_delta(4, {"type": "compaction_delta", "content": "summary"})
    + block_stop(4)
)


@pytest.mark.parametrize("strict", [False, True])
def test_server_tool_blocks_are_skipped_in_both_modes(strict: bool) -> None:
    body = finished(text_block(0, "Searching."), SERVER_BLOCKS, text_block(5, "Found it."))
    events, error = decode_every_way(SOURCE, body, strict=strict)
    assert error is None
    assert done(events) == [
        {"type": "text.done", "text": "Searching."},
        {"type": "text.done", "text": "Found it."},
    ]


def test_the_skipped_block_list_names_the_recorded_server_blocks() -> None:
    recorded = {
        "server_tool_use",
        "web_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "bash_code_execution_tool_result",
        "tool_search_tool_result",
        "advisor_tool_result",
        "compaction",
    }
    assert recorded <= SKIPPED_BLOCK_TYPES


UNKNOWN_BLOCK = (
    block_start(1, {"type": "hologram", "payload": 1})
    + block_delta(1, {"type": "text_delta", "text": "not ours"})
    + block_stop(1)
)


def test_unknown_block_type_is_skipped_with_its_deltas() -> None:
    events, error = decode_every_way(SOURCE, finished(text_block(0, "a"), UNKNOWN_BLOCK))
    assert error is None
    assert done(events) == [{"type": "text.done", "text": "a"}]


def test_unknown_block_type_raises_in_strict_mode() -> None:
    events, error = decode_every_way(
        SOURCE, finished(text_block(0, "a"), UNKNOWN_BLOCK), strict=True
    )
    assert isinstance(error, UnknownEventError)
    assert "hologram" in error.event
    assert [to_wire(e.content_items[0]) for e in events] == [{"type": "text.delta", "text": "a"}]


@pytest.mark.parametrize("strict", [False, True])
def test_unknown_delta_types_and_citations_are_skipped_in_both_modes(strict: bool) -> None:
    block = (
        block_start(0, {"type": "text", "text": ""})
        + block_delta(0, {"type": "text_delta", "text": "Paris"})
        + block_delta(0, {"type": "citations_delta", "citation": {"type": "web_search_result"}})
        + block_delta(0, {"type": "sparkle_delta", "x": 1})
        + block_delta(0, {"type": "text_delta", "text": " is big"})
        + block_stop(0)
    )
    events, error = decode_every_way(SOURCE, finished(block), strict=strict)
    assert error is None
    assert done(events) == [{"type": "text.done", "text": "Paris is big"}]


@pytest.mark.parametrize("strict", [False, True])
def test_pings_and_sdk_helper_names_are_skipped_everywhere(strict: bool) -> None:
    helper = frame("text", {"type": "text", "text": "x", "snapshot": "x"})
    body = PING + message_start() + PING + helper + text_block(0, "hi") + PING
    body += message_delta("end_turn") + MESSAGE_STOP + PING
    events, error = decode_every_way(SOURCE, body, strict=strict)
    assert error is None
    assert done(events) == [{"type": "text.done", "text": "hi"}]


OUT_OF_PLACE = {
    "delta before message_start": text_block(0, "early") + finished(text_block(1, "ok")),
    "delta of a block never opened": finished(
        text_block(0, "ok"), block_delta(7, {"type": "text_delta", "text": "stray"})
    ),
    "stop of a block never opened": finished(text_block(0, "ok"), block_stop(9)),
    "block index opened twice": finished(
        block_start(0, {"type": "text", "text": ""}),
        block_delta(0, {"type": "text_delta", "text": "ok"}),
        block_start(0, {"type": "tool_use", "id": "t", "name": "f", "input": {}}),
    ),
    "text delta inside a tool call": finished(
        text_block(0, "ok"),
        tool_block(1, "f", "t1", "{}", stop=False)
        + block_delta(1, {"type": "text_delta", "text": "stray"})
        + block_stop(1),
        stop_reason="tool_use",
    ),
}

#: What follows ``message_stop`` is ignored by the pipeline in both modes (08 D56).
AFTER_MESSAGE_STOP = {
    "event after message_stop": text_block(1, "late"),
    "second message_start": message_start(),
    "a second message": finished(text_block(0, "late")),
    "an error event": frame("error", {"type": "error", "error": {"type": "x", "message": "m"}}),
    "not json, unknown": frame("content_block_delta", "{late") + frame("brand_new", "late"),
}


@pytest.mark.parametrize("body", OUT_OF_PLACE.values(), ids=OUT_OF_PLACE.keys())
def test_known_events_out_of_place_are_skipped(body: bytes) -> None:
    events, error = decode_every_way(SOURCE, body)
    assert error is None
    assert "stray" not in json.dumps(done(events)) and "late" not in json.dumps(done(events))
    assert {"type": "text.done", "text": "ok"} in done(events)


@pytest.mark.parametrize("body", OUT_OF_PLACE.values(), ids=OUT_OF_PLACE.keys())
def test_known_events_out_of_place_raise_in_strict_mode(body: bytes) -> None:
    _, error = decode_every_way(SOURCE, body, strict=True)
    assert isinstance(error, UnknownEventError)


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("tail", AFTER_MESSAGE_STOP.values(), ids=AFTER_MESSAGE_STOP.keys())
def test_whatever_follows_message_stop_is_ignored_in_both_modes(tail: bytes, strict: bool) -> None:
    """08 D56 (replacing D45 after the terminal event): the answer is the one that ends at
    ``message_stop``, however the bytes were read."""
    answer = finished(text_block(0, "ok"))
    expected = decode_every_way(SOURCE, answer, strict=strict)
    assert expected[1] is None
    events, error = decode_every_way(SOURCE, answer + tail, strict=strict)
    assert error is None
    assert outcome(events, error) == outcome(*expected)


@pytest.mark.parametrize(
    "bad",
    [
        frame("content_block_delta", "{not json"),
        frame("content_block_delta", "[1, 2]"),
        frame(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": "0",
                "delta": {"type": "text_delta", "text": "x"},
            },
        ),
        frame(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}},
        ),
        frame(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": True,
                "delta": {"type": "text_delta", "text": "x"},
            },
        ),
        frame("message_delta", {"type": "message_delta", "delta": {"stop_reason": 1}}),
        frame(
            "message_delta", {"type": "message_delta", "delta": {}, "usage": {"output_tokens": "5"}}
        ),
        frame(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "name": "f"},
            },
        ),
    ],
)
def test_malformed_data_of_a_known_event(bad: bytes) -> None:
    body = message_start() + block_start(0, {"type": "text", "text": ""}) + bad
    _, error = decode_every_way(SOURCE, body)
    assert isinstance(error, MalformedEventError)


# --------------------------------------------------------------------------------------------
# Finish reasons and usage (06 §1, §7, 08 D7)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_call"),
        ("pause_turn", "unknown"),
        ("refusal", "unknown"),
        ("model_context_window_exceeded", "unknown"),
    ],
)
def test_finish_reasons(stop_reason: str, finish: str) -> None:
    events, error = decode_every_way(SOURCE, finished(text_block(0, "x"), stop_reason=stop_reason))
    assert error is None
    assert stop_of(events).finish_reason == finish


def test_usage_formula_cache_creation_and_thinking() -> None:
    body = message_start(
        input_tokens=100,
        cache_creation_input_tokens=20,
        cache_read_input_tokens=300,
        output_tokens=1,
    )
    body += text_block(0, "x")
    body += message_delta(
        "end_turn", output_tokens=50, output_tokens_details={"thinking_tokens": 30}
    )
    events, error = decode_every_way(SOURCE, body + MESSAGE_STOP)
    assert error is None
    # cached = 300; prompt = 100 + 20; thoughts = 30; response = 50 - 30.
    assert stop_of(events).usage_metadata == UsageMetadata(300, 120, 30, 20)


def test_later_usage_replaces_earlier_counts_field_by_field() -> None:
    body = message_start(input_tokens=43, cache_read_input_tokens=5) + text_block(0, "x")
    body += message_delta("end_turn", input_tokens=61, output_tokens=2) + MESSAGE_STOP
    events, _ = decode_every_way(SOURCE, body)
    assert stop_of(events).usage_metadata == UsageMetadata(5, 61, None, 2)


NEGATIVE = (
    message_start(input_tokens=10)
    + text_block(0, "x")
    + message_delta("end_turn", output_tokens=4, output_tokens_details={"thinking_tokens": 9})
    + MESSAGE_STOP
)


@pytest.mark.parametrize(
    "base_url", [None, "https://openrouter.ai/api", "https://api.anthropic.com"]
)
def test_output_below_its_thinking_count_is_the_response_itself(base_url: str | None) -> None:
    """08 D52, on every endpoint: the endpoint left thinking out of ``output_tokens``, so that
    count is the response; the thinking count stays as reported."""
    events, _ = decode_every_way(SOURCE, NEGATIVE, base_url=base_url)
    assert stop_of(events).usage_metadata == UsageMetadata(None, 10, 9, 4)


@pytest.mark.parametrize(
    ("start", "delta", "prompt"),
    [
        ({"input_tokens": 17}, {"cache_creation_input_tokens": 10}, 27),
        ({"input_tokens": 17, "cache_creation_input_tokens": 10}, {"input_tokens": 17}, 27),
        ({"input_tokens": 17, "cache_creation_input_tokens": 10}, {}, 27),
        ({"input_tokens": 17}, {"input_tokens": 20, "cache_creation_input_tokens": 3}, 23),
        ({"input_tokens": 17, "cache_creation_input_tokens": 10},
         {"cache_creation_input_tokens": 0}, 17),
        ({"cache_creation_input_tokens": 10}, {}, None),
    ],
)
def test_cache_creation_counts_whichever_event_brings_it(
    start: dict[str, int], delta: dict[str, int], prompt: int | None
) -> None:
    """08 D53: the machine remembers the input counts it saw (normally on ``message_start``),
    so ``prompt_tokens = input_tokens + cache_creation_input_tokens`` whenever either part
    arrives; the stop merge keeps the latest value."""
    body = message_start(**start, output_tokens=1) + text_block(0, "x")
    body += message_delta("end_turn", **delta, output_tokens=2) + MESSAGE_STOP
    events, _ = decode_every_way(SOURCE, body)
    assert stop_of(events).usage_metadata == UsageMetadata(None, prompt, None, 2)


def test_cache_reads_on_message_delta_count() -> None:
    body = message_start(input_tokens=17, output_tokens=1) + text_block(0, "x")
    body += message_delta("end_turn", cache_read_input_tokens=4, output_tokens=2) + MESSAGE_STOP
    events, _ = decode_every_way(SOURCE, body)
    assert stop_of(events).usage_metadata == UsageMetadata(4, 17, None, 2)


# --------------------------------------------------------------------------------------------
# Renderer round trip (08 D49): what decode gives back after the documented normalisation.
# --------------------------------------------------------------------------------------------


_ids = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=12)
_signature = st.fixed_dictionaries({"signature": st.text(max_size=40)})
anthropic_items = st.one_of(
    st.builds(TextDone, st.text(max_size=200)),
    st.builds(ThinkingDone, st.text(max_size=200), st.none() | _signature),
    st.builds(ThinkingDone, st.just("_REDACTED_THINKING"), st.none() | _signature),
    st.builds(ToolCallDone, _ids, _ids, json_objects()),
    done_items(),
)


@given(
    items=st.lists(anthropic_items, max_size=6),
    counts=usage(),
    finish=finish_reasons(),
    fragment_size=st.none() | st.integers(1, 40),
    data=st.data(),
)
def test_render_then_decode_round_trips(
    items: list[DoneItem],
    counts: UsageMetadata,
    finish: FinishReason,
    fragment_size: int | None,
    data: st.DataObject,
) -> None:
    body = adapters.render(
        SOURCE, items, counts, finish, model="claude-x", fragment_size=fragment_size
    )
    events, error = _decode(body, data.draw(chunked(body)))
    expected = [to_wire(c) for c in normalize(items, finish)[0]]
    assert done(events) == expected
    if all(item["type"] == "thinking.done" for item in expected):
        assert isinstance(error, EmptyResponseError)
        assert (error.usage_metadata, error.finish_reason) == (counts, finish)
        return
    assert error is None
    stop = stop_of(events)
    assert (stop.usage_metadata, stop.finish_reason) == (counts, finish)


def test_render_splits_each_item_into_fragments_of_the_given_size() -> None:
    items = [TextDone("abcdefg"), ToolCallDone("f", "t", {"k": "vv"})]
    body = adapters.render(
        SOURCE, items, UsageMetadata(0, 1, None, 2), FinishReason.TOOL_CALL, fragment_size=3
    )
    events, error = _decode(body, [body])
    assert error is None
    fragments = [
        to_wire(e.content_items[0])
        for e in events[:-1]
        if e.content_items[0].type.endswith(".delta")
    ]
    assert [f.get("text", f.get("arguments")) for f in fragments] == [
        "abc",
        "def",
        "g",
        "",
        '{"k',
        '":"',
        'vv"',
        "}",
    ]


def test_render_uses_the_real_event_names() -> None:
    items = [
        ThinkingDone("t", {"signature": "S"}),
        ThinkingDone("_REDACTED_THINKING", {"signature": "R"}),
        TextDone("x"),
    ]
    body = adapters.render(SOURCE, items, UsageMetadata(), FinishReason.UNKNOWN, model="m")
    names = [line[7:] for line in body.decode().splitlines() if line.startswith("event: ")]
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert b'"signature_delta"' in body and b'"redacted_thinking","data":"R"' in body
    assert b'"stop_reason":"pause_turn"' in body and b'"model":"m"' in body


def test_render_rejects_a_fragment_size_below_one() -> None:
    with pytest.raises(ValueError, match="fragment_size"):
        adapters.render(SOURCE, [TextDone("x")], UsageMetadata(), "stop", fragment_size=0)


# --------------------------------------------------------------------------------------------
# Open blocks are bounded (08 D18)
# --------------------------------------------------------------------------------------------

TEXT_BLOCK = {"type": "text", "text": ""}
SKIPPED_BLOCK = {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}


def capped(body: bytes, cap: int, chunks: list[bytes] | None = None) -> tuple[list[UniEvent], Any]:
    """Decode ``body`` (or ``chunks`` of it) with at most ``cap`` open blocks."""
    ticks = iter(range(1 << 30))
    machine = AnthropicMessagesMachine(
        SOURCE, PROFILE, strict=False, base_url=None, max_open_blocks=cap
    )
    pipeline = StreamPipeline(machine, client=SOURCE, clock=lambda: next(ticks))
    return run(pipeline, [body] if chunks is None else chunks)


def test_the_default_cap_is_1024_open_blocks() -> None:
    machine = AnthropicMessagesMachine(SOURCE, PROFILE, strict=False, base_url=None)
    assert machine.max_open_blocks == MAX_OPEN_BLOCKS == 1024


@pytest.mark.parametrize("block", [TEXT_BLOCK, SKIPPED_BLOCK], ids=["text", "skipped"])
def test_one_block_past_the_cap_is_a_stream_limit_error_at_its_position(
    block: dict[str, Any],
) -> None:
    opened = message_start() + text_block(0, "a")[: -len(block_stop(0))]
    opened += block_start(1, block) + text_block(2, "c")[: -len(block_stop(2))]
    body = opened + block_start(3, block) + MESSAGE_STOP
    events, error = capped(body, cap=3)
    assert isinstance(error, StreamLimitError)
    assert (error.what, error.limit, error.size) == ("open content blocks", 3, 4)
    assert [to_wire(e.content_items[0]) for e in events] == [
        {"type": "text.delta", "text": "a"},
        {"type": "text.done", "text": "a"},
        {"type": "text.delta", "text": "c"},
    ]
    for chunks in chunkings(body):
        assert outcome(*capped(body, 3, chunks)) == outcome(events, error)


def test_closed_blocks_free_their_place() -> None:
    blocks = b"".join(text_block(i, f"t{i}") for i in range(10))
    events, error = capped(finished(blocks), cap=1)
    assert error is None
    assert [item["text"] for item in done(events)] == [f"t{i}" for i in range(10)]


#: What one open block may cost the machine: a dict slot and its int key (about 75 bytes).
BLOCK_BYTES = 100


@pytest.mark.parametrize("cap", [256, 2048])
def test_a_stream_that_opens_blocks_without_closing_them_is_held_in_about_the_cap(
    cap: int,
) -> None:
    """A hostile server opening blocks and never closing them: what the pipeline holds until
    the cap fires stays within a small factor of what ``cap`` open blocks cost, however long
    the stream would go on (before the cap, it grew without bound: 81 MB for a million)."""
    ticks = iter(range(1 << 30))
    machine = AnthropicMessagesMachine(
        SOURCE, PROFILE, strict=False, base_url=None, max_open_blocks=cap
    )
    pipeline = StreamPipeline(machine, client=SOURCE, clock=lambda: next(ticks))
    pipeline.receive_data(message_start())
    chunk_of = 64

    def chunk(first: int) -> bytes:
        return b"".join(block_start(first + i, TEXT_BLOCK) for i in range(chunk_of))

    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        with pytest.raises(StreamLimitError):
            for first in range(0, 10 * cap, chunk_of):
                pipeline.receive_data(chunk(first))
                while pipeline.next_event() is not NEED_DATA:
                    pass
        peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    assert peak < 2 * cap * BLOCK_BYTES + 64 * 1024  # plus one chunk in flight
