"""The finalizer: client stream in, public stream out (spec 02 §4-§7, seed "流式").

Every rule runs twice: through ``StreamItems`` directly and through a ``StreamPipeline`` with
the ``JsonEventsMachine`` (the client events serialized as ``data: <wire json>`` SSE events);
both must give the same outcome. Expected items are written out from the spec.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mmsp_core import (
    EmbeddingDelta,
    EmbeddingDone,
    EmptyResponseError,
    FinishReason,
    IncompleteStreamError,
    InlineDataDelta,
    InlineDataDone,
    InlineThinkingDelta,
    InlineThinkingDone,
    JsonEventsMachine,
    MMSPError,
    StreamItems,
    StreamLimitError,
    StreamPipeline,
    StreamProtocolError,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolCallArgumentParseError,
    ToolCallDelta,
    ToolCallDone,
    UniEvent,
    UsageMetadata,
    to_wire,
)
from mmsp_core.kinds import TEXT, THINKING, TOOL_CALL, Fragment
from mmsp_core.testing import assert_stream_grammar, outcome, run
from mmsp_core.testing.strategies import client_streams

USAGE = UsageMetadata(cached_tokens=0, prompt_tokens=10, thoughts_tokens=None, response_tokens=5)
STOP = UniEvent("stop", (), USAGE, FinishReason.STOP)
PNG = b"\x89PNG\r\n\x1a\n"

Outcome = tuple[list[UniEvent], BaseException | None]


def iid(item_id: str, **fidelity: Any) -> dict[str, Any]:
    """A client-stream fidelity: the item id plus any public fidelity keys."""
    return {"item_id": item_id, **fidelity}


def delta(*items: Any) -> UniEvent:
    """A client delta event holding ``items``."""
    return UniEvent("delta", tuple(items))


def ticking(start: int = 1000) -> Callable[[], int]:
    """A clock returning start, start + 1, ..."""
    ticks: Iterator[int] = iter(range(start, 1 << 62))
    return lambda: next(ticks)


def direct(events: Sequence[UniEvent], **options: Any) -> Outcome:
    """Push ``events`` into a fresh ``StreamItems``, then ``end`` and ``close``."""
    finalizer = StreamItems(client="test-client", clock=ticking(), **options)
    out: list[UniEvent] = []
    try:
        for event in events:
            out += finalizer.push(event)
        out += finalizer.end()
        out.append(finalizer.close())
    except MMSPError as exc:
        return out, exc
    return out, None


def sse_body(events: Sequence[UniEvent]) -> bytes:
    """The client events as a JSON-events SSE body."""
    return b"".join(b"data: " + json.dumps(to_wire(e)).encode() + b"\n\n" for e in events)


def piped(events: Sequence[UniEvent]) -> Outcome:
    """Run ``events`` as a JSON-events SSE body through a ``StreamPipeline``."""
    pipeline = StreamPipeline(JsonEventsMachine(), client="test-client", clock=ticking())
    return run(pipeline, [sse_body(events)])


def finalize(events: Sequence[UniEvent]) -> Outcome:
    """Run ``events`` both ways; check both agree; return the direct outcome."""
    result = direct(events)
    assert outcome(*piped(events)) == outcome(*result)
    return result


def items(events: Sequence[UniEvent]) -> list[Any]:
    """The single item of each delta event (the stop must be last, and is left out)."""
    assert all(e.event_type == "delta" and len(e.content_items) == 1 for e in events)
    return [e.content_items[0] for e in events]


def complete(events: Sequence[UniEvent]) -> list[Any]:
    """Finalize a stream that must end with its stop; return the delta items."""
    out, error = finalize([*events, STOP])
    assert error is None, error
    assert_stream_grammar(out)
    assert out[-1].usage_metadata == USAGE
    assert out[-1].finish_reason == "stop"
    return items(out[:-1])


def failing(events: Sequence[UniEvent], error_type: type[MMSPError]) -> tuple[list[Any], Any]:
    """Finalize a stream that must end with ``error_type``; return (delta items, error)."""
    out, error = finalize(events)
    assert isinstance(error, error_type), (out, error)
    return items(out), error


# -- the seed's example ---------------------------------------------------------------------


def test_seed_example_thinking_then_tool_call() -> None:
    """The seed's Claude turn: a signature after the thinking text, then a tool call."""
    client = [
        delta(ThinkingDelta("Let me", iid("0"))),
        delta(ThinkingDelta(" check", iid("0"))),
        delta(ThinkingDelta("", iid("0", signature="..."))),
        delta(),  # content_block_stop: nothing universal
        delta(ToolCallDelta("get_weather", "toolu_1", "", iid("1"))),
        delta(ToolCallDelta("", "", '{"location": ', iid("1"))),
        delta(ToolCallDelta("", "", '"Paris"}', iid("1"))),
        UniEvent("stop", (), USAGE, None),
        UniEvent("stop", (), None, FinishReason.TOOL_CALL),
    ]
    out, error = finalize(client)
    assert error is None
    assert items(out[:-1]) == [
        ThinkingDelta("Let me"),
        ThinkingDelta(" check"),
        ThinkingDelta("", {"signature": "..."}),
        ThinkingDone("Let me check", {"signature": "..."}),
        ToolCallDelta("get_weather", "toolu_1", ""),
        ToolCallDelta("", "", '{"location": '),
        ToolCallDelta("", "", '"Paris"}'),
        ToolCallDone("get_weather", "toolu_1", {"location": "Paris"}),
    ]
    stop = out[-1]
    assert (stop.event_type, stop.content_items) == ("stop", ())
    assert (stop.usage_metadata, stop.finish_reason) == (USAGE, "tool_call")
    assert_stream_grammar(out)


