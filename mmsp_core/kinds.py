"""The per-kind table: the only place that knows how each streamed item kind behaves.

For every kind that streams (spec 02 §4): which field grows, which header fields the first
fragment must carry, how fragments join into the done item, when a fragment begins a new item
by itself, and how public fragments and done items are built. ``StreamItems`` reads nothing
else about kinds.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NamedTuple, final

import attrs

from . import jsonlib
from ._construct import text_fragment, thinking_fragment, tool_call_fragment
from .errors import ToolCallArgumentParseError, preview
from .model import (
    DeltaItem,
    DoneItem,
    EmbeddingDelta,
    EmbeddingDone,
    InlineDataDelta,
    InlineDataDone,
    InlineThinkingDelta,
    InlineThinkingDone,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolCallDelta,
    ToolCallDone,
)

__all__ = [
    "KINDS",
    "SURROGATE",
    "TEXT",
    "THINKING",
    "TOOL_CALL",
    "Fragment",
    "Kind",
    "kind_of",
    "repair_surrogates",
    "replace_lone_surrogates",
]

Fidelity = Mapping[str, Any] | None


@final
@attrs.frozen(slots=True)
class Kind:
    """How one streamed kind behaves (one row of spec 02 §4's table)."""

    #: ``"text"``, ``"thinking"``, ``"tool_call"``, ...
    name: str
    #: The delta class of this kind.
    delta_cls: type[DeltaItem]
    #: Reads the growing field of a fragment.
    growing: Callable[[Any], Any]
    #: True when the fragment's growing field and every header field are empty.
    is_empty: Callable[[Any], bool]
    #: True when the fragment begins a new item whatever came before (spec 02 §4).
    begins_itself: Callable[[Any], bool]
    #: True for kinds with header fields (``tool_call``): ids never split such items.
    has_headers: bool
    #: True when the first fragment lacks a header field it must carry.
    lacks_headers: Callable[[Any], bool]
    #: Builds the public fragment: (first fragment of the item or None, fragment, fidelity).
    fragment: Callable[[Any, Any, Fidelity], DeltaItem]
    #: Returns a copy of an item's first fragment with an empty growing field, no fidelity.
    empty_like: Callable[[Any], DeltaItem]
    #: Builds the done item: (client, first fragment, joined chunks, fidelity).
    done: Callable[[str, Any, Sequence[Any], Fidelity], DoneItem]
    #: True when thinking-only output of this kind makes a response empty (RFC-0003 §5).
    is_thinking: bool = False
    #: Whether an empty fragment is still emitted (an empty vector stands for its input).
    keeps_empty: bool = False
    #: For kinds whose growing field is text: a copy of a fragment with another growing value
    #: (the finalizer's surrogate repair, 08 D55); ``None`` for bytes and vectors.
    with_growing: Callable[[Any, str], DeltaItem] | None = None
    #: For kinds a ``Fragment`` can carry: the client delta it stands for, from
    #: ``(growing text, item id)``: no header fields, only the identity as fidelity.
    tagged: Callable[[str, str], DeltaItem] | None = None
    #: For the same kinds: the public fragment of such a delta continuing an open item (no
    #: header fields, no fidelity), from its growing text.
    continuing: Callable[[str], DeltaItem] | None = None


class Fragment(NamedTuple):
    """The client stream's cheap form of its commonest delta (08 D65): a fragment of a kind
    whose growing field is text (``TEXT``, ``THINKING``, ``TOOL_CALL``), without header fields,
    with only its identity as fidelity. It stands for ``kind.tagged(growing, item_id)``
    (``TextDelta(growing, {"item_id": item_id})``, ...), and the finalizer treats it exactly
    as that delta, but a machine builds no attrs object, no fidelity dict and no event for it.
    """

    kind: Kind
    growing: str
    item_id: str

    def item(self) -> DeltaItem:
        """The client delta this fragment stands for."""
        assert self.kind.tagged is not None  # only kinds with ``tagged`` are carried
        return self.kind.tagged(self.growing, self.item_id)


def _parse_arguments(client: str, first: ToolCallDelta, raw: str) -> dict[str, Any]:
    """Parse joined tool-call arguments; ``""`` is ``{}`` (spec 02 §5).

    Raises:
        ToolCallArgumentParseError: the JSON is malformed, truncated, or not an object.
    """
    try:
        value = jsonlib.loads(raw or "{}")
    except (ValueError, RecursionError) as exc:  # too deep a nesting is a RecursionError
        reason = f"invalid JSON: {exc}"
    else:
        if isinstance(value, dict):
            return value
        reason = "Expected a JSON object."
    raise ToolCallArgumentParseError(
        client, first.name, first.tool_call_id, len(raw), preview(raw), detail=reason
    )


def _text_fragment(first: Any, d: TextDelta, fid: Fidelity) -> TextDelta:
    return d if d.fidelity is fid else TextDelta(d.text, fid)


def _thinking_fragment(first: Any, d: ThinkingDelta, fid: Fidelity) -> ThinkingDelta:
    return ThinkingDelta(d.thinking, fid)


def _tool_fragment(first: Any, d: ToolCallDelta, fid: Fidelity) -> ToolCallDelta:
    # Name and id only on the first fragment of a call (08 D29, D42), repaired as every
    # public string is (08 D55); the .done takes them from this fragment.
    if first is None:
        return ToolCallDelta(repair_surrogates(d.name), repair_surrogates(d.tool_call_id),
                             d.arguments, fid)
    return ToolCallDelta("", "", d.arguments, fid)


def _data_fragment(first: Any, d: InlineDataDelta, fid: Fidelity) -> InlineDataDelta:
    return InlineDataDelta(d.data, repair_surrogates(d.mime_type), fid)


def _inline_thinking_fragment(
    first: Any, d: InlineThinkingDelta, fid: Fidelity
) -> InlineThinkingDelta:
    return InlineThinkingDelta(d.data, repair_surrogates(d.mime_type), fid)


def _embedding_fragment(first: Any, d: EmbeddingDelta, fid: Fidelity) -> EmbeddingDelta:
    return d if d.fidelity is None else EmbeddingDelta(d.embedding)


def _tool_done(client: str, first: ToolCallDelta, chunks: Sequence[str], fid: Fidelity) -> DoneItem:
    raw = "".join(chunks)
    arguments = _parse_arguments(client, first, raw)
    if "\\u" in raw:  # an escaped lone surrogate parses into one (08 D55)
        arguments = replace_lone_surrogates(arguments)
    return ToolCallDone(first.name, first.tool_call_id, arguments, fid)


def _embedding_done(client: str, first: Any, chunks: Sequence[Any], fid: Fidelity) -> DoneItem:
    # A delta carries a whole vector (one item per input), so one chunk is the usual case.
    if len(chunks) == 1:
        return EmbeddingDone(tuple(chunks[0]))
    return EmbeddingDone(tuple(itertools.chain.from_iterable(chunks)))


#: Any UTF-16 surrogate code point; a Python ``str`` may hold them, UTF-8 cannot encode them.
#: (Written with ``chr``: a compiled build takes no surrogate in a literal.)
SURROGATE: Final = re.compile(f"[{chr(0xD800)}-{chr(0xDFFF)}]")


def repair_surrogates(text: str) -> str:
    """Join surrogate pairs into their characters and replace lone surrogates by U+FFFD (D55)."""
    if SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def replace_lone_surrogates(value: Any) -> Any:
    """``value`` (parsed JSON, fidelity) with every string repaired by ``repair_surrogates``.

    Walks without recursion, so a value nested as deeply as a JSON parser allows is no
    ``RecursionError``; a value holding no surrogate comes back as it is.
    """
    if isinstance(value, str):
        return repair_surrogates(value)
    if not isinstance(value, dict | list) or not _holds_surrogate(value):
        return value
    root: Any = {} if isinstance(value, dict) else []
    pending = [(value, root)]
    while pending:
        source, target = pending.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in pairs:
            copy: Any
            if isinstance(item, dict | list):
                copy = {} if isinstance(item, dict) else []
                pending.append((item, copy))
            else:
                copy = repair_surrogates(item) if isinstance(item, str) else item
            if isinstance(target, dict):
                target[repair_surrogates(key) if isinstance(key, str) else key] = copy
            else:
                target.append(copy)
    return root


def _holds_surrogate(value: dict[Any, Any] | list[Any]) -> bool:
    """Whether any string key or value inside ``value`` holds a surrogate (no recursion)."""
    pending: list[Any] = [value]
    while pending:
        container = pending.pop()
        items = (
            (k for pair in container.items() for k in pair)
            if isinstance(container, dict)
            else iter(container)
        )
        for item in items:
            if isinstance(item, str):
                if SURROGATE.search(item) is not None:
                    return True
            elif isinstance(item, dict | list):
                pending.append(item)
    return False


def _never(d: Any) -> bool:
    return False


def _always(d: Any) -> bool:
    return True


KINDS: Final[Mapping[str, Kind]] = {
    kind.delta_cls.type: kind
    for kind in (
        Kind(
            "text",
            TextDelta,
            growing=lambda d: d.text,
            is_empty=lambda d: not d.text,
            begins_itself=_never,
            has_headers=False,
            lacks_headers=_never,
            fragment=_text_fragment,
            empty_like=lambda first: TextDelta(""),
            done=lambda c, first, chunks, fid: TextDone("".join(chunks), fid),
            with_growing=lambda d, text: TextDelta(text, d.fidelity),
            tagged=lambda text, item_id: TextDelta(text, {"item_id": item_id}),
            continuing=text_fragment,
        ),
        Kind(
            "thinking",
            ThinkingDelta,
            growing=lambda d: d.thinking,
            is_empty=lambda d: not d.thinking,
            begins_itself=_never,
            has_headers=False,
            lacks_headers=_never,
            fragment=_thinking_fragment,
            empty_like=lambda first: ThinkingDelta(""),
            done=lambda c, first, chunks, fid: ThinkingDone("".join(chunks), fid),
            is_thinking=True,
            with_growing=lambda d, text: ThinkingDelta(text, d.fidelity),
            tagged=lambda text, item_id: ThinkingDelta(text, {"item_id": item_id}),
            continuing=thinking_fragment,
        ),
        Kind(
            "tool_call",
            ToolCallDelta,
            growing=lambda d: d.arguments,
            is_empty=lambda d: not (d.arguments or d.name or d.tool_call_id),
            begins_itself=lambda d: bool(d.name),
            has_headers=True,
            lacks_headers=lambda d: not (d.name and d.tool_call_id),
            fragment=_tool_fragment,
            empty_like=lambda first: ToolCallDelta(first.name, first.tool_call_id, ""),
            done=_tool_done,
            with_growing=lambda d, text: ToolCallDelta(d.name, d.tool_call_id, text, d.fidelity),
            tagged=lambda text, item_id: ToolCallDelta("", "", text, {"item_id": item_id}),
            continuing=tool_call_fragment,
        ),
        Kind(
            "inline_data",
            InlineDataDelta,
            growing=lambda d: d.data,
            is_empty=lambda d: not d.data,
            begins_itself=lambda d: d.mime_type.startswith("image/"),
            has_headers=False,
            lacks_headers=_never,
            fragment=_data_fragment,
            empty_like=lambda first: InlineDataDelta(b"", first.mime_type),
            done=lambda c, first, chunks, fid: InlineDataDone(
                b"".join(chunks), first.mime_type, fid
            ),
        ),
        Kind(
            "inline_thinking",
            InlineThinkingDelta,
            growing=lambda d: d.data,
            is_empty=lambda d: not d.data,
            begins_itself=_always,
            has_headers=False,
            lacks_headers=_never,
            fragment=_inline_thinking_fragment,
            empty_like=lambda first: InlineThinkingDelta(b"", first.mime_type),
            done=lambda c, first, chunks, fid: InlineThinkingDone(
                b"".join(chunks), first.mime_type, fid
            ),
            is_thinking=True,
        ),
        Kind(
            "embedding",
            EmbeddingDelta,
            growing=lambda d: d.embedding,
            is_empty=lambda d: not d.embedding,
            begins_itself=_always,
            has_headers=False,
            lacks_headers=_never,
            fragment=_embedding_fragment,
            empty_like=lambda first: EmbeddingDelta(()),
            done=_embedding_done,
            keeps_empty=True,
        ),
    )
}


#: The kinds a ``Fragment`` carries.
TEXT: Final = KINDS[TextDelta.type]
THINKING: Final = KINDS[ThinkingDelta.type]
TOOL_CALL: Final = KINDS[ToolCallDelta.type]


def kind_of(item: object) -> Kind | None:
    """Return the kind of a delta item, or ``None`` for anything else (a done item, ...)."""
    return KINDS.get(getattr(item, "type", ""))
