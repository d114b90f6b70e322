"""The OpenAI Responses machine and renderer (spec 06 §2, 02 §11, 08 D4, D5, D33, D35, D43, D45,
D49, D51), over recorded fixtures and hand-written streams.

Every hand-written body is decoded whole, byte by byte and at every two-piece split
(``chunkings``), and in random chunkings (``test_random_chunkings``), with identical results.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness import check_fixture, fixture_cases
from hypothesis import given
from hypothesis import strategies as st

import adapters
from adapters.openai_responses import normalize
from mmsp_core import (
    EmptyResponseError,
    IncompleteStreamError,
    MalformedEventError,
    ProviderStreamError,
    ToolCallArgumentParseError,
    UnknownEventError,
    to_wire,
)
from mmsp_core.model import (
    FinishReason,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    UniEvent,
    UsageMetadata,
)
from mmsp_core.testing import assert_stream_grammar, chunkings, outcome, run
from mmsp_core.testing.strategies import chunked, json_objects, usage

PROTOCOL = "openai-responses"

# ------------------------------------------------------------------------------------------
# Recorded fixtures
# ------------------------------------------------------------------------------------------


# The protocol's own client runs every fixture in tests/adapters/test_check_protocol.py.
@pytest.mark.parametrize("client", ["openai-official", "minimax-official", "deepseek-official"])
@pytest.mark.parametrize("path", fixture_cases(PROTOCOL), ids=lambda p: p.stem)
def test_fixture_same_for_every_client(path: Path, client: str) -> None:
    """One machine serves every Responses client (08 D32): MiniMax's whole calls, read from
    the done items, give the same done items as the streamed arguments."""
    check_fixture(client, path)


# ------------------------------------------------------------------------------------------
# Hand-written streams
# ------------------------------------------------------------------------------------------


def sse(*events: dict[str, Any]) -> bytes:
    """Frame events as a Responses server does: ``event: <type>`` and ``data: <json>``."""
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events
    )


USAGE = {
    "input_tokens": 30,
    "input_tokens_details": {"cached_tokens": 10},
    "output_tokens": 12,
    "output_tokens_details": {"reasoning_tokens": 5},
    "total_tokens": 42,
}
USAGE_WIRE = {"cached_tokens": 10, "prompt_tokens": 20, "thoughts_tokens": 5, "response_tokens": 7}


def created() -> dict[str, Any]:
    return {"type": "response.created", "response": {"status": "in_progress", "usage": None}}


def completed(status: str = "completed", usage: Any = USAGE, **extra: Any) -> dict[str, Any]:
    kind = "response.completed" if status == "completed" else "response.incomplete"
    return {"type": kind, "response": {"status": status, "usage": usage, **extra}}


def message(index: int, *texts: str, item_id: str = "msg", phase: str | None = None) -> list[
    dict[str, Any]
]:
    item: dict[str, Any] = {"type": "message", "id": item_id, "role": "assistant", "content": []}
    if phase is not None:
        item["phase"] = phase
    deltas = [
        {"type": "response.output_text.delta", "output_index": index, "item_id": item_id,
         "content_index": 0, "delta": text}
        for text in texts
    ]
    return [
        {"type": "response.output_item.added", "output_index": index, "item": item},
        *deltas,
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]


def call(index: int, name: str, *fragments: str, call_id: str | None = "call_x",
         done_arguments: str | None = None) -> list[dict[str, Any]]:
    item: dict[str, Any] = {"type": "function_call", "id": f"fc_{index}", "name": name,
                            "arguments": ""}
    if call_id is not None:
        item["call_id"] = call_id
    deltas = [
        {"type": "response.function_call_arguments.delta", "output_index": index,
         "item_id": f"fc_{index}", "delta": fragment}
        for fragment in fragments
    ]
    arguments = "".join(fragments) if done_arguments is None else done_arguments
    return [
        {"type": "response.output_item.added", "output_index": index, "item": item},
        *deltas,
        {"type": "response.output_item.done", "output_index": index,
         "item": {**item, "arguments": arguments}},
    ]


def reasoning(index: int, *summary: str, **done_fields: Any) -> list[dict[str, Any]]:
    item = {"type": "reasoning", "id": f"rs_{index}", "summary": []}
    deltas = [
        {"type": "response.reasoning_summary_text.delta", "output_index": index,
         "item_id": f"rs_{index}", "summary_index": 0, "delta": text}
        for text in summary
    ]
    done = {**item, "summary": [{"type": "summary_text", "text": "".join(summary)}]
            if summary else [], **done_fields}
    return [
        {"type": "response.output_item.added", "output_index": index, "item": item},
        *deltas,
        {"type": "response.output_item.done", "output_index": index, "item": done},
    ]


def decode(source: str, body: bytes, *, strict: bool = False) -> tuple[list[UniEvent], Any]:
    """Decode ``body`` at every chunking of ``chunkings``; all must agree. Returns one run."""
    first: Any = None
    for chunks in chunkings(body):
        result = run(adapters.new_pipeline(source, strict=strict, clock=None), chunks)
        if first is None:
            first = result
        assert outcome(*result) == outcome(*first), f"chunking {len(chunks)} pieces differs"
    return first  # type: ignore[no-any-return]


def done_items(events: list[UniEvent]) -> list[dict[str, Any]]:
    return [to_wire(e.content_items[0]) for e in events
            if e.event_type == "delta" and e.content_items[0].type.endswith(".done")]


def finished(events: list[UniEvent], error: Any) -> dict[str, Any]:
    """Assert a clean, grammatical stream; return its stop event's wire JSON."""
    assert error is None, error
    assert_stream_grammar(events)
    return to_wire(events[-1])


