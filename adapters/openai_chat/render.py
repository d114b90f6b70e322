"""Write the body a Chat Completions server streams for given done items (08 D49).

The body: ``chat.completion.chunk`` objects (fixed ``id``, ``created`` 0, the given model),
the first delta carrying ``role``; then, per item, fragments of ``fragment_size`` characters:
text as ``content``; thinking as ``reasoning_content`` or ``reasoning`` (its recorded
``reasoning_field``; both spellings when none is recorded); thinking that carries gateway
encrypted fidelity as ``reasoning_details`` (``reasoning.text`` blocks, then one
``reasoning.encrypted`` block); tool calls as ``tool_calls`` with ``index``/``id``/``type``/
``function.name`` on the first fragment and argument text after it. Then a chunk with the
finish reason, a ``choices: []`` chunk with the usage, and ``data: [DONE]``.

What Chat cannot carry, i.e. the normalisation under which ``decode(render(x)) == x``
(``normalize`` implements it and the round-trip test uses it):

* items other than text, thinking and tool calls (inline data, inline thinking,
  embeddings, tool results, image URLs) are dropped;
* text and tool-call fidelity is dropped; thinking fidelity keeps only
  ``encrypted_content``/``format``/``reasoning_id`` when it has both ``encrypted_content`` and
  ``format`` (strings), else only a valid ``reasoning_field``; there are no signatures;
* text items with empty text, and thinking items with empty text and no encrypted data,
  are dropped (nothing goes on the wire for them);
* consecutive text items merge into one; consecutive thinking items without encrypted data
  merge when they use the same wire field (``reasoning`` apart from ``reasoning_content``
  or both), the first recorded ``reasoning_field`` winning;
* tool-call arguments are re-encoded as compact JSON (the parsed object is unchanged);
* finish reason ``unknown`` has no Chat value and is written as ``stop``.
"""

from __future__ import annotations

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

from .usage import usage_json

__all__ = ["DEFAULT_FRAGMENT_SIZE", "normalize", "render"]

#: Characters per fragment when the caller picks none: about one token, as servers stream.
DEFAULT_FRAGMENT_SIZE: Final = 4
#: The completion id every rendered chunk carries.
COMPLETION_ID: Final = "chatcmpl-mmsp-render"

_FINISH: Final[Mapping[FinishReason, str]] = {
    FinishReason.STOP: "stop",
    FinishReason.LENGTH: "length",
    FinishReason.TOOL_CALL: "tool_calls",
    FinishReason.UNKNOWN: "stop",  # Chat has no such value
}
_FIELDS: Final = ("reasoning_content", "reasoning")
_JSON = dict[str, Any]


def render(
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason,
    *,
    model: str,
    fragment_size: int | None,
) -> bytes:
    """Return the SSE body of a Chat Completions stream for these done items (08 D49).

    Raises:
        ValueError: ``fragment_size`` is less than 1.
    """
    size = resolve_fragment_size(fragment_size, DEFAULT_FRAGMENT_SIZE)

    def chunk(delta: _JSON, finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse_event(
            None,
            {
                "id": COMPLETION_ID,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [choice],
            },
        )

    out = [chunk({"role": "assistant", "content": ""})]
    calls = 0
    for item in items:
        for delta in _deltas(item, size, calls):
            out.append(chunk(delta))
        calls += isinstance(item, ToolCallDone)
    out.append(chunk({}, _FINISH[FinishReason(finish_reason)]))
    out.append(
        sse_event(
            None,
            {
                "id": COMPLETION_ID,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [],
                "usage": usage_json(usage),
            },
        )
    )
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def _deltas(item: DoneItem, size: int, call_index: int) -> Iterator[_JSON]:
    if isinstance(item, TextDone):
        for piece in fragments(item.text, size):
            yield {"content": piece}
    elif isinstance(item, ThinkingDone):
        encrypted = _encrypted(item.fidelity)
        if encrypted is not None:
            for piece in fragments(item.thinking, size):
                block = {"type": "reasoning.text", "text": piece, "index": 0}
                yield {"reasoning": piece, "reasoning_details": [block]}
            yield {"reasoning_details": [_encrypted_block(encrypted)]}
            return
        field = _reasoning_field(item.fidelity)
        names = (field,) if field is not None else _FIELDS
        for piece in fragments(item.thinking, size):
            yield dict.fromkeys(names, piece)
    elif isinstance(item, ToolCallDone):
        function = {"name": item.name, "arguments": ""}
        yield {
            "tool_calls": [
                {
                    "index": call_index,
                    "id": item.tool_call_id,
                    "type": "function",
                    "function": function,
                }
            ]
        }
        for piece in fragments(arguments_json(item.arguments), size):
            yield {"tool_calls": [{"index": call_index, "function": {"arguments": piece}}]}


def _encrypted(fidelity: Mapping[str, Any] | None) -> _JSON | None:
    """Return the gateway encrypted fidelity keys Chat carries, if the item has them."""
    fidelity = fidelity or {}
    data, fmt, rid = (fidelity.get(k) for k in ("encrypted_content", "format", "reasoning_id"))
    if not (isinstance(data, str) and isinstance(fmt, str)):
        return None
    kept: _JSON = {"encrypted_content": data, "format": fmt}
    if isinstance(rid, str):
        kept["reasoning_id"] = rid
    return kept


def _encrypted_block(encrypted: Mapping[str, Any]) -> _JSON:
    block: _JSON = {
        "type": "reasoning.encrypted",
        "data": encrypted["encrypted_content"],
        "format": encrypted["format"],
        "index": 0,
    }
    if "reasoning_id" in encrypted:
        block["id"] = encrypted["reasoning_id"]
    return block


def _reasoning_field(fidelity: Mapping[str, Any] | None) -> str | None:
    field = (fidelity or {}).get("reasoning_field")
    return field if field in _FIELDS else None


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
        if isinstance(kept, TextDone) and isinstance(previous, TextDone):
            out[-1] = TextDone(previous.text + kept.text)
        elif (
            isinstance(kept, ThinkingDone)
            and isinstance(previous, ThinkingDone)
            and _merges(previous, kept)
        ):
            out[-1] = ThinkingDone(
                previous.thinking + kept.thinking, previous.fidelity or kept.fidelity
            )
        else:
            out.append(kept)
    finish = FinishReason(finish_reason)
    return out, FinishReason.STOP if finish is FinishReason.UNKNOWN else finish


def _carried(item: DoneItem) -> DoneItem | None:
    if isinstance(item, TextDone):
        return TextDone(item.text) if item.text else None
    if isinstance(item, ToolCallDone):
        return ToolCallDone(item.name, item.tool_call_id, item.arguments)
    if not isinstance(item, ThinkingDone):
        return None
    encrypted = _encrypted(item.fidelity)
    if encrypted is not None:
        return ThinkingDone(item.thinking, encrypted)
    if not item.thinking:
        return None
    field = _reasoning_field(item.fidelity)
    return ThinkingDone(item.thinking, None if field is None else {"reasoning_field": field})


def _merges(first: ThinkingDone, second: ThinkingDone) -> bool:
    """Whether the decoder joins two consecutive carried thinking items (same item id)."""
    if _encrypted(first.fidelity) is not None or _encrypted(second.fidelity) is not None:
        return False
    return (_reasoning_field(first.fidelity) == "reasoning") == (
        _reasoning_field(second.fidelity) == "reasoning"
    )
