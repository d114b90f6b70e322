"""Render done items as the event stream an Anthropic Messages server sends (08 D49, 09).

Rendering is a fold over the front door's writer (``writer.MessagesWriter``), so there is one
way to write this protocol: each done item becomes the public events the finalizer would have
produced for it (its growing field cut into fragments of ``fragment_size`` characters, an
empty fragment carrying its fidelity, then the item itself), the stop follows, and the writer
writes them one by one. The body is ``message_start`` and a ``ping``; for each item one
content block (``content_block_start``, its deltas, ``content_block_stop``); then
``message_delta`` (stop reason and usage) and ``message_stop``.

What this protocol cannot carry, i.e. the normalisation under which
``decode(render(items, usage, finish))`` gives back ``items``, ``usage`` and ``finish``:

- Only text, thinking and tool-call items exist on this wire. ``inline_data``,
  ``inline_thinking``, ``embedding``, ``tool_result`` and ``image_url`` items are left out.
- Text and tool-call items lose their fidelity. A thinking item keeps only a string
  ``signature``; a thinking item whose text is ``"_REDACTED_THINKING"`` and that has one is
  sent as a ``redacted_thinking`` block, which decodes to the same item.
- An item whose growing field is empty and that has no signature left streams no fragment, so
  it vanishes (an empty text block; unsigned empty thinking). A tool call always streams its
  arguments (``{}`` at least), so it stays.
- Tool-call arguments travel as JSON text, so they come back as JSON values (tuples become
  lists). A call needs a non-empty name and id: the first fragment of a call must carry them.
- Text must be valid Unicode (no lone surrogates): the body is UTF-8.
- Usage and finish reason come back exactly: usage is written with ``usage``, the one mapping
  the machine reads it with (06 §1); a ``None`` count is an absent key. ``unknown`` is
  rendered as the stop reason ``pause_turn``, which the machine maps back to ``unknown``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Final

from adapters._convert import arguments_json
from adapters._render import fragment_size as resolve_fragment_size
from adapters._render import fragments
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    Item,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolCallDelta,
    ToolCallDone,
    UniEvent,
    UsageMetadata,
)

from .writer import STOP_REASONS, MessagesWriter

__all__ = ["DEFAULT_FRAGMENT_SIZE", "STOP_REASONS", "normalize", "render"]

#: Characters per fragment when the caller does not choose: about what the API streams.
DEFAULT_FRAGMENT_SIZE: Final = 12

def _public_items(item: DoneItem, size: int) -> list[Item]:
    """The public items the finalizer would have produced for ``item`` (02 §4): fragments of
    ``size`` characters, an empty one carrying the fidelity, the item; nothing for a kind this
    protocol does not carry."""
    fidelity = [] if item.fidelity is None else [item.fidelity]
    if isinstance(item, TextDone):
        parts: list[Item] = [TextDelta(part) for part in fragments(item.text, size)]
        return [*parts, *(TextDelta("", f) for f in fidelity), item]
    if isinstance(item, ThinkingDone):
        parts = [ThinkingDelta(part) for part in fragments(item.thinking, size)]
        return [*parts, *(ThinkingDelta("", f) for f in fidelity), item]
    if isinstance(item, ToolCallDone):
        head = ToolCallDelta(item.name, item.tool_call_id, "", item.fidelity)
        arguments = fragments(arguments_json(item.arguments), size)
        parts = [ToolCallDelta("", "", part) for part in arguments]
        return [head, *parts, item]
    return []


def render(
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason,
    *,
    model: str,
    fragment_size: int | None,
) -> bytes:
    """Return the body an Anthropic server would stream for these done items (08 D49).

    See the module docstring for what cannot be carried.

    Raises:
        ValueError: ``fragment_size`` is less than 1.
    """
    size = resolve_fragment_size(fragment_size, DEFAULT_FRAGMENT_SIZE)
    writer = MessagesWriter(model, usage=usage)
    public = itertools.chain.from_iterable(_public_items(item, size) for item in items)
    events = [UniEvent("delta", (each,)) for each in public]
    events.append(UniEvent("stop", (), usage, FinishReason(finish_reason)))
    return b"".join(writer.event(event) for event in events)


def normalize(
    items: Sequence[DoneItem], finish_reason: FinishReason
) -> tuple[list[DoneItem], FinishReason]:
    """Apply the module docstring's normalisation: what ``decode(render(...))`` gives back."""
    return [kept for kept in map(_carried, items) if kept is not None], finish_reason


def _carried(item: DoneItem) -> DoneItem | None:
    """The item a decode of this item's rendering gives back, or ``None`` when it vanishes."""
    if isinstance(item, TextDone):
        return TextDone(item.text) if item.text else None
    if isinstance(item, ThinkingDone):
        signature = (item.fidelity or {}).get("signature")
        fidelity = {"signature": signature} if isinstance(signature, str) else None
        if not item.thinking and fidelity is None:
            return None
        return ThinkingDone(item.thinking, fidelity)
    if isinstance(item, ToolCallDone):
        arguments = json.loads(json.dumps(item.arguments))
        return ToolCallDone(item.name, item.tool_call_id, arguments)
    return None