TRUNCATED_TEXT = sse(created(), *message(0, "Hel", "lo")[:-1])
TRUNCATED_CALL = sse(created(), *call(0, "get", '{"city": "Par')[:-1])
ONLY_REASONING = sse(created(), *reasoning(0, "Let me", " think"), completed())
INVALID_JSON = sse(created(), *call(0, "get", '{"city": ', '"Paris"'), completed())
ERROR_NESTED = sse(
    created(), *message(0, "Par")[:-1],
    {"type": "error", "error": {"type": "server_error", "code": "server_error",
                                "message": "The server had an error", "param": None}},
    completed(),
)
ERROR_FLAT = sse(
    created(),
    {"type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": None},
)
FAILED = sse(
    created(), *message(0, "partial"),
    {"type": "response.failed", "response": {
        "status": "failed", "usage": USAGE,
        "error": {"code": "server_error", "message": "Something went wrong"}}},
)
PARALLEL = sse(
    created(),
    *call(0, "add", '{"a":', "1}", call_id="call_add"),
    *call(1, "mul", '{"b":2}', call_id="call_mul"),
    completed(),
)
NO_ARGUMENTS = sse(created(), *call(0, "now", call_id="call_now", done_arguments=""), completed())
# MiniMax's argument deltas cannot be trusted; the done item carries the whole call.
MINIMAX = sse(
    created(),
    *call(0, "get", '{"ci', '{"city":"Rome"}', call_id="call_mm",
          done_arguments='{"city":"Rome"}'),
    completed(),
)
ROTATING = sse(
    created(),
    {"type": "response.output_item.added", "output_index": 0,
     "item": {"type": "message", "id": "id-1", "role": "assistant", "content": []}},
    *[{"type": "response.output_text.delta", "output_index": 0, "item_id": f"id-{n}",
       "delta": text} for n, text in enumerate(["one ", "item ", "only"], start=2)],
    {"type": "response.output_item.done", "output_index": 0,
     "item": {"type": "message", "id": "id-9", "role": "assistant", "content": []}},
    *message(1, "second", item_id="id-10"),
    completed(),
)
NO_CALL_IDS = sse(created(), *call(0, "a", "{}", call_id=None),
                  *call(1, "b", "{}", call_id=""), completed())
