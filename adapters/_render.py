"""Small pieces every renderer shares (08 D49): fragment sizes, fragments, SSE frames, and the
public stream of given done items (what a renderer written as a fold over its protocol's
front-door writer feeds that writer, 08 D73)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

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
from mmsp_core.request import encode_json_body

from ._convert import arguments_json

__all__ = ["fragment_size", "fragments", "public_events", "sse_event"]


def fragment_size(requested: int | None, default: int) -> int:
    """Return the fragment size to render with: ``requested``, or ``default`` for ``None``.

    Raises:
        ValueError: ``requested`` is less than 1.
    """
    size = default if requested is None else requested
    if size < 1:
        raise ValueError(f"fragment_size must be at least 1, not {requested}")
    return size


def fragments(text: str, size: int) -> Iterator[str]:
    """Cut ``text`` into pieces of ``size`` characters (the last may be shorter)."""
    return (text[i : i + size] for i in range(0, len(text), size))


def sse_event(name: str | None, payload: Mapping[str, Any]) -> bytes:
    """One SSE frame: ``event: <name>`` (omitted for ``None``) and one compact JSON data line."""
    head = b"" if name is None else b"event: " + name.encode() + b"\n"
    return head + b"data: " + encode_json_body(payload) + b"\n\n"


def public_events(
    items: Sequence[DoneItem], usage: UsageMetadata, finish_reason: FinishReason, size: int
) -> Iterator[UniEvent]:
    """The public stream the finalizer would give for these done items, without timestamps
    (02 §3, §4): per item its fragments of ``size`` (characters of text, thinking and tool-call
    arguments as compact JSON, bytes of audio), the first carrying the item's fidelity (a tool
    call's first carries its name and id and no arguments, as servers begin a call), then the
    item itself as its ``.done``; then the stop.

    As the finalizer does, an item that would emit nothing (empty text or thinking without
    fidelity) has no group at all, and what is one fragment by itself (an image, a thought
    image, an embedding) is one fragment. Tool results and image URLs never stream: skipped.
    """
    for item in items:
        pieces = _fragments(item, size)
        if pieces:
            yield from (UniEvent("delta", (piece,)) for piece in pieces)
            yield UniEvent("delta", (item,))
    yield UniEvent("stop", (), usage, finish_reason)


def _fragments(item: DoneItem, size: int) -> Sequence[Item]:
    """The fragments of one done item, the first carrying its fidelity (see public_events)."""
    pieces: list[TextDelta | ThinkingDelta | ToolCallDelta | InlineDataDelta | InlineThinkingDelta]
    if isinstance(item, ToolCallDone):
        pieces = [ToolCallDelta(item.name, item.tool_call_id, "")]
        arguments = arguments_json(item.arguments)
        pieces += [ToolCallDelta("", "", piece) for piece in fragments(arguments, size)]
    elif isinstance(item, TextDone):
        pieces = [TextDelta(piece) for piece in fragments(item.text, size)] or [TextDelta("")]
    elif isinstance(item, ThinkingDone):
        pieces = [ThinkingDelta(piece) for piece in fragments(item.thinking, size)]
        pieces = pieces or [ThinkingDelta("")]
    elif isinstance(item, InlineDataDone):
        data, mime = item.data, item.mime_type
        whole = mime.startswith("image/")  # every image is an item of its own
        cut_bytes = [data] if whole else [data[i : i + size] for i in range(0, len(data), size)]
        pieces = [InlineDataDelta(piece, mime) for piece in cut_bytes or [b""]]
    elif isinstance(item, InlineThinkingDone):
        pieces = [InlineThinkingDelta(item.data, item.mime_type)]
    elif isinstance(item, EmbeddingDone):
        return [EmbeddingDelta(item.embedding)]  # an empty vector still stands for its input
    else:
        return []
    if item.fidelity:
        pieces[0] = attrs.evolve(pieces[0], fidelity=item.fidelity)
    elif len(pieces) == 1 and _empty(pieces[0]):
        return []
    return pieces


def _empty(piece: Item) -> bool:
    """Whether a fragment without fidelity is one the finalizer would not emit (02 §4)."""
    if isinstance(piece, TextDelta):
        return not piece.text
    if isinstance(piece, ThinkingDelta):
        return not piece.thinking
    return isinstance(piece, InlineDataDelta | InlineThinkingDelta) and not piece.data
