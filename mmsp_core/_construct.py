"""Cheap constructors of the public values the finalizer builds once per content delta.

attrs builds a frozen slotted instance with one ``object.__setattr__`` round trip per field
(the class's own ``__setattr__`` refuses). On the hot path the finalizer builds, per content
delta, a public fragment and the delta event around it; these functions build the very same
values by writing each slot through its own descriptor, about twice as fast. Each takes the
fields the finalizer sets and gives every other field the value attrs would (its default);
``tests/core/test_fast_construct.py`` checks that each result equals the attrs-built value, and
that the classes still have exactly these fields.
"""

from __future__ import annotations

from typing import Any, Final

from .model import Item, TextDelta, ThinkingDelta, ToolCallDelta, UniEvent

__all__ = ["delta_event", "text_fragment", "thinking_fragment", "tool_call_fragment"]

_new: Final = object.__new__


def _setters(cls: type, *names: str) -> tuple[Any, ...]:
    """The ``__set__`` of each named slot of ``cls``, in order."""
    return tuple(cls.__dict__[name].__set__ for name in names)


#: ``UniEvent``'s fields, in its order; a field added to the class breaks the unpacking.
EVENT_FIELDS: Final = (
    "event_type", "content_items", "usage_metadata", "finish_reason", "created_at", "role"
)
(
    _set_event_type,
    _set_content_items,
    _set_usage_metadata,
    _set_finish_reason,
    _set_created_at,
    _set_role,
) = _setters(UniEvent, *EVENT_FIELDS)
_set_text, _set_text_fidelity = _setters(TextDelta, "text", "fidelity")
_set_thinking, _set_thinking_fidelity = _setters(ThinkingDelta, "thinking", "fidelity")
_set_name, _set_call_id, _set_arguments, _set_call_fidelity = _setters(
    ToolCallDelta, "name", "tool_call_id", "arguments", "fidelity"
)


def delta_event(item: Item, created_at: int | None) -> UniEvent:
    """``UniEvent("delta", (item,), created_at=created_at)``."""
    event = _new(UniEvent)
    _set_event_type(event, "delta")
    _set_content_items(event, (item,))
    _set_usage_metadata(event, None)
    _set_finish_reason(event, None)
    _set_created_at(event, created_at)
    _set_role(event, "assistant")
    return event


def text_fragment(text: str) -> TextDelta:
    """``TextDelta(text)``."""
    fragment = _new(TextDelta)
    _set_text(fragment, text)
    _set_text_fidelity(fragment, None)
    return fragment


def thinking_fragment(thinking: str) -> ThinkingDelta:
    """``ThinkingDelta(thinking)``."""
    fragment = _new(ThinkingDelta)
    _set_thinking(fragment, thinking)
    _set_thinking_fidelity(fragment, None)
    return fragment


def tool_call_fragment(arguments: str) -> ToolCallDelta:
    """``ToolCallDelta("", "", arguments)``: a call's continuing fragment (08 D29, D42)."""
    fragment = _new(ToolCallDelta)
    _set_name(fragment, "")
    _set_call_id(fragment, "")
    _set_arguments(fragment, arguments)
    _set_call_fidelity(fragment, None)
    return fragment
