"""Write the body a generateContent server streams for given done items (08 D49).

The body: one ``data:`` chunk per part (``candidates[0].content.parts`` holding that one part,
role ``model``, the given model as ``modelVersion``), then a last chunk with no parts, the
finish reason and ``usageMetadata``. Per item: text and thinking in fragments of
``fragment_size`` characters (thinking with ``thought: true``); a tool call as one
``functionCall`` part (``name``, ``id``, ``args``); inline data and inline thinking as one
``inlineData`` part (base64; thinking with ``thought: true``). An item's signature
(``thoughtSignature``) goes on its first part. Finish reasons: ``stop`` and ``tool_call`` are
both ``STOP`` (the decoder reads a tool turn from its calls), ``length`` ``MAX_TOKENS``,
``unknown`` ``OTHER``.

What generateContent cannot carry, i.e. the normalisation under which
``decode(render(x)) == x`` (``normalize`` implements it, the round-trip test uses it):

* items other than text, thinking, tool calls, inline data and inline thinking (embeddings,
  tool results, image URLs) are dropped;
* fidelity keeps only a string ``signature``;
* text and thinking with empty text, and inline items with no bytes, are dropped unless
  signed;
* consecutive text items merge into one, and so do consecutive thinking items and
  inline data followed by inline data that is not an image (an image begins an item by
  itself), unless both are signed (a part kind is its item id; the decoder never gives an
  item two signatures); the first MIME type wins;
* an empty signed thinking item right after an unsigned inline thinking item signs it, and an
  empty signed inline thinking item right after unsigned thinking signs that (thought text
  and thought images share the id ``"thought"``);
* the finish reason is ``tool_call`` when a tool call survives and the finish is ``stop`` or
  ``tool_call``, else ``stop`` for those two.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import attrs

from adapters._render import fragment_size as resolve_fragment_size
from adapters._render import fragments, sse_event
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

from .usage import usage_json

__all__ = ["DEFAULT_FRAGMENT_SIZE", "RESPONSE_ID", "normalize", "render"]

#: Characters per fragment when the caller picks none: about a chunk of a real stream.
DEFAULT_FRAGMENT_SIZE: Final = 16
#: The ``responseId`` every rendered chunk carries.
RESPONSE_ID: Final = "mmsp-render"

_FINISH: Final[Mapping[FinishReason, str]] = {
    FinishReason.STOP: "STOP",
    FinishReason.TOOL_CALL: "STOP",
    FinishReason.LENGTH: "MAX_TOKENS",
    FinishReason.UNKNOWN: "OTHER",
}
_CARRIED: Final = (TextDone, ThinkingDone, ToolCallDone, InlineDataDone, InlineThinkingDone)
_JSON = dict[str, Any]


def render(
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason,
    *,
    model: str,
    fragment_size: int | None,
) -> bytes:
    """Return the SSE body of a ``streamGenerateContent`` response for these done items.

    Raises:
        ValueError: ``fragment_size`` is less than 1.
    """
    size = resolve_fragment_size(fragment_size, DEFAULT_FRAGMENT_SIZE)

    def chunk(candidate: _JSON, **extra: Any) -> bytes:
        body = {"candidates": [candidate], **extra, "modelVersion": model,
                "responseId": RESPONSE_ID}
        return sse_event(None, body)

    out = []
    for item in items:
        for part in _parts(item, size):
            out.append(chunk({"content": {"parts": [part], "role": "model"}, "index": 0}))
    last = {
        "content": {"parts": [], "role": "model"},
        "finishReason": _FINISH[FinishReason(finish_reason)],
        "index": 0,
    }
    out.append(chunk(last, usageMetadata=usage_json(usage)))
    return b"".join(out)


def _signature(fidelity: Mapping[str, Any] | None) -> str | None:
    value = (fidelity or {}).get("signature")
    return value if isinstance(value, str) else None


def _parts(item: DoneItem, size: int) -> Iterator[_JSON]:
    """The parts of one item; the signature on the first."""
    parts: list[_JSON] = []
    if isinstance(item, TextDone | ThinkingDone):
        text = item.text if isinstance(item, TextDone) else item.thinking
        pieces = list(fragments(text, size)) or [""]
        flag = {"thought": True} if isinstance(item, ThinkingDone) else {}
        parts = [{"text": piece, **flag} for piece in pieces]
    elif isinstance(item, ToolCallDone):
        call = {"name": item.name, "id": item.tool_call_id, "args": dict(item.arguments)}
        parts = [{"functionCall": call}]
    elif isinstance(item, InlineDataDone | InlineThinkingDone):
        data = {"mimeType": item.mime_type, "data": base64.b64encode(item.data).decode()}
        flag = {"thought": True} if isinstance(item, InlineThinkingDone) else {}
        parts = [{"inlineData": data, **flag}]
    signature = _signature(item.fidelity)
    if parts and signature is not None:
        parts[0]["thoughtSignature"] = signature
    return iter(parts)


def normalize(
    items: Sequence[DoneItem], finish_reason: FinishReason
) -> tuple[list[DoneItem], FinishReason]:
    """Apply the module docstring's normalisation: what ``decode(render(...))`` gives back."""
    out: list[DoneItem] = []
    for item in items:
        kept = _carried(item)
        if kept is None:
            continue
        previous = out[-1] if out else None
        merged = None if previous is None else _merge(previous, kept)
        if merged is None:
            out.append(kept)
        else:
            out[-1] = merged
    finish = FinishReason(finish_reason)
    if finish in (FinishReason.STOP, FinishReason.TOOL_CALL):
        called = any(isinstance(item, ToolCallDone) for item in out)
        finish = FinishReason.TOOL_CALL if called else FinishReason.STOP
    return out, finish


