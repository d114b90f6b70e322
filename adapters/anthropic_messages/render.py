"""Render done items as the event stream an Anthropic Messages server sends (08 D49, 09).

The body is ``message_start`` and a ``ping``; for each item one content block
(``content_block_start``, its deltas, ``content_block_stop``); then ``message_delta`` (stop
reason and usage) and ``message_stop``. Each item's growing field is split into fragments of
``fragment_size`` characters.

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

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from adapters._convert import arguments_json
from adapters._render import fragment_size as resolve_fragment_size
from adapters._render import fragments, sse_event
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    UsageMetadata,
)

from .machine import REDACTED_THINKING
from .usage import to_message_delta, to_message_start

__all__ = ["DEFAULT_FRAGMENT_SIZE", "STOP_REASONS", "normalize", "render"]

#: Characters per fragment when the caller does not choose: about what the API streams.
DEFAULT_FRAGMENT_SIZE: Final = 12

#: Finish reason -> the ``stop_reason`` the machine maps back to it (06 §1).
STOP_REASONS: Final[Mapping[FinishReason, str]] = {
    FinishReason.STOP: "end_turn",
    FinishReason.LENGTH: "max_tokens",
    FinishReason.TOOL_CALL: "tool_use",
    FinishReason.UNKNOWN: "pause_turn",
}

_MESSAGE_ID: Final = "msg_01MMSPRENDER0000000000"


def _delta(index: int, delta: Mapping[str, Any]) -> bytes:
    return sse_event(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )


def _start(index: int, block: Mapping[str, Any]) -> bytes:
    return sse_event(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def _block(item: DoneItem, index: int, size: int) -> Iterator[bytes]:
    """The ``content_block_start`` and deltas of one item (no stop); nothing if not carried."""
    if isinstance(item, TextDone):
        yield _start(index, {"type": "text", "text": ""})
        for part in fragments(item.text, size):
            yield _delta(index, {"type": "text_delta", "text": part})
    elif isinstance(item, ThinkingDone):
        signature = (item.fidelity or {}).get("signature")
        if not isinstance(signature, str):
            signature = None
        if item.thinking == REDACTED_THINKING and signature is not None:
            yield _start(index, {"type": "redacted_thinking", "data": signature})
            return
        yield _start(index, {"type": "thinking", "thinking": "", "signature": ""})
        for part in fragments(item.thinking, size):
            yield _delta(index, {"type": "thinking_delta", "thinking": part})
        if signature is not None:
            yield _delta(index, {"type": "signature_delta", "signature": signature})
    elif isinstance(item, ToolCallDone):
        block = {"type": "tool_use", "id": item.tool_call_id, "name": item.name, "input": {}}
        yield _start(index, block)
        # The server always opens the arguments with an empty fragment.
        yield _delta(index, {"type": "input_json_delta", "partial_json": ""})
        for part in fragments(arguments_json(item.arguments), size):
            yield _delta(index, {"type": "input_json_delta", "partial_json": part})


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
    message: dict[str, Any] = {
        "id": _MESSAGE_ID,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": to_message_start(usage),
    }
    out = [
        sse_event("message_start", {"type": "message_start", "message": message}),
        sse_event("ping", {"type": "ping"}),
    ]
    index = 0
    for item in items:
        block = list(_block(item, index, size))
        if block:
            out.extend(block)
            out.append(
                sse_event("content_block_stop", {"type": "content_block_stop", "index": index})
            )
            index += 1
    stop_reason = STOP_REASONS[FinishReason(finish_reason)]
    delta = {"stop_reason": stop_reason, "stop_sequence": None}
    final = {"type": "message_delta", "delta": delta, "usage": to_message_delta(usage)}
    out.append(sse_event("message_delta", final))
    out.append(sse_event("message_stop", {"type": "message_stop"}))
    return b"".join(out)


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