def test_created_at_comes_from_the_clock_on_every_public_event() -> None:
    client = [delta(TextDelta("a")), delta(TextDelta("b")), STOP]
    finalizer = StreamItems(client="c", clock=lambda: 1694502400000)
    out = finalizer.push(client[0]) + finalizer.push(client[1]) + finalizer.push(client[2])
    out += finalizer.end()
    out.append(finalizer.close())
    assert len(out) == 4
    assert all(e.created_at == 1694502400000 for e in out)
    # Each public event is stamped when it is emitted, the .done and the stop included.
    ticked, _ = finalize(client)
    assert [e.created_at for e in ticked] == [1000, 1001, 1002, 1003]


# -- which item a fragment belongs to (spec 02 §4 step 3) -----------------------------------


def test_items_are_grouped_by_kind() -> None:
    client = [
        delta(TextDelta("a"), TextDelta("b")),
        delta(ThinkingDelta("c")),
        delta(ThinkingDelta("d")),
        delta(TextDelta("e")),
    ]
    assert complete(client) == [
        TextDelta("a"),
        TextDelta("b"),
        TextDone("ab"),
        ThinkingDelta("c"),
        ThinkingDelta("d"),
        ThinkingDone("cd"),
        TextDelta("e"),
        TextDone("e"),
    ]


def test_item_id_splits_items_of_kinds_without_header_fields() -> None:
    client = [
        delta(TextDelta("a", iid("A"))),
        delta(TextDelta("b", iid("B"))),
        delta(ThinkingDelta("c", iid("C"))),
        delta(ThinkingDelta("d", iid("D"))),
        delta(InlineDataDelta(b"\x01", "audio/pcm", iid("E"))),
        delta(InlineDataDelta(b"\x02", "audio/pcm", iid("F"))),
    ]
    assert complete(client) == [
        TextDelta("a"),
        TextDone("a"),
        TextDelta("b"),
        TextDone("b"),
        ThinkingDelta("c"),
        ThinkingDone("c"),
        ThinkingDelta("d"),
        ThinkingDone("d"),
        InlineDataDelta(b"\x01", "audio/pcm"),
        InlineDataDone(b"\x01", "audio/pcm"),
        InlineDataDelta(b"\x02", "audio/pcm"),
        InlineDataDone(b"\x02", "audio/pcm"),
    ]


def test_audio_chunks_with_one_id_are_one_item() -> None:
    client = [
        delta(InlineDataDelta(b"\x01\x02", "audio/pcm", iid("A"))),
        delta(InlineDataDelta(b"\x03", "audio/pcm", iid("A"))),
    ]
    assert complete(client) == [
        InlineDataDelta(b"\x01\x02", "audio/pcm"),
        InlineDataDelta(b"\x03", "audio/pcm"),
        InlineDataDone(b"\x01\x02\x03", "audio/pcm"),
    ]


def test_a_fragment_without_id_continues_the_item_of_its_kind() -> None:
    client = [
        delta(TextDelta("a", iid("A"))),
        delta(TextDelta("b")),
        delta(TextDelta("c", iid("A"))),
    ]
    assert complete(client) == [TextDelta("a"), TextDelta("b"), TextDelta("c"), TextDone("abc")]


def test_an_item_without_id_adopts_the_first_id_it_sees() -> None:
    # The item adopts "A" from its second fragment, so "B" then begins a new item.
    client = [
        delta(TextDelta("a")),
        delta(TextDelta("b", iid("A"))),
        delta(TextDelta("c", iid("B"))),
    ]
    assert complete(client) == [
        TextDelta("a"),
        TextDelta("b"),
        TextDone("ab"),
        TextDelta("c"),
        TextDone("c"),
    ]