REFUSAL = sse(
    created(),
    {"type": "response.output_item.added", "output_index": 0,
     "item": {"type": "message", "id": "m", "role": "assistant", "content": []}},
    {"type": "response.refusal.delta", "output_index": 0, "item_id": "m", "delta": "I can't"},
    {"type": "response.refusal.done", "output_index": 0, "item_id": "m", "refusal": "I can't"},
    completed(),
)
BUILT_IN_TOOL = sse(
    created(),
    {"type": "response.queued", "response": {"status": "queued"}},
    {"type": "response.output_item.added", "output_index": 0,
     "item": {"type": "web_search_call", "id": "ws", "status": "in_progress"}},
    {"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws"},
    {"type": "response.output_item.done", "output_index": 0,
     "item": {"type": "web_search_call", "id": "ws", "status": "completed"}},
    *message(1, "found it"),
    {"type": "keepalive"},
    completed(),
)
OPENROUTER_REASONING = sse(
    created(),
    *reasoning(0, "hm", encrypted_content="enc", signature="sig", format="anthropic-v1"),
    *message(1, "ok"),
    completed(),
)
DONE_SENTINEL = sse(created(), *message(0, "hi"), completed()) + b"data: [DONE]\n\n"

CASES = [TRUNCATED_TEXT, TRUNCATED_CALL, ONLY_REASONING, INVALID_JSON, ERROR_NESTED, ERROR_FLAT,
         FAILED, PARALLEL, NO_ARGUMENTS, MINIMAX, ROTATING, NO_CALL_IDS, REFUSAL, BUILT_IN_TOOL,
         OPENROUTER_REASONING, DONE_SENTINEL]


@given(st.sampled_from(CASES), st.sampled_from([PROTOCOL, "minimax-official"]), st.data())
def test_random_chunkings(body: bytes, source: str, data: st.DataObject) -> None:
    chunks = data.draw(chunked(body))
    whole = outcome(*run(adapters.new_pipeline(source, clock=None), [body]))
    assert outcome(*run(adapters.new_pipeline(source, clock=None), chunks)) == whole


def test_truncated_text_closes_the_item_then_raises_incomplete() -> None:
    events, error = decode(PROTOCOL, TRUNCATED_TEXT)
    assert done_items(events) == [{"type": "text.done", "text": "Hello"}]
    assert isinstance(error, IncompleteStreamError)
    assert error.missing == ("usage_metadata", "finish_reason")


def test_truncated_call_is_incomplete_not_a_parse_error() -> None:
    """08 D33: the cut explains the broken JSON."""
    events, error = decode(PROTOCOL, TRUNCATED_CALL)
    assert [to_wire(e.content_items[0]) for e in events] == [
        {"type": "tool_call.delta", "name": "get", "tool_call_id": "call_x", "arguments": ""},
        {"type": "tool_call.delta", "name": "", "tool_call_id": "", "arguments": '{"city": "Par'},
    ]
    assert isinstance(error, IncompleteStreamError)


def test_only_reasoning_is_an_empty_response() -> None:
    events, error = decode(PROTOCOL, ONLY_REASONING)
    assert done_items(events) == [{"type": "thinking.done", "thinking": "Let me think",
                                   "fidelity": {"channel": "summary"}}]
    assert isinstance(error, EmptyResponseError)
    assert error.finish_reason == "stop"
    assert error.usage_metadata == UsageMetadata(**USAGE_WIRE)


def test_invalid_tool_json_raises_argument_parse_error() -> None:
    events, error = decode(PROTOCOL, INVALID_JSON)
    assert isinstance(error, ToolCallArgumentParseError)
    assert (error.tool_name, error.tool_call_id) == ("get", "call_x")
    assert error.raw_arguments_preview == '{"city": "Paris"'
    assert done_items(events) == []


@pytest.mark.parametrize(
    ("body", "code", "error_type", "message"),
    [
        (ERROR_NESTED, "server_error", "server_error", "The server had an error"),
        (ERROR_FLAT, "rate_limit_exceeded", None, "Slow down"),
    ],
)
def test_error_event_raises_provider_stream_error(
    body: bytes, code: str, error_type: str | None, message: str
) -> None:
    events, error = decode(PROTOCOL, body)
    assert isinstance(error, ProviderStreamError)
    assert (error.code, error.error_type, error.provider_message) == (code, error_type, message)
    assert error.usage_metadata is None
    assert error.retryable  # server errors and rate limits may be retried (08 D48)
    assert all(e.event_type == "delta" for e in events)  # raised in place of the stop


