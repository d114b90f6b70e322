"""``assert_stream_grammar``: accepts the seed's stream, rejects each broken rule of 02 §12.

Every rejection starts from a valid stream and breaks exactly one rule, so a checker that
skipped that rule would pass the stream and fail the test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mmsp_core import (
    EmbeddingDelta,
    EmbeddingDone,
    FinishReason,
    ImageUrlDone,
    InlineDataDelta,
    InlineDataDone,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolCallDelta,
    ToolCallDone,
    UniEvent,
    UsageMetadata,
)
from mmsp_core.testing import assert_stream_grammar

USAGE = UsageMetadata(0, 10, None, 5)
SIG = {"signature": "..."}


def d(item: Any) -> UniEvent:
    return UniEvent("delta", (item,), None, None, 1694502400000)


def stop(usage: Any = USAGE, finish: Any = FinishReason.TOOL_CALL, items: Any = ()) -> UniEvent:
    return UniEvent("stop", items, usage, finish, 1694502400100)


def seed_stream() -> list[UniEvent]:
    """The seed's example stream: Claude thinking, then a tool call."""
    return [
        d(ThinkingDelta("Let me")),
        d(ThinkingDelta(" check")),
        d(ThinkingDelta("", SIG)),
        d(ThinkingDone("Let me check", SIG)),
        d(ToolCallDelta("get_weather", "toolu_1", "")),
        d(ToolCallDelta("", "", '{"location": ')),
        d(ToolCallDelta("", "", '"Paris"}')),
        d(ToolCallDone("get_weather", "toolu_1", {"location": "Paris"})),
        stop(),
    ]


def test_the_seed_example_is_accepted() -> None:
    assert_stream_grammar(seed_stream())


def test_every_kind_with_its_done_is_accepted() -> None:
    assert_stream_grammar(
        [
            d(TextDelta("a")),
            d(TextDelta("b", {"phase": "final"})),
            d(TextDone("ab", {"phase": "final"})),
            d(InlineDataDelta(b"\x01", "audio/pcm")),
            d(InlineDataDelta(b"\x02", "audio/pcm")),
            d(InlineDataDone(b"\x01\x02", "audio/pcm")),
            d(EmbeddingDelta(())),
            d(EmbeddingDone(())),
            d(ToolCallDelta("f", "c", "")),
            d(ToolCallDone("f", "c", {})),
            stop(finish="stop"),
        ]
    )


def _replace(index: int, event: UniEvent) -> Callable[[list[UniEvent]], list[UniEvent]]:
    def edit(events: list[UniEvent]) -> list[UniEvent]:
        events[index] = event
        return events

    return edit


BROKEN: dict[str, Callable[[list[UniEvent]], list[UniEvent]]] = {
    "empty stream": lambda events: [],
    "only deltas, no stop": lambda events: events[:-1],
    "stop not last": lambda events: [events[-1], *events[:-1]],
    "two stops": lambda events: [*events, stop()],
    "items on the stop": _replace(8, stop(items=(TextDone("x"),))),
    "stop without usage": _replace(8, stop(usage=None)),
    "stop without finish reason": _replace(8, stop(finish=None)),
    "stop with an unknown finish reason": _replace(8, stop(finish="error")),
    "stop without created_at": _replace(8, UniEvent("stop", (), USAGE, FinishReason.STOP)),
    "delta without created_at": _replace(0, UniEvent("delta", (ThinkingDelta("Let me"),))),
    "usage on a delta": _replace(
        0, UniEvent("delta", (ThinkingDelta("Let me"),), USAGE, None, 1)
    ),
    "finish on a delta": _replace(
        0, UniEvent("delta", (ThinkingDelta("Let me"),), None, FinishReason.STOP, 1)
    ),
    "two items in one delta": _replace(
        0, UniEvent("delta", (ThinkingDelta("Let"), ThinkingDelta(" me")), None, None, 1)
    ),
    "no item in a delta": lambda events: [UniEvent("delta", (), None, None, 1), *events],
    "item_id leaked": _replace(2, d(ThinkingDelta("", {**SIG, "item_id": "0"}))),
    "item_id leaked on a done": _replace(
        3, d(ThinkingDone("Let me check", {**SIG, "item_id": "0"}))
    ),
    "interleaved groups": lambda events: [*events[:1], d(TextDelta("x")), *events[1:]],
    "a done of another kind closes the group": _replace(3, d(TextDone("Let me check", SIG))),
    "a done without a group": lambda events: [d(TextDone("x")), *events],
    "a kind that does not stream": lambda events: [d(ImageUrlDone("https://x/y.png")), *events],
    "first tool_call.delta without name": _replace(4, d(ToolCallDelta("", "toolu_1", ""))),
    "first tool_call.delta without id": _replace(4, d(ToolCallDelta("get_weather", "", ""))),
    "later tool_call.delta with a name": _replace(
        5, d(ToolCallDelta("get_weather", "", '{"location": '))
    ),
    "later tool_call.delta with an id": _replace(
        6, d(ToolCallDelta("", "toolu_1", '"Paris"}'))
    ),
    "two fragments with fidelity": _replace(1, d(ThinkingDelta(" check", SIG))),
    "done fidelity differs": _replace(3, d(ThinkingDone("Let me check", {"signature": "x"}))),
    "done fidelity missing": _replace(3, d(ThinkingDone("Let me check"))),
    "done fidelity without a fragment's": lambda events: [
        d(TextDelta("a")),
        d(TextDone("a", SIG)),
        *events,
    ],
    "done text differs from the join": _replace(3, d(ThinkingDone("Let me chec", SIG))),
    "tool arguments differ": _replace(
        7, d(ToolCallDone("get_weather", "toolu_1", {"location": "Rome"}))
    ),
    "tool arguments that do not parse": _replace(6, d(ToolCallDelta("", "", '"Paris"'))),
    "tool call name differs on the done": _replace(
        7, d(ToolCallDone("get_time", "toolu_1", {"location": "Paris"}))
    ),
    "tool call id differs on the done": _replace(
        7, d(ToolCallDone("get_weather", "toolu_2", {"location": "Paris"}))
    ),
    "mime type differs on the done": lambda events: [
        d(InlineDataDelta(b"1", "audio/pcm")),
        d(InlineDataDone(b"1", "audio/wav")),
        *events,
    ],
    "bytes differ on the done": lambda events: [
        d(InlineDataDelta(b"1", "audio/pcm")),
        d(InlineDataDone(b"12", "audio/pcm")),
        *events,
    ],
    "vector differs on the done": lambda events: [
        d(EmbeddingDelta((1.0,))),
        d(EmbeddingDone((1.0, 2.0))),
        *events,
    ],
    "group left open": lambda events: [*events[:-2], events[-1]],
}


BROKEN_RULES = sorted(BROKEN)


@pytest.mark.parametrize("rule", BROKEN_RULES)
def test_a_stream_breaking_one_rule_is_rejected(rule: str) -> None:
    broken = BROKEN[rule](seed_stream())
    with pytest.raises(AssertionError):
        assert_stream_grammar(broken)