def test_a_tool_call_delta_without_name_continues_the_call_whatever_its_id() -> None:
    client = [
        delta(ToolCallDelta("f", "call_1", '{"a": ', iid("0"))),
        delta(ToolCallDelta("", "call_2", "1", iid("1"))),
        delta(ToolCallDelta("", "", "}", iid("2"))),
    ]
    assert complete(client) == [
        ToolCallDelta("f", "call_1", '{"a": '),
        ToolCallDelta("", "", "1"),
        ToolCallDelta("", "", "}"),
        ToolCallDone("f", "call_1", {"a": 1}),
    ]


def test_a_tool_call_delta_with_a_name_begins_a_new_call() -> None:
    client = [
        delta(ToolCallDelta("f", "call_1", "{}", iid("X"))),
        delta(ToolCallDelta("g", "call_2", '{"b": 2}', iid("X"))),
    ]
    assert complete(client) == [
        ToolCallDelta("f", "call_1", "{}"),
        ToolCallDone("f", "call_1", {}),
        ToolCallDelta("g", "call_2", '{"b": 2}'),
        ToolCallDone("g", "call_2", {"b": 2}),
    ]


def test_every_image_is_an_item_of_its_own() -> None:
    client = [
        delta(InlineDataDelta(PNG, "image/png", iid("A"))),
        delta(InlineDataDelta(b"jpeg", "image/jpeg", iid("A"))),
        delta(InlineDataDelta(b"\x00", "image/png")),
    ]
    assert complete(client) == [
        InlineDataDelta(PNG, "image/png"),
        InlineDataDone(PNG, "image/png"),
        InlineDataDelta(b"jpeg", "image/jpeg"),
        InlineDataDone(b"jpeg", "image/jpeg"),
        InlineDataDelta(b"\x00", "image/png"),
        InlineDataDone(b"\x00", "image/png"),
    ]


def test_every_inline_thinking_delta_is_an_item_of_its_own() -> None:
    client = [
        delta(InlineThinkingDelta(b"1", "image/png", iid("A"))),
        delta(InlineThinkingDelta(b"2", "image/png", iid("A"))),
        delta(InlineThinkingDelta(b"3", "audio/pcm")),
        delta(TextDelta("answer")),
    ]
    assert complete(client) == [
        InlineThinkingDelta(b"1", "image/png"),
        InlineThinkingDone(b"1", "image/png"),
        InlineThinkingDelta(b"2", "image/png"),
        InlineThinkingDone(b"2", "image/png"),
        InlineThinkingDelta(b"3", "audio/pcm"),
        InlineThinkingDone(b"3", "audio/pcm"),
        TextDelta("answer"),
        TextDone("answer"),
    ]


def test_every_embedding_is_an_item_and_an_empty_vector_is_still_emitted() -> None:
    client = [
        delta(EmbeddingDelta((0.5, -1.0))),
        delta(EmbeddingDelta(())),
        delta(EmbeddingDelta((2.0,))),
    ]
    assert complete(client) == [
        EmbeddingDelta((0.5, -1.0)),
        EmbeddingDone((0.5, -1.0)),
        EmbeddingDelta(()),
        EmbeddingDone(()),
        EmbeddingDelta((2.0,)),
        EmbeddingDone((2.0,)),
    ]


# -- empty fragments (spec 02 §4 step 6) ------------------------------------------------------


def test_empty_fragments_are_not_emitted() -> None:
    client = [
        delta(TextDelta("")),
        delta(TextDelta("a"), TextDelta("")),
        delta(TextDelta("b")),
        delta(ToolCallDelta("f", "call_1", "")),
        delta(ToolCallDelta("", "", "")),
        delta(InlineDataDelta(b"", "audio/pcm")),
        delta(InlineDataDelta(b"x", "audio/pcm")),
        delta(InlineDataDelta(b"", "audio/pcm")),
    ]
    assert complete(client) == [
        TextDelta("a"),
        TextDelta("b"),
        TextDone("ab"),
        ToolCallDelta("f", "call_1", ""),
        ToolCallDone("f", "call_1", {}),
        InlineDataDelta(b"x", "audio/pcm"),
        InlineDataDone(b"x", "audio/pcm"),
    ]


def test_an_item_that_only_received_empty_fragments_has_no_done() -> None:
    client = [
        delta(ThinkingDelta("", iid("A"))),
        delta(ThinkingDelta("", iid("A"))),
        delta(TextDelta("x", iid("B"))),
    ]
    assert complete(client) == [TextDelta("x"), TextDone("x")]