def test_error_comes_after_the_text_before_it() -> None:
    events, _ = decode(PROTOCOL, ERROR_NESTED)
    assert [e.content_items[0].text for e in events] == ["Par"]


def test_response_failed_carries_usage() -> None:
    events, error = decode(PROTOCOL, FAILED)
    assert [to_wire(e.content_items[0]) for e in events] == [
        {"type": "text.delta", "text": "partial"}
    ]
    assert isinstance(error, ProviderStreamError)
    assert (error.code, error.provider_message) == ("server_error", "Something went wrong")
    assert error.usage_metadata == UsageMetadata(**USAGE_WIRE)


def test_error_then_failed_fixture_raises_at_the_error_event() -> None:
    body = Path(__file__).parent.parent.joinpath(
        "fixtures", PROTOCOL, "error-then-response-failed.sse").read_bytes()
    events, error = decode(PROTOCOL, body)
    assert events == [] and isinstance(error, ProviderStreamError)
    assert error.code == "insufficient_quota"


def test_parallel_calls() -> None:
    events, error = decode(PROTOCOL, PARALLEL)
    stop = finished(events, error)
    assert done_items(events) == [
        {"type": "tool_call.done", "name": "add", "tool_call_id": "call_add",
         "arguments": {"a": 1}},
        {"type": "tool_call.done", "name": "mul", "tool_call_id": "call_mul",
         "arguments": {"b": 2}},
    ]
    assert stop["finish_reason"] == "tool_call"  # 08 D5
    assert stop["usage_metadata"] == USAGE_WIRE


def test_call_without_arguments_is_an_empty_object() -> None:
    events, error = decode(PROTOCOL, NO_ARGUMENTS)
    finished(events, error)
    assert done_items(events) == [
        {"type": "tool_call.done", "name": "now", "tool_call_id": "call_now", "arguments": {}}
    ]


def test_minimax_reads_whole_calls_from_the_done_item() -> None:
    """02 §11: exactly one tool_call.delta with name, id and the whole arguments."""
    events, error = decode("minimax-official", MINIMAX)
    finished(events, error)
    wire = [to_wire(e.content_items[0]) for e in events[:-1]]
    assert wire == [
        {"type": "tool_call.delta", "name": "get", "tool_call_id": "call_mm",
         "arguments": '{"city":"Rome"}'},
        {"type": "tool_call.done", "name": "get", "tool_call_id": "call_mm",
         "arguments": {"city": "Rome"}},
    ]


def test_other_clients_read_the_argument_deltas() -> None:
    _, error = decode("openai-official", MINIMAX)
    assert isinstance(error, ToolCallArgumentParseError)
    assert error.raw_arguments_preview == '{"ci{"city":"Rome"}'


def test_rotating_item_ids_never_split_an_item() -> None:
    """08 D35: items are identified by output_index."""
    events, error = decode(PROTOCOL, ROTATING)
    finished(events, error)
    assert done_items(events) == [{"type": "text.done", "text": "one item only"},
                                  {"type": "text.done", "text": "second"}]


def test_calls_without_ids_are_numbered() -> None:
    """08 D43: call_<n>, n the call's 0-based position among the response's calls."""
    events, error = decode(PROTOCOL, NO_CALL_IDS)
    finished(events, error)
    assert [d["tool_call_id"] for d in done_items(events)] == ["call_0", "call_1"]


def test_refusal_is_text() -> None:
    events, error = decode(PROTOCOL, REFUSAL)
    finished(events, error)
    assert done_items(events) == [{"type": "text.done", "text": "I can't"}]


