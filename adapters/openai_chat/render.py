"""Write the body a Chat Completions server streams for given done items (08 D49).

One way to write the protocol: ``render`` is a fold over the front door's stream writer
(``writer.ChatStreamWriter``, whose docstring says what each event becomes): the done items
become the public stream the finalizer would give for them (``adapters._render.
public_events``: fragments of ``fragment_size`` characters, the first carrying the item's
fidelity, then the ``.done``, then the stop), and each event goes through the writer. The
chunks carry a fixed ``id`` and ``created`` 0.

What Chat cannot carry, i.e. the normalisation under which ``decode(render(x)) == x``, and
``decode`` of what the writer writes for a public stream gives back that stream's done items
under the same normalisation (``normalize`` implements it; the round-trip tests use it):

* items other than text, thinking and tool calls (inline data, inline thinking,
  embeddings, tool results, image URLs) are dropped;
* text and tool-call fidelity is dropped; thinking fidelity keeps only
  ``encrypted_content``/``format``/``reasoning_id`` when it has both ``encrypted_content`` and
  ``format`` (strings), else only a valid ``reasoning_field``; there are no signatures;
* text items with empty text, and thinking items with empty text and no encrypted data,
  are dropped (nothing goes on the wire for them);
* consecutive text items merge into one; a thinking item merges into the thinking item before
  it when that one carries no encrypted data (whose block ends its item) and both went in the
  same form: the recorded ``reasoning_content``, the recorded ``reasoning``, or neither (both
  spellings with ``reasoning_details``, the form of an item with encrypted data too); the
  merged item keeps the first recorded fidelity;
* tool-call arguments are re-encoded as compact JSON (the parsed object is unchanged);
* finish reason ``unknown`` has no Chat value and is written as ``stop``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from adapters._render import fragment_size as resolve_fragment_size
from adapters._render import public_events
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    UsageMetadata,
)

from .writer import ChatStreamWriter, encrypted_fidelity, reasoning_field

__all__ = ["DEFAULT_FRAGMENT_SIZE", "normalize", "render"]

#: Characters per fragment when the caller picks none: about one token, as servers stream.
DEFAULT_FRAGMENT_SIZE: Final = 4


def render(
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason,
    *,
    model: str,
    fragment_size: int | None,
) -> bytes:
    """Return the SSE body of a Chat Completions stream for these done items (08 D49): the
    stream writer's chunks for their public stream (module docstring).

    Raises:
        ValueError: ``fragment_size`` is less than 1.
    """
    size = resolve_fragment_size(fragment_size, DEFAULT_FRAGMENT_SIZE)
    writer = ChatStreamWriter(model)
    return b"".join(
        writer.event(event) for event in public_events(items, usage, finish_reason, size)
    )


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
    encrypted = encrypted_fidelity(item.fidelity)
    if encrypted is not None:
        return ThinkingDone(item.thinking, encrypted)
    if not item.thinking:
        return None
    field = reasoning_field(item.fidelity)
    return ThinkingDone(item.thinking, None if field is None else {"reasoning_field": field})


def _merges(first: ThinkingDone, second: ThinkingDone) -> bool:
    """Whether the decoder joins two consecutive carried thinking items (same item id)."""
    return encrypted_fidelity(first.fidelity) is None and _form(first) == _form(second)


def _form(item: ThinkingDone) -> str | None:
    """The one field a carried thinking item is written in; ``None``: both spellings and
    ``reasoning_details`` (writer docstring)."""
    return reasoning_field(item.fidelity) if encrypted_fidelity(item.fidelity) is None else None
