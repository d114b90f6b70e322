"""Renderer: the SSE body a Responses server sends for some done items (09, 08 D49).

``render`` is a fold over the front door's writer (``writer.ResponsesWriter``, 08 D73), so
there is one way to write this protocol: the done items become the public stream the
finalizer would have produced for them (``adapters._render.public_events``: fragments of
``fragment_size`` characters, the first carrying the item's fidelity, then the ``.done``, then
the stop), and the writer writes that stream event by event.

What a Responses body cannot carry; the round-trip test compares after exactly this
normalisation (``normalize`` below):

- Only text, thinking and tool-call items exist on this protocol; any other item raises
  ``UnsupportedContentError``.
- Text fidelity keeps only ``phase``, when it is a non-empty string (a message's phase).
- Thinking fidelity keeps only ``encrypted_content``, ``signature`` and ``format`` (when not
  null) and ``channel``: ``"content"`` stays ``"content"`` (the text streams as raw reasoning
  text), anything else becomes ``"summary"`` (the text streams as a summary); an item without
  text has no channel, since the machine records the channel that actually carried text.
- A text or thinking item with no text and no fidelity left streams nothing: it disappears.
- Tool calls carry no fidelity; a call without ``tool_call_id`` comes back with ``call_<n>``,
  ``n`` its position among the calls (08 D43).
- The finish reason is ``tool_call`` exactly when the items hold a call and the response
  completed (08 D5): ``stop`` and ``tool_call`` are both rendered as ``response.completed``.
  ``length`` is ``response.incomplete`` for ``max_output_tokens`` and ``unknown`` is
  ``response.incomplete`` for ``content_filter`` (08 D35).
- Usage round-trips exactly (``usage.usage_to_wire``): a ``None`` count leaves its wire field
  out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from mmsp_core.errors import UnsupportedContentError
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    UsageMetadata,
)

from .._render import fragment_size as resolve_fragment_size
from .._render import public_events
from .machine import REASONING_FIDELITY_KEYS
from .writer import PROTOCOL_NAME, ResponsesWriter

__all__ = ["DEFAULT_FRAGMENT_SIZE", "normalize", "render"]

#: Characters per fragment when none is given: about one token, as the OpenAI API streams.
DEFAULT_FRAGMENT_SIZE: Final = 4


def render(
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason,
    *,
    model: str,
    fragment_size: int | None,
) -> bytes:
    """Return the Responses SSE body for ``items``, ``usage`` and ``finish_reason``.

    Raises:
        UnsupportedContentError: an item kind this protocol cannot carry.
    """
    for item in items:  # tool results and image URLs never stream: the writer never sees them
        if not isinstance(item, TextDone | ThinkingDone | ToolCallDone):
            raise UnsupportedContentError(
                PROTOCOL_NAME, item.type, detail="a Responses stream carries no such item"
            )
    size = resolve_fragment_size(fragment_size, DEFAULT_FRAGMENT_SIZE)
    writer = ResponsesWriter(model)
    return b"".join(writer.event(event) for event in public_events(items, usage,
                                                                    finish_reason, size))


def normalize(
    items: Sequence[DoneItem], finish_reason: FinishReason
) -> tuple[list[DoneItem], FinishReason]:
    """Return what decoding ``render(items, ..., finish_reason)`` gives back (see above).

    Raises:
        UnsupportedContentError: an item kind this protocol cannot carry.
    """
    result: list[DoneItem] = []
    calls = 0
    for item in items:
        if isinstance(item, TextDone):
            phase = (item.fidelity or {}).get("phase")
            kept = {"phase": phase} if isinstance(phase, str) and phase else None
            if item.text or kept:
                result.append(TextDone(item.text, kept))
        elif isinstance(item, ThinkingDone):
            fidelity = _thinking_fidelity(item)
            if item.thinking or fidelity:
                result.append(ThinkingDone(item.thinking, fidelity or None))
        elif isinstance(item, ToolCallDone):
            call_id = item.tool_call_id or f"call_{calls}"
            calls += 1
            result.append(ToolCallDone(item.name, call_id, item.arguments))
        else:
            raise UnsupportedContentError(PROTOCOL_NAME, item.type)
    finish = FinishReason(finish_reason)
    if finish in (FinishReason.STOP, FinishReason.TOOL_CALL):
        finish = FinishReason.TOOL_CALL if calls else FinishReason.STOP
    return result, finish


def _thinking_fidelity(item: ThinkingDone) -> dict[str, Any]:
    fidelity: Mapping[str, Any] = item.fidelity or {}
    kept: dict[str, Any] = {}
    if item.thinking:
        kept["channel"] = "content" if fidelity.get("channel") == "content" else "summary"
    kept.update({k: fidelity[k] for k in REASONING_FIDELITY_KEYS if fidelity.get(k) is not None})
    return kept