def test_built_in_tools_and_lifecycle_events_are_skipped_even_when_strict() -> None:
    """08 D51: known types MMSP does not carry are skipped in both modes."""
    for strict in (False, True):
        events, error = decode(PROTOCOL, BUILT_IN_TOOL, strict=strict)
        finished(events, error)
        assert done_items(events) == [{"type": "text.done", "text": "found it"}]


def test_reasoning_fidelity_keeps_the_public_keys_only() -> None:
    """01 §5: channel, encrypted_content, signature, format; never a provider item id."""
    events, error = decode(PROTOCOL, OPENROUTER_REASONING)
    finished(events, error)
    assert done_items(events)[0] == {
        "type": "thinking.done", "thinking": "hm",
        "fidelity": {"channel": "summary", "encrypted_content": "enc", "signature": "sig",
                     "format": "anthropic-v1"},
    }


def test_done_sentinel_is_ignored() -> None:
    events, error = decode(PROTOCOL, DONE_SENTINEL, strict=True)
    assert finished(events, error)["finish_reason"] == "stop"


@pytest.mark.parametrize(
    ("terminal", "finish"),
    [
        (completed(), "stop"),
        (completed("incomplete", incomplete_details={"reason": "max_output_tokens"}), "length"),
        (completed("incomplete", incomplete_details={"reason": "content_filter"}), "unknown"),
        (completed("incomplete"), "unknown"),
        ({"type": "response.completed", "response": {"status": "cancelled", "usage": USAGE}},
         "unknown"),
    ],
)
def test_finish_reasons(terminal: dict[str, Any], finish: str) -> None:
    """08 D35: incomplete for max_output_tokens is length, for any other reason unknown."""
    events, error = decode(PROTOCOL, sse(*message(0, "x"), terminal))
    assert finished(events, error)["finish_reason"] == finish


def test_incomplete_after_a_call_is_not_tool_call() -> None:
    body = sse(*call(0, "f", "{}"),
               completed("incomplete", incomplete_details={"reason": "max_output_tokens"}))
    events, error = decode(PROTOCOL, body)
    assert finished(events, error)["finish_reason"] == "length"


@pytest.mark.parametrize(
    ("wire_usage", "expected"),
    [
        ({"input_tokens": 7, "output_tokens": 3},
         {"cached_tokens": None, "prompt_tokens": 7, "thoughts_tokens": None,
          "response_tokens": 3}),
        ({"input_tokens": 7, "input_tokens_details": None, "output_tokens": 3,
          "output_tokens_details": {"reasoning_tokens": 0}},
         {"cached_tokens": None, "prompt_tokens": 7, "thoughts_tokens": 0,
          "response_tokens": 3}),
        ({}, {"cached_tokens": None, "prompt_tokens": None, "thoughts_tokens": None,
              "response_tokens": None}),
    ],
)
def test_usage_without_detail_blocks(wire_usage: dict[str, Any], expected: dict[str, Any]) -> None:
    """06 §2: a missing detail block gives a null count and subtracts nothing."""
    events, error = decode(PROTOCOL, sse(*message(0, "x"), completed(usage=wire_usage)))
    assert finished(events, error)["usage_metadata"] == expected


@pytest.mark.parametrize("reasoning", [5, 9])
def test_output_below_its_reasoning_count_is_the_response_itself(reasoning: int) -> None:
    """08 D52: an endpoint that left reasoning out of ``output_tokens`` never gives a negative
    ``response_tokens``; the reasoning count stays as reported."""
    wire_usage = {
        "input_tokens": 7,
        "output_tokens": 4,
        "output_tokens_details": {"reasoning_tokens": reasoning},
    }
    events, error = decode(PROTOCOL, sse(*message(0, "x"), completed(usage=wire_usage)))
    assert finished(events, error)["usage_metadata"] == {
        "cached_tokens": None,
        "prompt_tokens": 7,
        "thoughts_tokens": reasoning,
        "response_tokens": 4,
    }


def test_completed_without_usage_is_incomplete() -> None:
    _, error = decode(PROTOCOL, sse(*message(0, "x"), completed(usage=None)))
    assert isinstance(error, IncompleteStreamError)
    assert error.missing == ("usage_metadata",)


