"""No public value ever holds a lone surrogate (08 D55): the finalizer repairs them once.

A provider's JSON may escape one character as a surrogate pair split across two events
(``"\\ud83d"`` then ``"\\ude00"``); each event's string then holds a lone surrogate, which UTF-8
cannot encode. The finalizer holds a trailing high surrogate back for the next fragment of the
same item, replaces any other lone surrogate by U+FFFD, and emits a held surrogate as one more
``"\\ufffd"`` fragment before the ``.done``, so the ``.done`` is still the join of the fragments.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import adapters
from mmsp_core import (
    InlineDataDelta,
    StreamItems,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UniEvent,
    UsageMetadata,
    to_wire,
)
from mmsp_core.testing import assert_stream_grammar

USAGE = UsageMetadata(0, 1, 0, 1)


def finalize(*items: Any) -> list[UniEvent]:
    stream = StreamItems(client="c", clock=lambda: 0)
    out: list[UniEvent] = []
    for item in items:
        out += stream.push(UniEvent("delta", (item,)))
    out += stream.push(UniEvent("stop", (), USAGE, "stop"))
    out += stream.end()
    out.append(stream.close())
    return out


def fragments_and_done(events: list[UniEvent]) -> tuple[list[str], Any]:
    deltas = [e.content_items[0] for e in events if e.content_items]
    texts = [getattr(d, "text", getattr(d, "thinking", getattr(d, "arguments", None)))
             for d in deltas if d.type.endswith(".delta")]
    [done] = [d for d in deltas if d.type.endswith(".done")]
    return texts, done


def encodable(events: list[UniEvent]) -> bool:
    return all(json.dumps(to_wire(e), ensure_ascii=False).encode("utf-8") for e in events)


def test_a_pair_split_across_two_fragments_becomes_one_character() -> None:
    events = finalize(TextDelta("ab\ud83d"), TextDelta("\ude00cd"))
    texts, done = fragments_and_done(events)
    assert texts == ["ab", "\U0001f600cd"]
    assert done.text == "ab\U0001f600cd"
    assert encodable(events)
    assert_stream_grammar(events)


def test_a_fragment_that_is_only_a_high_surrogate_emits_nothing_yet() -> None:
    texts, done = fragments_and_done(finalize(TextDelta("\ud83d"), TextDelta("\ude00")))
    assert texts == ["\U0001f600"]
    assert done.text == "\U0001f600"


def test_lone_surrogates_elsewhere_become_replacement_characters() -> None:
    texts, done = fragments_and_done(finalize(TextDelta("\ude00x"), TextDelta("y\ud83dz")))
    assert texts == ["\ufffdx", "y\ufffdz"]
    assert done.text == "\ufffdxy\ufffdz"


def test_a_high_surrogate_held_when_the_item_ends_is_one_more_fragment() -> None:
    events = finalize(TextDelta("hi\ud83d", {"item_id": "a"}),
                      ThinkingDelta("next", {"item_id": "b"}))
    deltas = [e.content_items[0] for e in events if e.content_items]
    assert [(d.type, getattr(d, "text", None)) for d in deltas[:3]] == [
        ("text.delta", "hi"), ("text.delta", "\ufffd"), ("text.done", "hi\ufffd")]
    texts, done = fragments_and_done(finalize(TextDelta("ok\udbff")))  # held at end()
    assert texts == ["ok", "\ufffd"]
    assert done.text == "ok\ufffd"


def test_tool_call_arguments_are_repaired_before_and_after_parsing() -> None:
    events = finalize(ToolCallDelta("f", "id1", '{"a": "\ud83d'), ToolCallDelta("", "", '\ude00"}'))
    texts, done = fragments_and_done(events)
    assert texts == ['{"a": "', '\U0001f600"}']
    assert done.arguments == {"a": "\U0001f600"}
    # An escaped lone surrogate inside the arguments JSON parses into one: replaced too.
    _, done = fragments_and_done(finalize(ToolCallDelta("f", "id1", '{"\\udc00": ["\\ud83d"]}')))
    assert done.arguments == {"\ufffd": ["\ufffd"]}


def test_fidelity_strings_are_repaired() -> None:
    events = finalize(ThinkingDelta("t", {"item_id": "0", "signature": "s\ud800g"}),
                      TextDelta("answer", {"item_id": "1"}))
    thinking_done = next(e.content_items[0] for e in events
                         if e.content_items and e.content_items[0].type == "thinking.done")
    assert thinking_done.fidelity == {"signature": "s\ufffdg"}
    assert encodable(events)


def test_a_pair_split_across_two_provider_events_through_an_adapter() -> None:
    def delta(text_json: str) -> bytes:
        return (b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
                b'"delta":{"type":"text_delta","text":"' + text_json.encode() + b'"}}\n\n')

    body = (b'event: message_start\ndata: {"type":"message_start","message":{"usage":'
            b'{"input_tokens":1}}}\n\n'
            b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
            b'"content_block":{"type":"text","text":""}}\n\n'
            + delta("smile \\ud83d") + delta("\\ude00!") +
            b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
            b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":'
            b'"end_turn"},"usage":{"output_tokens":2}}\n\n'
            b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    events = list(adapters.decode("ant-messages", [body]))
    texts, done = fragments_and_done(events)
    assert texts == ["smile ", "\U0001f600!"]
    assert done.text == "smile \U0001f600!"
    assert encodable(events)


_surrogate_text = st.lists(
    st.one_of(st.sampled_from(["\ud83d", "\ude00", "\udbff", "\udc00"]), st.text(max_size=3)),
    max_size=8,
).map("".join)


@given(st.lists(_surrogate_text, min_size=1, max_size=6).filter(lambda pieces: "".join(pieces)))
def test_every_public_event_encodes_and_done_is_the_join(pieces: list[str]) -> None:
    events = finalize(*(TextDelta(p) for p in pieces))
    deltas = [e.content_items[0] for e in events if e.content_items]
    texts = [d.text for d in deltas if d.type == "text.delta"]
    dones = [d for d in deltas if d.type == "text.done"]
    assert encodable(events)
    assert all(texts)
    if dones:
        assert dones[0].text == "".join(texts)
        # Pairs that were split survive as their characters.
        expected = "".join(pieces).encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        assert dones[0].text == expected


def test_a_tool_calls_name_and_id_and_a_mime_type_are_repaired() -> None:
    """08 D55 holds for every public string: a provider's escaped surrogate in a call's name
    or id, or in an inline part's MIME type, reached the public stream (a relaying gateway then
    failed to encode it)."""
    calls = finalize(ToolCallDelta("look\ud800up", "call-\udfff", '{"q": 1}'))
    data = finalize(InlineDataDelta(b"\x89PNG", "image/p\ud800ng"))
    for events in (calls, data):
        assert encodable(events)
        assert_stream_grammar(events)
    [first] = calls[0].content_items
    _, done = fragments_and_done(calls)
    assert (first.name, first.tool_call_id) == ("look\ufffdup", "call-\ufffd")
    assert (done.name, done.tool_call_id, done.arguments) == ("look\ufffdup", "call-\ufffd",
                                                              {"q": 1})
    assert {e.content_items[0].mime_type for e in data if e.content_items} == {"image/p\ufffdng"}
