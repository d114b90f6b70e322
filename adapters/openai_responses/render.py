"""Renderer: the SSE body a Responses server sends for some done items (09, 08 D49).

Each item becomes one output item at its own ``output_index``, with the event sequence the
OpenAI API sends: ``response.created``, ``response.in_progress``, then per item
``response.output_item.added``, its part or summary-part events, the deltas (each growing field
cut into fragments of ``fragment_size`` characters), the ``.done`` repeats and
``response.output_item.done``, and finally ``response.completed`` (or ``response.incomplete``)
with the usage. Every event is ``event: <type>`` plus ``data: {"type", "sequence_number", ...}``.

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

from .._convert import arguments_json
from .._render import fragment_size as resolve_fragment_size
from .._render import fragments, sse_event
from .machine import REASONING_FIDELITY_KEYS
from .usage import usage_to_wire

__all__ = ["DEFAULT_FRAGMENT_SIZE", "normalize", "render"]

#: Characters per fragment when none is given: about one token, as the OpenAI API streams.
DEFAULT_FRAGMENT_SIZE: Final = 4

PROTOCOL_NAME: Final = "openai-responses"


class _Writer:
    """Collects SSE events with increasing ``sequence_number``."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._sequence = 0

    def event(self, event_type: str, **fields: Any) -> None:
        data = {"type": event_type, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        self._parts.append(sse_event(event_type, data))

    def body(self) -> bytes:
        return b"".join(self._parts)


def _response(model: str, status: str, output: list[Any], **fields: Any) -> dict[str, Any]:
    return {
        "id": "resp_mmsp",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": model,
        "output": output,
        **fields,
    }


def _message(out: _Writer, index: int, item: TextDone, size: int) -> dict[str, Any]:
    ident = f"msg_{index}"
    wire: dict[str, Any] = {"id": ident, "type": "message", "role": "assistant"}
    phase = (item.fidelity or {}).get("phase")
    if isinstance(phase, str) and phase:
        wire["phase"] = phase
    out.event(
        "response.output_item.added",
        output_index=index,
        item={**wire, "status": "in_progress", "content": []},
    )
    where = {"item_id": ident, "output_index": index, "content_index": 0}
    part = {"type": "output_text", "annotations": [], "text": ""}
    out.event("response.content_part.added", **where, part=part)
    for fragment in fragments(item.text, size):
        out.event("response.output_text.delta", **where, delta=fragment)
    out.event("response.output_text.done", **where, text=item.text)
    done_part = {**part, "text": item.text}
    out.event("response.content_part.done", **where, part=done_part)
    done = {**wire, "status": "completed", "content": [done_part]}
    out.event("response.output_item.done", output_index=index, item=done)
    return done


def _reasoning(out: _Writer, index: int, item: ThinkingDone, size: int) -> dict[str, Any]:
    ident = f"rs_{index}"
    fidelity = item.fidelity or {}
    out.event(
        "response.output_item.added",
        output_index=index,
        item={"id": ident, "type": "reasoning", "summary": []},
    )
    done: dict[str, Any] = {"id": ident, "type": "reasoning", "summary": []}
    if item.thinking and fidelity.get("channel") == "content":
        where: dict[str, Any] = {"item_id": ident, "output_index": index, "content_index": 0}
        part = {"type": "reasoning_text", "text": ""}
        out.event("response.content_part.added", **where, part=part)
        for fragment in fragments(item.thinking, size):
            out.event("response.reasoning_text.delta", **where, delta=fragment)
        out.event("response.reasoning_text.done", **where, text=item.thinking)
        done["content"] = [{**part, "text": item.thinking}]
        out.event("response.content_part.done", **where, part=done["content"][0])
    elif item.thinking:
        where = {"item_id": ident, "output_index": index, "summary_index": 0}
        part = {"type": "summary_text", "text": ""}
        out.event("response.reasoning_summary_part.added", **where, part=part)
        for fragment in fragments(item.thinking, size):
            out.event("response.reasoning_summary_text.delta", **where, delta=fragment)
        out.event("response.reasoning_summary_text.done", **where, text=item.thinking)
        done["summary"] = [{**part, "text": item.thinking}]
        out.event("response.reasoning_summary_part.done", **where, part=done["summary"][0])
    for key in REASONING_FIDELITY_KEYS:
        if fidelity.get(key) is not None:
            done[key] = fidelity[key]
    out.event("response.output_item.done", output_index=index, item=done)
    return done


def _call(out: _Writer, index: int, item: ToolCallDone, size: int) -> dict[str, Any]:
    ident = f"fc_{index}"
    wire = {"id": ident, "type": "function_call", "call_id": item.tool_call_id, "name": item.name}
    out.event(
        "response.output_item.added",
        output_index=index,
        item={**wire, "arguments": "", "status": "in_progress"},
    )
    arguments = arguments_json(item.arguments)
    where = {"item_id": ident, "output_index": index}
    for fragment in fragments(arguments, size):
        out.event("response.function_call_arguments.delta", **where, delta=fragment)
    out.event("response.function_call_arguments.done", **where, arguments=arguments)
    done = {**wire, "arguments": arguments, "status": "completed"}
    out.event("response.output_item.done", output_index=index, item=done)
    return done


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
    size = resolve_fragment_size(fragment_size, DEFAULT_FRAGMENT_SIZE)
    out = _Writer()
    out.event("response.created", response=_response(model, "in_progress", [], usage=None))
    out.event("response.in_progress", response=_response(model, "in_progress", [], usage=None))
    output: list[Any] = []
    for index, item in enumerate(items):
        if isinstance(item, TextDone):
            output.append(_message(out, index, item, size))
        elif isinstance(item, ThinkingDone):
            output.append(_reasoning(out, index, item, size))
        elif isinstance(item, ToolCallDone):
            output.append(_call(out, index, item, size))
        else:
            raise UnsupportedContentError(
                PROTOCOL_NAME, item.type, detail="a Responses stream carries no such item"
            )
    finish = FinishReason(finish_reason)
    if finish in (FinishReason.STOP, FinishReason.TOOL_CALL):
        response = _response(model, "completed", output, incomplete_details=None)
        event_type = "response.completed"
    else:
        reason = "max_output_tokens" if finish is FinishReason.LENGTH else "content_filter"
        response = _response(model, "incomplete", output, incomplete_details={"reason": reason})
        event_type = "response.incomplete"
    out.event(event_type, response={**response, "usage": usage_to_wire(usage)})
    return out.body()


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
