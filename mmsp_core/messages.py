"""Message helpers: the assistant message of a stream, and legacy item types (spec 01 §9)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

from .model import DoneItem, UniEvent, UniMessage

__all__ = ["concat_uni_events_to_uni_message", "normalize_legacy_messages"]

#: Item types from before 0.5.0, without the ``.done`` suffix (RFC-0009).
LEGACY_TYPES: Final = frozenset(
    {
        "text",
        "image_url",
        "inline_data",
        "thinking",
        "inline_thinking",
        "tool_call",
        "tool_result",
        "embedding",
    }
)
_STRAY: Final = "partial_tool_call"
_warned = False
_M = TypeVar("_M")


def concat_uni_events_to_uni_message(events: Iterable[UniEvent]) -> UniMessage:
    """Build the assistant message of a public stream (RFC-0003 §4.4, spec 02 §9).

    Its items are every ``.done`` item of the delta events in stream order; usage, finish
    reason and ``created_at`` come from the stop event (all ``None`` without one).
    """
    items: list[DoneItem] = []
    stop: UniEvent | None = None
    for event in events:
        if event.event_type == "stop":
            stop = event
            continue
        items.extend(i for i in event.content_items if i.type.endswith(".done"))  # type: ignore[misc]
    return UniMessage(
        "assistant",
        tuple(items),
        stop.usage_metadata if stop else None,
        stop.finish_reason if stop else None,
        stop.created_at if stop else None,
    )


def _is_legacy(item: Any) -> bool:
    """Whether ``item`` is a dict item of a legacy type; a ``type`` that is not a string (a
    list, say) is left for the reader to refuse."""
    if not isinstance(item, Mapping):
        return False
    item_type = item.get("type")
    return isinstance(item_type, str) and (item_type in LEGACY_TYPES or item_type == _STRAY)


def _normalize_one(message: _M) -> _M:
    if not isinstance(message, Mapping):
        return message
    items = message.get("content_items")
    if not isinstance(items, Sequence) or not any(_is_legacy(i) for i in items):
        return message
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            "content item types without a .done suffix are deprecated and stop being "
            "accepted in 0.6.0",
            FutureWarning,
            stacklevel=3,
        )
    converted = [
        {**item, "type": f"{item['type']}.done"} if _is_legacy(item) else item
        for item in items
        if not (isinstance(item, Mapping) and item.get("type") == _STRAY)
    ]
    return {**message, "content_items": converted}  # type: ignore[return-value]


def normalize_legacy_messages(messages: Sequence[_M]) -> list[_M]:
    """Rewrite legacy item types to ``<type>.done`` and drop ``partial_tool_call`` items.

    A message with neither is returned as the same object; otherwise a shallow copy is
    returned and the caller's data is never modified. The first conversion in a process emits
    one ``FutureWarning`` (spec 01 §9, 08 D39). Values (``UniMessage``) cannot hold legacy
    types and pass through unchanged.
    """
    # map, not a comprehension: a comprehension is a frame of its own on Python 3.11, and the
    # warning's stacklevel must reach the caller.
    return list(map(_normalize_one, messages))
