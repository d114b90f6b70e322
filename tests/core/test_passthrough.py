"""``PassThrough``: an already-public stream passes unchanged; a broken rule is rejected where it
is broken (spec 02 §12, 08 D59).

Valid public streams come from ``client_streams()`` through ``StreamItems``; each broken one
starts from such a stream and breaks one rule at a known event, so ``PassThrough`` must hand on
exactly the events before it and raise ``MalformedEventError`` naming it, and
``assert_stream_grammar`` (built on the same checker) must name the same event.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_grammar import BROKEN, BROKEN_RULES, seed_stream

import adapters
from mmsp_core import (
    FinishReason,
    ImageUrlDone,
    IncompleteStreamError,
    InlineDataDelta,
    InlineDataDone,
    MalformedEventError,
    PassThrough,
    StreamItems,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolCallDelta,
    ToolCallDone,
    UniEvent,
    UsageMetadata,
    to_wire,
)
from mmsp_core.kinds import TEXT, Fragment
from mmsp_core.testing import assert_stream_grammar, outcome
from mmsp_core.testing.strategies import client_streams
from mmsp_core.wire import item_from_wire

Outcome = tuple[list[UniEvent], BaseException | None]


def pass_through(events: Sequence[UniEvent]) -> Outcome:
    """Run ``events`` through a ``PassThrough``: (what it handed on, the error or None)."""
    finalizer = PassThrough(client="mmsp", clock=lambda: 0)
    out: list[UniEvent] = []
    try:
        for event in events:
            out.extend(finalizer.push(event))
        out.extend(finalizer.end())
        out.append(finalizer.close())
    except (MalformedEventError, IncompleteStreamError) as exc:
        return out, exc
    return out, None


def public(client_events: Sequence[UniEvent]) -> list[UniEvent]:
    """The public stream ``StreamItems`` makes of a client stream (one item per push, as the
    pipeline feeds it), with increasing timestamps."""
    ticks = iter(range(1, 1 << 30))
    items = StreamItems(client="c", clock=lambda: next(ticks))
    out: list[UniEvent] = []
    for event in client_events:
        for item in event.content_items:
            out.extend(items.push(UniEvent("delta", (item,))))
        out.extend(items.push(attrs.evolve(event, content_items=())))
    out.extend(items.end())
    out.append(items.close())
    return out


public_streams = client_streams().map(public)


@given(public_streams)
def test_a_valid_public_stream_passes_unchanged(events: list[UniEvent]) -> None:
    out, error = pass_through(events)
    assert error is None
    assert len(out) == len(events)
    assert all(a is b for a, b in zip(out, events, strict=True))
    assert_stream_grammar(events)


def test_the_seed_stream_passes_unchanged() -> None:
    events = seed_stream()
    assert pass_through(events) == (events, None)


@pytest.mark.parametrize("rule", BROKEN_RULES)
def test_every_broken_rule_of_the_grammar_checks_is_rejected(rule: str) -> None:
    broken = BROKEN[rule](seed_stream())
    out, error = pass_through(broken)
    assert error is not None
    if isinstance(error, MalformedEventError):
        index = int(error.event.removeprefix("public event "))
        assert out == [e for e in broken[:index] if e.event_type == "delta"]
    else:  # no stop arrived: everything was handed on
        assert isinstance(error, IncompleteStreamError)
        assert out == broken


def test_input_ending_before_the_stop_is_an_incomplete_stream() -> None:
    deltas = seed_stream()[:-1]
    out, error = pass_through(deltas)
    assert out == deltas
    assert isinstance(error, IncompleteStreamError)
    assert error.missing == ("usage_metadata", "finish_reason")


def test_calls_after_an_error_raise_runtime_error() -> None:
    finalizer = PassThrough(client="mmsp", clock=lambda: 0)
    with pytest.raises(MalformedEventError):
        finalizer.push(UniEvent("delta", (), None, None, 1))
    with pytest.raises(RuntimeError):
        finalizer.push(seed_stream()[0])
    with pytest.raises(RuntimeError):
        finalizer.end()


def test_close_before_end_raises_runtime_error() -> None:
    finalizer = PassThrough(client="mmsp", clock=lambda: 0)
    with pytest.raises(RuntimeError):
        finalizer.close()


# --------------------------------------------------------------------------------------------
# One rule broken at a drawn position
# --------------------------------------------------------------------------------------------

USAGE = UsageMetadata(0, 1, None, 1)
#: A breaker: (events, index of a delta event) -> (broken events, index of the first bad event),
#: or ``None`` when the rule cannot be broken at that index.
Breaker = Callable[[list[UniEvent], int], tuple[list[UniEvent], int] | None]


def _item(event: UniEvent) -> Any:
    return event.content_items[0]


def _is_fragment(event: UniEvent) -> bool:
    return event.event_type == "delta" and _item(event).type.endswith(".delta")


def _group_open_before(events: list[UniEvent], index: int) -> bool:
    return index > 0 and _is_fragment(events[index - 1])


def _set(events: list[UniEvent], index: int, event: UniEvent) -> list[UniEvent]:
    return [*events[:index], event, *events[index + 1 :]]


def _insert(events: list[UniEvent], index: int, event: UniEvent) -> list[UniEvent]:
    return [*events[:index], event, *events[index:]]


def _with_item(events: list[UniEvent], index: int, **changes: Any) -> list[UniEvent]:
    item = attrs.evolve(_item(events[index]), **changes)
    return _set(events, index, attrs.evolve(events[index], content_items=(item,)))


def _usage_on_a_delta(events: list[UniEvent], i: int) -> tuple[list[UniEvent], int]:
    return _set(events, i, attrs.evolve(events[i], usage_metadata=USAGE)), i


def _finish_on_a_delta(events: list[UniEvent], i: int) -> tuple[list[UniEvent], int]:
    return _set(events, i, attrs.evolve(events[i], finish_reason=FinishReason.STOP)), i


def _no_created_at(events: list[UniEvent], i: int) -> tuple[list[UniEvent], int]:
    return _set(events, i, attrs.evolve(events[i], created_at=None)), i


def _two_items(events: list[UniEvent], i: int) -> tuple[list[UniEvent], int]:
    items = events[i].content_items * 2
    return _set(events, i, attrs.evolve(events[i], content_items=items)), i


def _no_item(events: list[UniEvent], i: int) -> tuple[list[UniEvent], int]:
    return _insert(events, i, UniEvent("delta", (), None, None, 1)), i


def _item_id(events: list[UniEvent], i: int) -> tuple[list[UniEvent], int]:
    fidelity = {**(_item(events[i]).fidelity or {}), "item_id": "x"}
    return _with_item(events, i, fidelity=fidelity), i


def _stop_too_early(events: list[UniEvent], i: int) -> tuple[list[UniEvent], int]:
    stop = UniEvent("stop", (), USAGE, FinishReason.STOP, 1)
    return _insert(events, i, stop), (i if _group_open_before(events, i) else i + 1)


def _another_kind_inside(events: list[UniEvent], i: int) -> tuple[list[UniEvent], int] | None:
    if not _group_open_before(events, i):
        return None
    other = TextDelta("x") if _item(events[i - 1]).type != "text.delta" else ThinkingDelta("x")
    return _insert(events, i, UniEvent("delta", (other,), None, None, 1)), i


def _done_without_group(events: list[UniEvent], i: int) -> tuple[list[UniEvent], int] | None:
    if _group_open_before(events, i):
        return None
    return _insert(events, i, UniEvent("delta", (TextDone("x"),), None, None, 1)), i


def _kind_that_does_not_stream(events: list[UniEvent], i: int) -> tuple[list[UniEvent], int]:
    return _insert(events, i, UniEvent("delta", (ImageUrlDone("u"),), None, None, 1)), i


def _header_change(events: list[UniEvent], i: int) -> tuple[list[UniEvent], int] | None:
    item = _item(events[i])
    if item.type != "tool_call.delta":
        return None
    if _group_open_before(events, i):
        return _with_item(events, i, name="late"), i
    return _with_item(events, i, tool_call_id=""), i


def _second_fidelity(events: list[UniEvent], i: int) -> tuple[list[UniEvent], int] | None:
    """Give fragment ``i`` fidelity while an earlier fragment of its group has some."""
    if not _is_fragment(events[i]):
        return None
    start = i
    while _group_open_before(events, start):
        start -= 1
    if not any(_item(events[k]).fidelity for k in range(start, i)):
        return None
    return _with_item(events, i, fidelity={"x": "other"}), i


def _done_differs(events: list[UniEvent], i: int) -> tuple[list[UniEvent], int] | None:
    item = _item(events[i])
    if item.type in ("text.done", "thinking.done"):
        field = "text" if item.type == "text.done" else "thinking"
        return _with_item(events, i, **{field: getattr(item, field) + "!"}), i
    if item.type == "tool_call.done":
        return _with_item(events, i, arguments={**item.arguments, "mmsp-extra": 1}), i
    return None


def _done_fidelity_differs(events: list[UniEvent], i: int) -> tuple[list[UniEvent], int] | None:
    if not _item(events[i]).type.endswith(".done"):
        return None
    return _with_item(events, i, fidelity={"x": "another"}), i


BREAKERS: dict[str, Breaker] = {
    "usage on a delta": _usage_on_a_delta,
    "finish on a delta": _finish_on_a_delta,
    "no created_at": _no_created_at,
    "two items in one delta": _two_items,
    "no item in a delta": _no_item,
    "item_id leaked": _item_id,
    "a stop before the end": _stop_too_early,
    "another kind inside an open group": _another_kind_inside,
    "a done without a group": _done_without_group,
    "a kind that does not stream": _kind_that_does_not_stream,
    "tool call headers": _header_change,
    "two fragments with fidelity": _second_fidelity,
    "a done that is not the join": _done_differs,
    "a done with other fidelity": _done_fidelity_differs,
}

#: Rules of the stop event, broken on the last event.
STOP_BREAKERS: dict[str, Callable[[UniEvent], UniEvent]] = {
    "items on the stop": lambda s: attrs.evolve(s, content_items=(TextDone("x"),)),
    "stop without usage": lambda s: attrs.evolve(s, usage_metadata=None),
    "stop without finish": lambda s: attrs.evolve(s, finish_reason=None),
    "stop with another finish": lambda s: attrs.evolve(s, finish_reason="error"),
    "stop without created_at": lambda s: attrs.evolve(s, created_at=None),
}


@st.composite
def broken_streams(draw: st.DrawFn) -> tuple[list[UniEvent], int, str]:
    """A valid public stream with one rule broken: (events, first bad index, the rule)."""
    events = draw(public_streams)
    if draw(st.booleans()):
        rule = draw(st.sampled_from(sorted(STOP_BREAKERS)))
        return _set(events, len(events) - 1, STOP_BREAKERS[rule](events[-1])), len(events) - 1, rule
    rule = draw(st.sampled_from(sorted(BREAKERS)))
    index = draw(st.integers(0, len(events) - 2))
    result = BREAKERS[rule](events, index)
    if result is None:
        rule = "a kind that does not stream"
        result = _kind_that_does_not_stream(events, index)
    broken, position = result
    return broken, position, rule


@given(broken_streams())
def test_a_broken_rule_is_rejected_at_its_position(case: tuple[list[UniEvent], int, str]) -> None:
    events, position, rule = case
    out, error = pass_through(events)
    assert isinstance(error, MalformedEventError), rule
    assert error.event == f"public event {position}", (rule, error)
    assert out == [e for e in events[:position] if e.event_type == "delta"]
    with pytest.raises(AssertionError, match=f"^event {position}: "):
        assert_stream_grammar(events)


def test_a_stream_without_stop_is_incomplete_whatever_it_holds() -> None:
    out, error = pass_through([])
    assert (out, type(error)) == ([], IncompleteStreamError)


def test_a_done_nested_too_deeply_to_compare_is_malformed_not_a_crash() -> None:
    deep: Any = {}
    for _ in range(100_000):
        deep = {"a": deep}
    other: Any = {}
    for _ in range(100_000):
        other = {"a": other}
    events = [
        UniEvent("delta", (TextDelta("a", deep),), None, None, 1),
        UniEvent("delta", (TextDone("a", other),), None, None, 1),
        UniEvent("stop", (), UsageMetadata(), FinishReason.STOP, 1),
    ]
    out, error = pass_through(events)
    assert isinstance(error, MalformedEventError)
    assert error.event == "public event 1"
    assert out == events[:1]


@pytest.mark.parametrize("growing", ["hi", ""])
def test_a_fragment_is_judged_as_the_delta_event_it_stands_for(growing: str) -> None:
    fragment = Fragment(TEXT, growing, "0")
    stop = seed_stream()[-1]
    as_event = UniEvent("delta", (fragment.item(),))
    assert outcome(*pass_through([fragment, stop])) == outcome(  # type: ignore[list-item]
        *pass_through([as_event, stop])
    )


# --------------------------------------------------------------------------------------------
# A server's surrogates (08 D55): repaired as the finalizer repairs a provider's
# --------------------------------------------------------------------------------------------

_LONE = ["\ud83d", "\ude00", "\udbff", "\udc00"]
#: Text with lone surrogates and, where a high one meets a low one, pairs written as two.
_surrogate_text = st.lists(
    st.one_of(st.sampled_from(_LONE), st.text(max_size=3)), max_size=6
).map("".join)
_fidelity = st.none() | st.dictionaries(
    _surrogate_text, st.lists(_surrogate_text, max_size=2), min_size=1, max_size=2
)


def at(item: Any) -> UniEvent:
    return UniEvent("delta", (item,), None, None, 1)


@st.composite
def server_streams(draw: st.DrawFn) -> list[UniEvent]:
    """Valid public streams as a server that repairs nothing writes them: lone surrogates, and
    pairs split across fragments, in every string field (text, thinking, arguments as raw
    characters or JSON escapes, tool name and id, mime type, fidelity keys and values)."""
    events: list[UniEvent] = []
    for kind in draw(st.lists(st.sampled_from(["text", "thinking", "tool_call", "inline_data"]),
                              min_size=1, max_size=4)):
        fidelity = draw(_fidelity)
        if kind == "tool_call":
            arguments = draw(st.dictionaries(_surrogate_text, _surrogate_text, max_size=3))
            raw = json.dumps(arguments, ensure_ascii=draw(st.booleans()))
            cuts = sorted(draw(st.lists(st.integers(0, len(raw)), max_size=4)))
            pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
            name, call_id = "f" + draw(_surrogate_text), "c" + draw(_surrogate_text)
            events.append(at(ToolCallDelta(name, call_id, pieces[0], fidelity)))
            events += [at(ToolCallDelta("", "", piece)) for piece in pieces[1:]]
            events.append(at(ToolCallDone(name, call_id, arguments, fidelity)))
        elif kind == "inline_data":
            mime_type = "image/png" + draw(_surrogate_text)
            events.append(at(InlineDataDelta(b"\x89PNG", mime_type, fidelity)))
            events.append(at(InlineDataDone(b"\x89PNG", mime_type, fidelity)))
        else:
            delta, done = (TextDelta, TextDone) if kind == "text" else (ThinkingDelta, ThinkingDone)
            pieces = draw(st.lists(_surrogate_text, min_size=1, max_size=5))
            events.append(at(delta(pieces[0], fidelity)))
            events += [at(delta(piece)) for piece in pieces[1:]]
            events.append(at(done("".join(pieces), fidelity)))
    events.append(UniEvent("stop", (), USAGE, FinishReason.STOP, 1))
    return events


def as_utf8(event: UniEvent) -> bytes:
    """The event's wire JSON as UTF-8: ``UnicodeEncodeError`` for a lone surrogate."""
    return json.dumps(to_wire(event), ensure_ascii=False).encode("utf-8")


