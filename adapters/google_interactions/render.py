"""Renderer: the SSE body the Interactions API sends for some done items (09, 08 D49).

The body opens with ``interaction.created`` and ``interaction.status_update``; each item is
then one step at its own ``index``: ``step.start``, its deltas (each growing field cut into
fragments of ``fragment_size`` characters of text, thinking and arguments, or bytes of audio),
``step.stop``; ``interaction.completed`` ends it with the status and the usage. Every event is
one ``data: <json>`` line keyed by ``event_type``, as the recorded bodies are.

- text: a ``model_output`` step of ``text`` deltas;
- thinking: a ``thought`` step of ``thought_summary`` text deltas, then its signature (a
  ``thought_signature`` delta) when ``fidelity["signature"]`` is a non-empty string;
- a thought image (``inline_thinking``): a ``thought`` step with one ``thought_summary``
  image delta (an image is never split: every image fragment would be an item of its own),
  then its signature;
- inline data: an ``image/*`` item is one ``image`` delta; an ``audio/*`` item is ``audio``
  deltas whose ``mime_type``, ``sample_rate`` and ``channels`` come from the item's MIME
  parameters ``rate`` and ``channels``;
- a tool call: a ``function_call`` step whose ``step.start`` names the call and whose
  ``arguments_delta`` deltas carry the JSON arguments.

What an Interactions body cannot carry; the round-trip test compares after exactly this
normalisation (``normalize`` below):

- Only text, thinking, thought images, images, audio and tool calls exist here; any other
  item (or inline data neither image nor audio) raises ``UnsupportedContentError``.
- Text, inline data and tool calls carry no fidelity. Thinking and thought images keep only a
  non-empty string ``signature``.
- A text or thinking item with no text (and, for thinking, no signature), and inline data
  without bytes, stream nothing: they disappear. A thought image without bytes but with a
  signature comes back as empty thinking carrying the signature.
- An audio MIME type keeps its base type and its ``rate`` and ``channels`` parameters, in that
  order, written ``"<type>; rate=<n>; channels=<n>"``; other parameters are dropped. A thought
  image with an empty MIME type comes back as ``image/jpeg`` (06 §5).
- A call without ``tool_call_id`` comes back with its name as the id.
- Finish reasons and usage round-trip exactly: ``stop`` is status ``completed``, ``tool_call``
  ``requires_action``, ``length`` ``incomplete`` and ``unknown`` ``failed``; a ``None`` count
  leaves its wire field out (``usage.usage_to_wire``).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from mmsp_core.errors import UnsupportedContentError
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    InlineDataDone,
    InlineThinkingDone,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    UsageMetadata,
)

from .._convert import arguments_json
from .._render import fragment_size as resolve_fragment_size
from .._render import fragments, sse_event
from .machine import DEFAULT_IMAGE_MIME, audio_mime
from .usage import usage_to_wire

__all__ = ["DEFAULT_FRAGMENT_SIZE", "normalize", "render", "split_audio_mime"]

#: Characters per fragment when none is given: Gemini streams a few words per event.
DEFAULT_FRAGMENT_SIZE: Final = 16
#: Bytes per audio delta when no fragment size is given.
DEFAULT_AUDIO_CHUNK: Final = 8192

PROTOCOL_NAME: Final = "google-interactions"

#: finish reason -> ``interaction.status`` (06 §5, read back by ``machine.FINISH_REASONS``).
_STATUSES: Final[Mapping[FinishReason, str]] = {
    FinishReason.STOP: "completed",
    FinishReason.TOOL_CALL: "requires_action",
    FinishReason.LENGTH: "incomplete",
    FinishReason.UNKNOWN: "failed",
}

_INTERACTION_ID: Final = "v1_mmsp"
_PARAMETER: Final = re.compile(r"\s*(rate|channels)\s*=\s*([0-9]+)\s*", re.ASCII)


def split_audio_mime(mime: str) -> tuple[str, int | None, int | None]:
    """Split ``"audio/L16; rate=24000; channels=1"`` into the type, the rate and the channels
    (``None`` for a parameter that is absent or not a number); other parameters are dropped."""
    base, *parameters = mime.split(";")
    found: dict[str, int] = {}
    for parameter in parameters:
        match = _PARAMETER.fullmatch(parameter)
        if match:
            found[match[1]] = int(match[2])
    return base.strip(), found.get("rate"), found.get("channels")


def _signature(fidelity: Mapping[str, Any] | None) -> str | None:
    """The signature an Interactions thought step can carry back: a non-empty string."""
    signature = (fidelity or {}).get("signature")
    return signature if isinstance(signature, str) and signature else None


class _Writer:
    """Collects the events of one body; ``step`` numbers the steps."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self.index = 0

    def event(self, event_type: str, **fields: Any) -> None:
        self._parts.append(sse_event(None, {"event_type": event_type, **fields}))

    def step(self, step: Mapping[str, Any], deltas: Iterator[Mapping[str, Any]]) -> None:
        """One whole step: ``step.start``, a ``step.delta`` per delta, ``step.stop``."""
        index = self.index
        self.index += 1
        self.event("step.start", index=index, step=step)
        for delta in deltas:
            self.event("step.delta", index=index, delta=delta)
        self.event("step.stop", index=index)

    def body(self) -> bytes:
        return b"".join(self._parts)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _thought(item: ThinkingDone | InlineThinkingDone, size: int) -> Iterator[dict[str, Any]]:
    if isinstance(item, ThinkingDone):
        for fragment in fragments(item.thinking, size):
            yield {"type": "thought_summary", "content": {"type": "text", "text": fragment}}
    elif item.data:
        image = {"type": "image", "data": _b64(item.data), "mime_type": item.mime_type}
        yield {"type": "thought_summary", "content": image}
    signature = _signature(item.fidelity)
    if signature is not None:
        yield {"type": "thought_signature", "signature": signature}