def test_an_empty_delta_under_a_new_id_closes_the_item_without_visible_output() -> None:
    finalizer = StreamItems(client="c", clock=ticking())
    assert items(finalizer.push(delta(TextDelta("a", iid("A"))))) == [TextDelta("a")]
    # Responses' output_item.added: an empty fragment of the next item.
    assert items(finalizer.push(delta(TextDelta("", iid("B"))))) == [TextDone("a")]
    assert items(finalizer.push(delta(TextDelta("b", iid("B"))))) == [TextDelta("b")]
    assert finalizer.push(STOP) == []
    assert items(finalizer.end()) == [TextDone("b")]
    client = [
        delta(TextDelta("a", iid("A"))),
        delta(TextDelta("", iid("B"))),
        delta(TextDelta("b", iid("B"))),
    ]
    assert complete(client) == [TextDelta("a"), TextDone("a"), TextDelta("b"), TextDone("b")]


# -- fidelity (spec 02 §4 steps 3 and 5) -----------------------------------------------------


def test_a_fidelity_only_fragment_of_another_kind_under_the_same_id_joins_the_open_item() -> None:
    """Gemini Interactions: a thought step's signature arrives after its interim image."""
    client = [
        delta(ThinkingDelta("plan", iid("S"))),
        delta(InlineThinkingDelta(PNG, "image/png", iid("S"))),
        delta(ThinkingDelta("", iid("S", signature="sig"))),
        delta(TextDelta("answer", iid("T"))),
    ]
    assert complete(client) == [
        ThinkingDelta("plan"),
        ThinkingDone("plan"),
        InlineThinkingDelta(PNG, "image/png"),
        InlineThinkingDelta(b"", "image/png", {"signature": "sig"}),
        InlineThinkingDone(PNG, "image/png", {"signature": "sig"}),
        TextDelta("answer"),
        TextDone("answer"),
    ]


def test_a_fidelity_only_fragment_joining_a_tool_call_carries_no_name_or_id() -> None:
    client = [
        delta(ToolCallDelta("f", "call_1", "{}", iid("X"))),
        delta(TextDelta("", iid("X", signature="s"))),
    ]
    assert complete(client) == [
        ToolCallDelta("f", "call_1", "{}"),
        ToolCallDelta("", "", "", {"signature": "s"}),
        ToolCallDone("f", "call_1", {}, {"signature": "s"}),
    ]


@pytest.mark.parametrize(
    "tail",
    [
        ThinkingDelta("", iid("OTHER", signature="sig")),  # another id
        ThinkingDelta("", {"signature": "sig"}),  # no id
        ThinkingDelta("more", iid("S", signature="sig")),  # not empty
    ],
    ids=["other-id", "no-id", "not-empty"],
)
def test_a_fragment_of_another_kind_otherwise_begins_its_own_item(tail: ThinkingDelta) -> None:
    client = [delta(TextDelta("a", iid("S"))), delta(tail), delta(TextDelta("z", iid("Z")))]
    assert complete(client) == [
        TextDelta("a"),
        TextDone("a"),
        ThinkingDelta(tail.thinking, {"signature": "sig"}),
        ThinkingDone(tail.thinking, {"signature": "sig"}),
        TextDelta("z"),
        TextDone("z"),
    ]


def test_an_empty_fragment_of_another_kind_without_fidelity_closes_the_item() -> None:
    # Not a fidelity-only tail (it brings no fidelity): it begins an item of its own kind,
    # which emits nothing, so the text after it is a new item.
    client = [
        delta(TextDelta("a", iid("S"))),
        delta(ThinkingDelta("", iid("S"))),
        delta(TextDelta("b", iid("S"))),
    ]
    assert complete(client) == [TextDelta("a"), TextDone("a"), TextDelta("b"), TextDone("b")]


def test_item_id_is_stripped_and_an_empty_fidelity_is_dropped() -> None:
    client = [delta(TextDelta("a", iid("A"))), delta(TextDelta("b", {}))]
    assert complete(client) == [TextDelta("a"), TextDelta("b"), TextDone("ab")]


def test_a_repeated_fidelity_goes_out_once_and_the_done_carries_it() -> None:
    client = [
        delta(TextDelta("a", iid("A", phase="final"))),
        delta(TextDelta("b", iid("A", phase="final"))),
        delta(TextDelta("", iid("A", phase="final"))),
    ]
    assert complete(client) == [
        TextDelta("a", {"phase": "final"}),
        TextDelta("b"),
        TextDone("ab", {"phase": "final"}),
    ]


def test_two_different_fidelity_payloads_in_one_item_break_the_protocol() -> None:
    client = [
        delta(ThinkingDelta("a", iid("A", signature="one"))),
        delta(ThinkingDelta("b", iid("A", signature="two"))),
        STOP,
    ]
    before, error = failing(client, StreamProtocolError)
    assert before == [ThinkingDelta("a", {"signature": "one"})]
    assert error.client == "test-client"
    assert str(error).startswith("test-client broke the streaming protocol: ")
    assert "two different fidelity" in str(error)