def _carried(item: DoneItem) -> DoneItem | None:
    """``item`` as the decoder gives it back alone, or ``None`` when nothing of it arrives."""
    if not isinstance(item, _CARRIED):
        return None
    signature = _signature(item.fidelity)
    fidelity = None if signature is None else {"signature": signature}
    if isinstance(item, TextDone):
        return TextDone(item.text, fidelity) if item.text or fidelity else None
    if isinstance(item, ThinkingDone):
        return ThinkingDone(item.thinking, fidelity) if item.thinking or fidelity else None
    if isinstance(item, ToolCallDone):
        return ToolCallDone(item.name, item.tool_call_id, item.arguments, fidelity)
    if not item.data and fidelity is None:
        return None
    return type(item)(item.data, item.mime_type, fidelity)


def _merge(previous: DoneItem, item: DoneItem) -> DoneItem | None:
    """The one item the decoder makes of ``previous`` and ``item``, or ``None`` for two."""
    if previous.fidelity is not None and item.fidelity is not None:
        return None  # an item never holds two signatures: the second starts a new one
    fidelity = previous.fidelity or item.fidelity
    if isinstance(previous, TextDone) and isinstance(item, TextDone):
        return TextDone(previous.text + item.text, fidelity)
    if isinstance(previous, ThinkingDone) and isinstance(item, ThinkingDone):
        return ThinkingDone(previous.thinking + item.thinking, fidelity)
    if (
        isinstance(previous, InlineDataDone)
        and isinstance(item, InlineDataDone)
        and not item.mime_type.startswith("image/")
    ):
        return InlineDataDone(previous.data + item.data, previous.mime_type, fidelity)
    # Thought text and thought images share an item id: an empty one only adds its signature.
    if isinstance(previous, InlineThinkingDone) and isinstance(item, ThinkingDone):
        return None if item.thinking else attrs.evolve(previous, fidelity=fidelity)
    if isinstance(previous, ThinkingDone) and isinstance(item, InlineThinkingDone):
        return None if item.data else attrs.evolve(previous, fidelity=fidelity)
    return None