def _text(item: TextDone, size: int) -> Iterator[dict[str, Any]]:
    for fragment in fragments(item.text, size):
        yield {"type": "text", "text": fragment}


def _media(item: InlineDataDone, size: int | None) -> Iterator[dict[str, Any]]:
    if item.mime_type.startswith("image/"):
        yield {"type": "image", "data": _b64(item.data), "mime_type": item.mime_type}
        return
    mime, rate, channels = split_audio_mime(item.mime_type)
    audio: dict[str, Any] = {"type": "audio", "mime_type": mime}
    if rate is not None:
        audio["sample_rate"] = rate
    if channels is not None:
        audio["channels"] = channels
    chunk = DEFAULT_AUDIO_CHUNK if size is None else size
    for start in range(0, len(item.data), chunk):
        yield {**audio, "data": _b64(item.data[start : start + chunk])}


def _arguments(item: ToolCallDone, size: int) -> Iterator[dict[str, Any]]:
    for fragment in fragments(arguments_json(item.arguments), size):
        yield {"type": "arguments_delta", "arguments": fragment}


def _refuse(item: DoneItem) -> UnsupportedContentError:
    return UnsupportedContentError(
        PROTOCOL_NAME, item.type, detail="an Interactions stream carries no such item"
    )


def _carried_media(item: InlineDataDone) -> bool:
    """Whether an Interactions step can carry this inline data (images and audio)."""
    return item.mime_type.startswith(("image/", "audio/"))


def render(
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason,
    *,
    model: str,
    fragment_size: int | None,
) -> bytes:
    """Return the Interactions SSE body for ``items``, ``usage`` and ``finish_reason``.

    Raises:
        UnsupportedContentError: an item kind this protocol cannot carry.
        ValueError: ``fragment_size`` is below 1.
    """
    size = resolve_fragment_size(fragment_size, DEFAULT_FRAGMENT_SIZE)
    out = _Writer()
    created = {"id": _INTERACTION_ID, "status": "in_progress", "object": "interaction",
               "model": model}
    out.event("interaction.created", interaction=created)
    out.event("interaction.status_update", interaction_id=_INTERACTION_ID, status="in_progress")
    for item in items:
        if isinstance(item, ThinkingDone | InlineThinkingDone):
            out.step({"type": "thought"}, _thought(item, size))
        elif isinstance(item, TextDone):
            out.step({"type": "model_output"}, _text(item, size))
        elif isinstance(item, InlineDataDone) and _carried_media(item):
            out.step({"type": "model_output"}, _media(item, fragment_size))
        elif isinstance(item, ToolCallDone):
            call = {"type": "function_call", "id": item.tool_call_id, "name": item.name,
                    "arguments": {}}
            out.step(call, _arguments(item, size))
        else:
            raise _refuse(item)
    status = _STATUSES[FinishReason(finish_reason)]
    done = {**created, "status": status, "usage": usage_to_wire(usage)}
    out.event("interaction.completed", interaction=done)
    return out.body()


def normalize(
    items: Sequence[DoneItem], finish_reason: FinishReason
) -> tuple[list[DoneItem], FinishReason]:
    """Return what decoding ``render(items, ..., finish_reason)`` gives back (see above).

    Raises:
        UnsupportedContentError: an item kind this protocol cannot carry.
    """
    result: list[DoneItem] = []
    for item in items:
        if isinstance(item, TextDone):
            if item.text:
                result.append(TextDone(item.text))
        elif isinstance(item, ThinkingDone):
            signature = _signature(item.fidelity)
            kept = None if signature is None else {"signature": signature}
            if item.thinking or kept:
                result.append(ThinkingDone(item.thinking, kept))
        elif isinstance(item, InlineThinkingDone):
            signature = _signature(item.fidelity)
            kept = None if signature is None else {"signature": signature}
            if item.data:
                mime = item.mime_type or DEFAULT_IMAGE_MIME
                result.append(InlineThinkingDone(item.data, mime, kept))
            elif kept:
                result.append(ThinkingDone("", kept))
        elif isinstance(item, InlineDataDone) and _carried_media(item):
            if item.data:
                mime = item.mime_type
                if not mime.startswith("image/"):
                    mime = audio_mime(*split_audio_mime(mime))
                result.append(InlineDataDone(item.data, mime))
        elif isinstance(item, ToolCallDone):
            result.append(ToolCallDone(item.name, item.tool_call_id or item.name, item.arguments))
        else:
            raise _refuse(item)
    return result, finish_reason