# -- tool calls (spec 02 §4 steps 7-8, 08 D29, D42) --------------------------------------------


def test_a_repeated_tool_call_id_on_a_continuing_fragment_is_blanked() -> None:
    client = [
        delta(ToolCallDelta("f", "call_1", '{"a"', iid("0"))),
        delta(ToolCallDelta("", "call_1", ": 1}", iid("0"))),
    ]
    assert complete(client) == [
        ToolCallDelta("f", "call_1", '{"a"'),
        ToolCallDelta("", "", ": 1}"),
        ToolCallDone("f", "call_1", {"a": 1}),
    ]


@pytest.mark.parametrize(
    "first",
    [ToolCallDelta("", "call_1", "{}"), ToolCallDelta("f", "", "{}"), ToolCallDelta("", "", "{}")],
    ids=["no-name", "no-id", "neither"],
)
def test_a_first_tool_call_fragment_without_name_or_id_breaks_the_protocol(
    first: ToolCallDelta,
) -> None:
    # D50: the bad fragment raises before the open text item's .done goes out.
    before, error = failing([delta(TextDelta("a")), delta(first), STOP], StreamProtocolError)
    assert before == [TextDelta("a")]
    assert "tool_call_id" in str(error)


# -- what a client may not send (spec 02 §7) --------------------------------------------------


@pytest.mark.parametrize(
    "item",
    [TextDone("a"), ThinkingDone("t"), ToolCallDone("f", "c", {}), EmbeddingDone((1.0,))],
    ids=lambda i: i.type,
)
def test_a_done_item_from_a_client_breaks_the_protocol(item: Any) -> None:
    before, error = failing([delta(TextDelta("a")), delta(item), STOP], StreamProtocolError)
    assert before == [TextDelta("a")]
    assert item.type in str(error)


@pytest.mark.parametrize(
    "event",
    [
        UniEvent("delta", (), USAGE, None),
        UniEvent("delta", (), None, FinishReason.STOP),
        UniEvent("delta", (), UsageMetadata(), None),
    ],
    ids=["usage", "finish", "empty-usage"],
)
def test_usage_or_finish_on_a_delta_event_breaks_the_protocol(event: UniEvent) -> None:
    before, error = failing([delta(TextDelta("a")), event, STOP], StreamProtocolError)
    assert before == [TextDelta("a")]
    assert "usage_metadata or finish_reason" in str(error)
    # Pushed whole, an event with an item is refused as a whole (each push is all-or-nothing).
    bad = UniEvent("delta", (TextDelta("b"),), USAGE, None)
    out, error = direct([delta(TextDelta("a")), bad, STOP])
    assert isinstance(error, StreamProtocolError)
    assert items(out) == [TextDelta("a")]


# -- usage and finish reason (spec 02 §6, 08 D7) -----------------------------------------------


def test_usage_and_finish_are_merged_field_by_field() -> None:
    client = [
        UniEvent("stop", (), UsageMetadata(None, 100, 7, None), FinishReason.LENGTH),
        delta(TextDelta("a")),
        UniEvent("stop", (), UsageMetadata(0, 100, None, None), None),
        UniEvent("stop", (), UsageMetadata(None, None, 0, None), FinishReason.STOP),
        UniEvent("stop", (), UsageMetadata(), None),
    ]
    out, error = finalize(client)
    assert error is None
    stop = out[-1]
    # Later replaces earlier; 0 stays 0; never summed; None never erases; unreported is None.
    assert stop.usage_metadata == UsageMetadata(0, 100, 0, None)
    assert stop.finish_reason == FinishReason.STOP


def test_a_later_finish_reason_replaces_the_earlier_and_none_keeps_it() -> None:
    client = [
        delta(TextDelta("a")),
        UniEvent("stop", (), None, FinishReason.TOOL_CALL),
        UniEvent("stop", (), UsageMetadata(), None),
    ]
    out, error = finalize(client)
    assert error is None
    assert out[-1].finish_reason == FinishReason.TOOL_CALL
    assert out[-1].usage_metadata == UsageMetadata(None, None, None, None)


def test_items_on_a_client_stop_event_are_emitted() -> None:
    client = [UniEvent("stop", (TextDelta("a"), TextDelta("b")), USAGE, FinishReason.STOP)]
    out, error = finalize(client)
    assert error is None
    assert items(out[:-1]) == [TextDelta("a"), TextDelta("b"), TextDone("ab")]


# -- end of stream (spec 02 §7, 08 D33) ----------------------------------------------------