def repaired_done(done: Any) -> Any:
    """``done`` as 08 D55 repairs it, computed on its wire JSON text: every string of it with
    its pairs joined and its lone surrogates U+FFFD."""
    text = json.dumps(to_wire(done), ensure_ascii=False)
    return item_from_wire(json.loads(
        text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")))


def server_body(events: list[UniEvent]) -> bytes:
    """The body a server writes for ``events`` (JSON escapes for the surrogates)."""
    return b"".join(b"data: " + json.dumps(to_wire(e)).encode() + b"\n\n" for e in events) + (
        b"data: [DONE]\n\n")


@given(server_streams())
def test_a_servers_surrogates_are_repaired_in_every_field(events: list[UniEvent]) -> None:
    out, error = pass_through(events)
    assert error is None
    for event in out:
        as_utf8(event)  # no lone surrogate is left anywhere
    assert_stream_grammar(out)
    dones = [_item(e) for e in out if e.event_type == "delta" and _item(e).type.endswith(".done")]
    sent = [_item(e) for e in events if e.event_type == "delta" and _item(e).type.endswith(".done")]
    assert dones == [repaired_done(done) for done in sent]
    assert out[-1] == events[-1]
    # The same through the mmsp protocol's pipeline, from the bytes a server writes.
    assert list(adapters.decode("mmsp", [server_body(events)])) == out


def test_a_pair_split_across_two_deltas_becomes_one_character() -> None:
    events = [at(TextDelta("ab\ud83d")), at(TextDelta("\ude00cd")), at(TextDelta("\ud83d")),
              at(TextDelta("\ude00")), at(TextDone("ab\U0001f600cd\U0001f600")),
              UniEvent("stop", (), USAGE, FinishReason.STOP, 1)]
    out, error = pass_through(events)
    assert error is None
    assert [_item(e) for e in out[:-1]] == [
        TextDelta("ab"), TextDelta("\U0001f600cd"), TextDelta("\U0001f600"),
        TextDone("ab\U0001f600cd\U0001f600")]


def test_a_high_surrogate_held_to_the_end_of_its_item_is_one_more_fragment() -> None:
    events = [at(ThinkingDelta("hm\udbff")), at(ThinkingDone("hm\udbff")),
              at(ToolCallDelta("f", "c1", '{"a": "\ud83d')), at(ToolCallDelta("", "", '"}')),
              at(ToolCallDone("f", "c1", {"a": "\ud83d"})),
              UniEvent("stop", (), USAGE, FinishReason.STOP, 1)]
    out, error = pass_through(events)
    assert error is None
    assert [_item(e) for e in out[:-1]] == [
        ThinkingDelta("hm"), ThinkingDelta("\ufffd"), ThinkingDone("hm\ufffd"),
        ToolCallDelta("f", "c1", '{"a": "'), ToolCallDelta("", "", '\ufffd"}'),
        ToolCallDone("f", "c1", {"a": "\ufffd"})]
    assert all(e.created_at == 1 for e in out)


def test_what_the_librarys_own_finalizer_writes_for_an_escaped_lone_surrogate_passes() -> None:
    # StreamItems parses '{"a": "\\ud83d"}' and repairs the parsed value: the .done holds
    # U+FFFD where the fragments' JSON holds the escape, which is no broken rule.
    events = public([UniEvent("delta", (ToolCallDelta("f", "c1", '{"a": "\\ud83d"}'),)),
                     UniEvent("stop", (), USAGE, FinishReason.TOOL_CALL)])
    assert _item(events[1]) == ToolCallDone("f", "c1", {"a": "\ufffd"})
    assert_stream_grammar(events)
    assert pass_through(events) == (events, None)