OUT_OF_PLACE = [
    # a text delta for a function-call item
    [*call(0, "f", "{}")[:-1],
     {"type": "response.output_text.delta", "output_index": 0, "delta": "x"},
     call(0, "f", "{}")[-1], completed()],
    # an argument delta for a message item
    [*message(0, "a")[:-1],
     {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{}"},
     message(0, "a")[-1], completed()],
    # a delta for an item that was never announced
    [*message(0, "a"),
     {"type": "response.output_text.delta", "output_index": 3, "delta": "x"}, completed()],
    # an item announced twice
    [*message(0, "a"), message(0, "a")[0], completed()],
]

#: What follows the terminal event is ignored by the pipeline in both modes (08 D56).
AFTER_TERMINAL = {
    "content": message(1, "late"),
    "a second terminal event": [completed()],
    "a failure": [{"type": "response.failed", "response": {"error": {"message": "late"}}}],
    "an error": [{"type": "error", "message": "late"}],
    "an unknown event": [{"type": "response.future_feature"}],
}


@pytest.mark.parametrize("events", OUT_OF_PLACE, ids=range(len(OUT_OF_PLACE)))
def test_out_of_place_events_are_like_unknown_ones(events: list[dict[str, Any]]) -> None:
    """08 D45: skipped, or UnknownEventError in strict mode."""
    body = sse(*events)
    lenient, error = decode(PROTOCOL, body)
    finished(lenient, error)
    assert done_items(lenient)[0]["type"] in ("text.done", "tool_call.done")
    _, strict_error = decode(PROTOCOL, body, strict=True)
    assert isinstance(strict_error, UnknownEventError)


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("terminal", ["completed", "incomplete"])
@pytest.mark.parametrize("tail", AFTER_TERMINAL.values(), ids=AFTER_TERMINAL.keys())
def test_whatever_follows_the_terminal_event_is_ignored(
    tail: list[dict[str, Any]], terminal: str, strict: bool
) -> None:
    """08 D56 (replacing D45 after the terminal event), ``response.completed`` and
    ``response.incomplete`` alike: the answer ends there, however the bytes were read."""
    answer = sse(*message(0, "a"), completed(terminal))
    # The answer alone, read whole: the chunkings are the longer body's to run.
    expected = run(adapters.new_pipeline(PROTOCOL, strict=strict, clock=None), [answer])
    finished(*expected)
    events, error = decode(PROTOCOL, answer + sse(*tail) + b"data: {late\n\n", strict=strict)
    assert outcome(events, error) == outcome(*expected)


def test_unknown_event_is_skipped_or_strict_error() -> None:
    body = sse(*message(0, "a")[:2], {"type": "response.future_feature", "x": 1},
               *message(0, "a")[2:], completed())
    events, error = decode(PROTOCOL, body)
    finished(events, error)
    assert done_items(events) == [{"type": "text.done", "text": "a"}]
    _, strict_error = decode(PROTOCOL, body, strict=True)
    assert isinstance(strict_error, UnknownEventError)
    assert "response.future_feature" in strict_error.event


@pytest.mark.parametrize(
    "data",
    [
        b"{not json",
        b"[1, 2]",
        json.dumps({"type": "response.output_text.delta", "output_index": 0,
                    "delta": 5}).encode(),
        json.dumps({"type": "response.output_item.added", "output_index": 1,
                    "item": {"type": "function_call", "call_id": "c"}}).encode(),
        json.dumps({"type": "response.completed", "response": {
            "status": "completed", "usage": {"input_tokens": "many"}}}).encode(),
    ],
    ids=["not-json", "not-an-object", "delta-not-a-string", "call-without-name",
         "usage-not-a-count"],
)
def test_malformed_events(data: bytes) -> None:
    body = sse(*message(0, "a")[:-1]) + b"data: " + data + b"\n\n"
    events, error = decode(PROTOCOL, body)
    assert isinstance(error, MalformedEventError)
    assert [e.content_items[0].type for e in events] == ["text.delta"]


DEEP = b"[" * 100_000


@pytest.mark.parametrize(
    "body",
    [
        b'data: {"type":{}}\n\n',
        b"event: error\ndata: " + DEEP + b"\n\n",
        b"data: " + DEEP + b"\n\n",
        # nesting about as deep as the parser takes, in a field the handler refuses: at some
        # of these depths, writing the event back out as JSON would recurse too deep
        *[sse({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message", "content": []}})
          + b'data: {"type":"response.output_text.delta","delta":' + b"[" * depth
          + b"]" * depth + b"}\n\n" for depth in range(850, 1001, 10)],
    ],
    ids=["unhashable-type", "deep-error", "deep", *(f"deep-field-{n}" for n in range(16))],
)
@pytest.mark.parametrize("strict", [False, True])
def test_hostile_json_is_a_malformed_event(body: bytes, strict: bool) -> None:
    """08 D59: whatever the JSON, only a typed error comes out, at that event."""
    with pytest.raises(MalformedEventError):
        list(adapters.decode(PROTOCOL, [body], strict=strict))


def test_phase_is_kept_on_the_text() -> None:
    events, error = decode(PROTOCOL, sse(*message(0, "plan", phase="commentary"), completed()))
    finished(events, error)
    assert done_items(events) == [
        {"type": "text.done", "text": "plan", "fidelity": {"phase": "commentary"}}
    ]


# ------------------------------------------------------------------------------------------
# Round trip: done items -> render -> random chunking -> decode (09, 08 D49)
# ------------------------------------------------------------------------------------------

_fidelity_values = st.none() | st.text(max_size=6) | st.integers(0, 9)
_thinking_fidelity = st.none() | st.dictionaries(
    st.sampled_from(["channel", "encrypted_content", "signature", "format", "other"]),
    st.sampled_from(["summary", "content"]) | _fidelity_values,
    max_size=4,
)
_text_fidelity = st.none() | st.dictionaries(
    st.sampled_from(["phase", "other"]), _fidelity_values, max_size=2)
_names = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)

_items = st.lists(
    st.one_of(
        st.builds(TextDone, st.text(max_size=40), _text_fidelity),
        st.builds(ThinkingDone, st.text(max_size=40), _thinking_fidelity),
        st.builds(ToolCallDone, _names, st.just("") | _names, json_objects()),
    ),
    max_size=5,
)


@given(
    items=_items,
    counts=usage(),
    finish=st.sampled_from(list(FinishReason)),
    fragment_size=st.none() | st.integers(1, 12),
    source=st.sampled_from([PROTOCOL, "openai-official", "minimax-official"]),
    data=st.data(),
)
def test_round_trip(
    items: list[Any],
    counts: UsageMetadata,
    finish: FinishReason,
    fragment_size: int | None,
    source: str,
    data: st.DataObject,
) -> None:
    body = adapters.render(PROTOCOL, items, counts, finish, fragment_size=fragment_size)
    chunks = data.draw(chunked(body))
    events, error = run(adapters.new_pipeline(source, clock=None), chunks)
    expected_items, expected_finish = normalize(items, finish)
    assert done_items(events) == [to_wire(item) for item in expected_items]
    if expected_items and not all(isinstance(i, ThinkingDone) for i in expected_items):
        stop = finished(events, error)
        assert stop["finish_reason"] == expected_finish
        assert stop["usage_metadata"] == to_wire(counts)
    else:
        assert isinstance(error, EmptyResponseError)


def test_render_splits_into_fragments_of_the_given_size() -> None:
    body = adapters.render(PROTOCOL, [TextDone("abcdefg")], UsageMetadata(0, 1, 0, 1), "stop",
                           fragment_size=3)
    deltas = [json.loads(line[6:])["delta"] for line in body.decode().splitlines()
              if line.startswith("data: ") and '"response.output_text.delta"' in line]
    assert deltas == ["abc", "def", "g"]
    sequence = [json.loads(line[6:])["sequence_number"] for line in body.decode().splitlines()
                if line.startswith("data: ")]
    assert sequence == list(range(len(sequence)))