@pytest.mark.parametrize(
    ("tail", "missing", "usage", "finish"),
    [
        ([], ("usage_metadata", "finish_reason"), None, None),
        (
            [UniEvent("stop", (), None, FinishReason.LENGTH)],
            ("usage_metadata",),
            None,
            FinishReason.LENGTH,
        ),
        (
            [
                UniEvent("stop", (), UsageMetadata(prompt_tokens=3), None),
                UniEvent("stop", (), UsageMetadata(response_tokens=4), None),
            ],
            ("finish_reason",),
            UsageMetadata(prompt_tokens=3, response_tokens=4),
            None,
        ),
    ],
    ids=["nothing", "no-usage", "no-finish"],
)
def test_a_stream_without_usage_or_finish_is_incomplete(
    tail: list[UniEvent],
    missing: tuple[str, ...],
    usage: UsageMetadata | None,
    finish: FinishReason | None,
) -> None:
    # The open text item is closed with its .done before the error.
    before, error = failing([delta(TextDelta("a")), *tail], IncompleteStreamError)
    assert before == [TextDelta("a"), TextDone("a")]
    assert error.client == "test-client"
    assert error.missing == missing
    assert error.usage_metadata == usage
    assert error.finish_reason == finish
    assert str(error) == f"test-client's stream ended without {' and '.join(missing)}."


@pytest.mark.parametrize("arguments", ['{"a": 1}', '{"a": '], ids=["whole", "cut"])
def test_a_stream_cut_inside_a_tool_call_is_incomplete_without_its_done(arguments: str) -> None:
    client = [
        delta(ToolCallDelta("f", "call_1", arguments)),
        UniEvent("stop", (), USAGE, None),
    ]
    before, error = failing(client, IncompleteStreamError)
    assert before == [ToolCallDelta("f", "call_1", arguments)]
    assert error.missing == ("finish_reason",)
    assert error.usage_metadata == USAGE


def test_nothing_but_thinking_is_an_empty_response() -> None:
    client = [
        delta(ThinkingDelta("hmm")),
        UniEvent("stop", (), USAGE, FinishReason.LENGTH),
    ]
    before, error = failing(client, EmptyResponseError)
    assert before == [ThinkingDelta("hmm"), ThinkingDone("hmm")]
    assert (error.client, error.finish_reason, error.usage_metadata) == (
        "test-client",
        FinishReason.LENGTH,
        USAGE,
    )
    assert "no content other than thinking" in str(error)


def test_nothing_but_inline_thinking_is_an_empty_response() -> None:
    client = [delta(InlineThinkingDelta(PNG, "image/png")), STOP]
    before, _ = failing(client, EmptyResponseError)
    assert before == [InlineThinkingDelta(PNG, "image/png"), InlineThinkingDone(PNG, "image/png")]


@pytest.mark.parametrize("finish", list(FinishReason))
def test_no_items_at_all_is_an_empty_response_whatever_the_finish(finish: FinishReason) -> None:
    client = [delta(), delta(TextDelta("")), UniEvent("stop", (), USAGE, finish)]
    before, error = failing(client, EmptyResponseError)
    assert before == []
    assert error.finish_reason == finish


def test_a_missing_usage_wins_over_an_empty_response() -> None:
    failing([delta(ThinkingDelta("t"))], IncompleteStreamError)


# -- tool-call arguments (spec 02 §5, spec 03 §2) -----------------------------------------------


def test_bad_arguments_raise_in_place_of_the_done_when_the_next_item_begins() -> None:
    client = [
        delta(ToolCallDelta("f", "call_1", '{"a": 1')),
        delta(TextDelta("next")),
        STOP,
    ]
    before, error = failing(client, ToolCallArgumentParseError)
    assert before == [ToolCallDelta("f", "call_1", '{"a": 1')]
    assert (error.client, error.tool_name, error.tool_call_id) == ("test-client", "f", "call_1")
    assert (error.raw_arguments_length, error.raw_arguments_preview) == (7, '{"a": 1')


def test_bad_arguments_raise_at_the_end_once_usage_and_finish_arrived() -> None:
    client = [delta(ToolCallDelta("f", "call_1", "{")), delta(ToolCallDelta("", "", "]")), STOP]
    before, error = failing(client, ToolCallArgumentParseError)
    assert before == [ToolCallDelta("f", "call_1", "{"), ToolCallDelta("", "", "]")]
    assert (error.raw_arguments_length, error.raw_arguments_preview) == (2, "{]")


@pytest.mark.parametrize("raw", ["[1, 2]", "null", "42", '"text"', "true"])
def test_arguments_that_are_not_an_object_raise(raw: str) -> None:
    _, error = failing([delta(ToolCallDelta("f", "c", raw)), STOP], ToolCallArgumentParseError)
    assert error.raw_arguments_preview == raw
    assert error.detail == "Expected a JSON object."


