"""Write the body an MMSP server streams for given done items (08 D49, 07 §4).

The body is the public stream as the server writes it: per item, its fragments of
``fragment_size`` (characters of text, thinking and tool-call arguments; bytes of inline data;
numbers of an embedding), each one ``data: <event JSON>`` event, the first carrying the item's
fidelity (and a tool call's name and id), then the item's ``.done``; then the stop with the
usage and finish reason, and ``data: [DONE]``. Events are stamped ``created_at`` from
``CREATED_AT`` on, one millisecond apart. ``error_event`` writes what the server sends for an
error instead (03 §3, 07 §4).

What the public stream cannot carry, i.e. the normalisation under which
``decode(render(x)) == x`` (``normalize`` implements it):

* tool results and image URLs, which never stream (02 §12), are dropped;
* nothing but thinking is no response at all: the server's own client raises
  ``EmptyResponseError`` and the server sends it as an error event, so ``render`` and
  ``normalize`` raise it (RFC-0003 §5).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

import attrs

from adapters._convert import arguments_json
from adapters._render import fragment_size as resolve_fragment_size
from adapters._render import sse_event
from mmsp_core.errors import EmptyResponseError, MMSPError
from mmsp_core.model import (
    DoneItem,
    EmbeddingDelta,
    EmbeddingDone,
    FinishReason,
    InlineDataDelta,
    InlineDataDone,
    InlineThinkingDelta,
    InlineThinkingDone,
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
from mmsp_core.wire import to_wire

__all__ = ["CREATED_AT", "DEFAULT_FRAGMENT_SIZE", "DONE", "error_event", "normalize", "render"]

#: Characters (bytes, numbers) per fragment when the caller picks none.
DEFAULT_FRAGMENT_SIZE: Final = 4
#: The ``created_at`` of the first rendered event (Unix milliseconds).
CREATED_AT: Final = 1_760_000_000_000
#: The server's last event (07 §4).
DONE: Final = b"data: [DONE]\n\n"
#: The client named in the errors of ``render`` and ``normalize``: the protocol's name, as
#: ``decode`` names a protocol source.
_CLIENT: Final = "mmsp"

_S = TypeVar("_S", str, bytes, tuple[float, ...])


def _cut(value: _S, size: int) -> list[_S]:
    """``value`` in pieces of ``size`` (the last may be shorter); one empty piece for an empty
    value, so that every group has a fragment (02 §12: ``K.delta+ K.done``)."""
    return [value[i : i + size] for i in range(0, len(value), size)] or [value[:0]]


def _tool_call(item: ToolCallDone, size: int) -> list[Item]:
    pieces = _cut(arguments_json(item.arguments), size)
    first = ToolCallDelta(item.name, item.tool_call_id, pieces[0], item.fidelity)
    return [first, *(ToolCallDelta("", "", piece) for piece in pieces[1:])]


def _with_fidelity(pieces: list[Any], fidelity: Mapping[str, Any] | None) -> list[Item]:
    """The fragments of one item, the first carrying its fidelity (02 §12)."""
    if fidelity is not None:
        pieces[0] = attrs.evolve(pieces[0], fidelity=fidelity)
    return pieces


#: Done item class -> its fragments; a class missing here does not stream.
_FRAGMENTS: Final[Mapping[type, Callable[[Any, int], list[Item]]]] = {
    TextDone: lambda item, size: _with_fidelity(
        [TextDelta(p) for p in _cut(item.text, size)], item.fidelity),
    ThinkingDone: lambda item, size: _with_fidelity(
        [ThinkingDelta(p) for p in _cut(item.thinking, size)], item.fidelity),
    ToolCallDone: _tool_call,
    InlineDataDone: lambda item, size: _with_fidelity(
        [InlineDataDelta(p, item.mime_type) for p in _cut(item.data, size)], item.fidelity),
    InlineThinkingDone: lambda item, size: _with_fidelity(
        [InlineThinkingDelta(p, item.mime_type) for p in _cut(item.data, size)], item.fidelity),
    EmbeddingDone: lambda item, size: [EmbeddingDelta(p) for p in _cut(item.embedding, size)],
}
_THINKING: Final = (ThinkingDone, InlineThinkingDone)


def render(
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason,
    *,
    model: str,
    fragment_size: int | None,
) -> bytes:
    """Return the SSE body an MMSP server writes for these done items (module docstring).

    Raises:
        EmptyResponseError: nothing but thinking streams (RFC-0003 §5).
        ValueError: ``fragment_size`` is less than 1.
    """
    size = resolve_fragment_size(fragment_size, DEFAULT_FRAGMENT_SIZE)
    streamed, finish = normalize(items, finish_reason, usage)
    events: list[UniEvent] = []
    for item in streamed:
        events.extend(UniEvent("delta", (piece,)) for piece in _FRAGMENTS[type(item)](item, size))
        events.append(UniEvent("delta", (item,)))
    events.append(UniEvent("stop", (), usage, finish))
    out = [
        sse_event(None, to_wire(attrs.evolve(event, created_at=CREATED_AT + index)))
        for index, event in enumerate(events)
    ]
    out.append(DONE)
    return b"".join(out)


def error_event(error: MMSPError) -> bytes:
    """What the server writes for ``error`` in place of the rest of the stream: one
    ``data: {"error": ...}`` event (03 §3), then ``data: [DONE]`` (07 §4)."""
    return sse_event(None, to_wire(error)) + DONE


def normalize(
    items: Sequence[DoneItem],
    finish_reason: FinishReason,
    usage: UsageMetadata | None = None,
) -> tuple[list[DoneItem], FinishReason]:
    """Apply the module docstring's normalisation: what ``decode(render(...))`` gives back.

    Raises:
        EmptyResponseError: nothing but thinking streams (its ``usage_metadata`` is ``usage``).
    """
    streamed = [item for item in items if type(item) in _FRAGMENTS]
    if all(isinstance(item, _THINKING) for item in streamed):
        raise EmptyResponseError(_CLIENT, finish_reason, usage)
    return streamed, FinishReason(finish_reason)
