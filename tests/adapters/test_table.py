"""The kernel's ``client_event``: what a machine makes of a wire event's items (08 D65)."""

from __future__ import annotations

from adapters._table import client_event
from mmsp_core.kinds import TEXT, TOOL_CALL, Fragment
from mmsp_core.model import FinishReason, TextDelta, ToolCallDelta, UniEvent, UsageMetadata


def test_a_lone_fragment_is_the_client_event_itself() -> None:
    fragment = Fragment(TEXT, "hi", "content")
    assert client_event([fragment]) is fragment


def test_fragments_among_other_items_become_the_items_they_stand_for() -> None:
    call = ToolCallDelta("f", "c1", "{", {"item_id": "tool_calls"})
    event = client_event([Fragment(TEXT, "hi", "content"), call])
    assert event == UniEvent("delta", (TextDelta("hi", {"item_id": "content"}), call))


def test_usage_or_finish_make_a_stop_event_that_keeps_its_items() -> None:
    usage = UsageMetadata(prompt_tokens=3)
    event = client_event([Fragment(TOOL_CALL, "}", "tool_calls")], usage, FinishReason.TOOL_CALL)
    assert event == UniEvent(
        "stop", (ToolCallDelta("", "", "}", {"item_id": "tool_calls"}),), usage,
        FinishReason.TOOL_CALL,
    )
    stop = UniEvent("stop", (), None, FinishReason.STOP)
    assert client_event([], None, FinishReason.STOP) == stop


def test_no_items_and_nothing_else_is_an_empty_delta_event() -> None:
    assert client_event([]) == UniEvent("delta")