def test_empty_arguments_are_an_empty_object() -> None:
    assert complete([delta(ToolCallDelta("f", "c", ""))]) == [
        ToolCallDelta("f", "c", ""),
        ToolCallDone("f", "c", {}),
    ]


def _letters(n: int) -> str:
    return "".join(chr(ord("a") + i % 26) for i in range(n))


@pytest.mark.parametrize(
    ("raw", "preview"),
    [
        (_letters(160), _letters(160)),
        (_letters(161), _letters(161)[:72] + "...[truncated]..." + _letters(161)[-72:]),
        (_letters(5000), _letters(5000)[:72] + "...[truncated]..." + _letters(5000)[-72:]),
    ],
    ids=["160", "161", "5000"],
)
def test_the_arguments_preview_is_whole_up_to_160_characters(raw: str, preview: str) -> None:
    _, error = failing([delta(ToolCallDelta("f", "c", raw)), STOP], ToolCallArgumentParseError)
    assert error.raw_arguments_length == len(raw)
    assert error.raw_arguments_preview == preview


def test_deeply_nested_arguments_raise_a_parse_error() -> None:
    raw = "[" * 100_000
    _, error = failing([delta(ToolCallDelta("f", "c", raw)), STOP], ToolCallArgumentParseError)
    assert error.raw_arguments_length == 100_000


# -- order of errors and events (08 D50, 09) -------------------------------------------------


def test_a_bad_fragment_raises_without_the_previous_items_done() -> None:
    # The fragment would close the tool call (whose .done is fine) but is itself bad.
    client = [delta(ToolCallDelta("f", "c", "{}")), delta(TextDone("x")), STOP]
    before, _ = failing(client, StreamProtocolError)
    assert before == [ToolCallDelta("f", "c", "{}")]


@pytest.mark.parametrize("arguments", ["\ud83d", "{\ud83d"])
def test_a_first_call_fragment_without_headers_is_refused_even_when_it_holds_a_surrogate(
    arguments: str,
) -> None:
    # The high surrogate is held back for the next fragment (08 D55); the call still has no
    # name and id, which its first fragment must carry (was: AttributeError at the close).
    before, error = failing([delta(ToolCallDelta("", "", arguments, iid("0"))), STOP],
                            StreamProtocolError)
    assert before == []
    assert "must carry the name and the tool_call_id" in str(error)


def test_an_item_may_not_grow_past_max_item_size() -> None:
    ok = [delta(TextDelta("12345")), delta(TextDelta("67890"))]
    out, error = direct([*ok, STOP], max_item_size=10)
    assert error is None
    assert items(out[:-1])[-1] == TextDone("1234567890")
    out, error = direct([*ok, delta(TextDelta("x")), STOP], max_item_size=10)
    assert isinstance(error, StreamLimitError)
    assert (error.limit, error.size) == (10, 11)
    assert items(out) == [TextDelta("12345"), TextDelta("67890")]
    # A new item starts counting from zero; bytes count as bytes.
    media = [delta(InlineDataDelta(b"\x00" * 4, "image/png")) for _ in range(3)]
    _, error = direct([*media, STOP], max_item_size=4)
    assert error is None
    _, error = direct([delta(InlineDataDelta(b"\x00" * 5, "audio/pcm")), STOP], max_item_size=4)
    assert isinstance(error, StreamLimitError)


# -- lifecycle ---------------------------------------------------------------------------------


def _finalizer() -> StreamItems:
    return StreamItems(client="c", clock=ticking())


def test_wrong_order_of_calls_raises_runtime_error() -> None:
    finalizer = _finalizer()
    with pytest.raises(RuntimeError):
        finalizer.close()
    finalizer = _finalizer()
    finalizer.push(delta(TextDelta("a")))
    finalizer.push(STOP)
    finalizer.end()
    with pytest.raises(RuntimeError):
        finalizer.push(STOP)
    with pytest.raises(RuntimeError):
        finalizer.end()
    assert finalizer.close().event_type == "stop"
    with pytest.raises(RuntimeError):
        finalizer.close()


@pytest.mark.parametrize("method", ["push", "end", "close"])
def test_every_call_after_an_error_raises_runtime_error(method: str) -> None:
    finalizer = _finalizer()
    with pytest.raises(StreamProtocolError):
        finalizer.push(delta(TextDone("a")))
    call: Callable[[], object] = {
        "push": lambda: finalizer.push(delta(TextDelta("a"))),
        "end": finalizer.end,
        "close": finalizer.close,
    }[method]
    with pytest.raises(RuntimeError):
        call()


def test_a_close_that_raises_poisons_the_finalizer() -> None:
    finalizer = _finalizer()
    finalizer.end()
    with pytest.raises(IncompleteStreamError):
        finalizer.close()
    with pytest.raises(RuntimeError):
        finalizer.close()


# -- generated client streams -------------------------------------------------------------------


def _expected(stream: list[UniEvent]) -> tuple[list[Any], UsageMetadata, Any]:
    """The done items, usage and finish of a ``client_streams()`` stream, computed directly.

    Every item of those streams carries its own ``item_id``; a text or thinking item's
    fidelity arrives on its last fragment, a tool call's on its first.
    """
    groups: dict[str, list[Any]] = {}
    usage: UsageMetadata | None = None
    finish = None
    for event in stream:
        for item in event.content_items:
            groups.setdefault(item.fidelity["item_id"], []).append(item)
        if event.usage_metadata is not None:
            usage = (usage or UsageMetadata()).merge(event.usage_metadata)
        finish = event.finish_reason or finish
    done: list[Any] = []
    for fragments in groups.values():
        fidelity = {k: v for f in fragments for k, v in f.fidelity.items() if k != "item_id"}
        first = fragments[0]
        if isinstance(first, ToolCallDelta):
            arguments = json.loads("".join(f.arguments for f in fragments))
            done.append(ToolCallDone(first.name, first.tool_call_id, arguments, fidelity or None))
        elif isinstance(first, TextDelta):
            done.append(TextDone("".join(f.text for f in fragments), fidelity or None))
        else:
            done.append(ThinkingDone("".join(f.thinking for f in fragments), fidelity or None))
    assert usage is not None
    return done, usage, finish


@given(client_streams())
def test_generated_client_streams_give_a_grammatical_public_stream(
    stream: list[UniEvent],
) -> None:
    out, error = piped(stream)
    assert error is None, error
    assert_stream_grammar(out)
    done, usage, finish = _expected(stream)
    assert [i for i in items(out[:-1]) if i.type.endswith(".done")] == done
    assert (out[-1].usage_metadata, out[-1].finish_reason) == (usage, finish)
    assert outcome(*direct(stream)) == outcome(out, error)


# -- fragments: the machines' cheap deltas (08 D65) -----------------------------------------

_growing = st.text(alphabet=st.sampled_from(["a", "é", "\ud83d", "\ude00", "{", "}"]),
                   max_size=4)
_item_ids = st.sampled_from(["0", "1", ""])


def _deltas() -> st.SearchStrategy[Any]:
    """Delta items of the three text kinds, most of them fragment-shaped, some not."""
    identity = _item_ids.map(lambda i: {"item_id": i})
    fidelity = identity | _item_ids.map(lambda i: {"item_id": i, "signature": "s"})
    headers = st.sampled_from(["", "f"])
    return st.one_of(
        st.builds(TextDelta, _growing, fidelity),
        st.builds(ThinkingDelta, _growing, fidelity),
        st.builds(ToolCallDelta, headers, headers, _growing, fidelity),
    )


def as_fragment(event: UniEvent) -> UniEvent | Fragment:
    """``event`` as the ``Fragment`` a machine would build for it, when it has that shape: one
    text, thinking or arguments delta with no header fields and only its identity."""
    if event.event_type != "delta" or len(event.content_items) != 1:
        return event
    item = event.content_items[0]
    kinds = {TextDelta: TEXT, ThinkingDelta: THINKING, ToolCallDelta: TOOL_CALL}
    if type(item) not in kinds or item.fidelity is None or list(item.fidelity) != ["item_id"]:
        return event
    if isinstance(item, ToolCallDelta) and (item.name or item.tool_call_id):
        return event
    kind = kinds[type(item)]
    fragment = Fragment(kind, kind.growing(item), item.fidelity["item_id"])
    assert fragment.item() == item
    return fragment


@given(st.lists(_deltas(), max_size=12), st.sampled_from([4, 64 << 20]))
def test_a_fragment_is_finalized_exactly_as_the_delta_it_stands_for(
    items_: list[Any], max_item_size: int
) -> None:
    events = [delta(item) for item in items_] + [STOP]
    fragments = [as_fragment(event) for event in events]
    assert outcome(*direct(events, max_item_size=max_item_size)) == outcome(
        *direct(fragments, max_item_size=max_item_size)  # type: ignore[arg-type]
    )


@given(client_streams())
def test_generated_streams_of_fragments_finalize_as_their_deltas(stream: list[UniEvent]) -> None:
    single = [delta(item) for event in stream for item in event.content_items]
    single += [event for event in stream if event.event_type == "stop"]
    fragments = [as_fragment(event) for event in single]
    assert outcome(*direct(fragments)) == outcome(*direct(single))  # type: ignore[arg-type]
