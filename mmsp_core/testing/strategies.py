"""Hypothesis strategies for MMSP values and streams (needs hypothesis installed).

- ``chunked(data)``: a random partition of ``data`` (empty chunks allowed).
- ``done_items()``, ``usage()``, ``finish_reasons()``, ``messages()``, ``configs()``,
  ``public_events()``: values for round-trip tests.
- ``client_streams()``: valid client streams (lists of client ``UniEvent``s whose items carry
  ``fidelity.item_id``), ending with usage and a finish reason.
- ``hostile_json()``, ``edits(document)``, ``apply_edits`` and ``dumps``: any JSON value (deep
  nesting and huge numbers included, as ``Huge`` recipes so that a falsifying example prints
  short) put at any path of a JSON document, for the "only ``MMSPError``" properties (08 D59).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any, Final, Literal

import attrs
from hypothesis import strategies as st

from ..model import (
    EmbeddingConfig,
    EmbeddingDelta,
    EmbeddingDone,
    FinishReason,
    ImageConfig,
    ImageUrlDone,
    InlineDataDelta,
    InlineDataDone,
    InlineThinkingDone,
    PromptCaching,
    ResponseFormat,
    SpeakerConfig,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDelta,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniEvent,
    UniMessage,
    UsageMetadata,
)

__all__ = [
    "Edit",
    "Huge",
    "JsonPath",
    "apply_edits",
    "chunked",
    "client_streams",
    "configs",
    "done_items",
    "dumps",
    "edits",
    "finish_reasons",
    "hostile_json",
    "json_objects",
    "json_paths",
    "messages",
    "public_events",
    "response_formats",
    "usage",
]


@st.composite
def chunked(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """A random partition of ``data`` into chunks; empty chunks are allowed."""
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=min(len(data), 64) + 2)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


_json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_json = st.recursive(
    _json_leaf,
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)


def json_objects() -> st.SearchStrategy[dict[str, Any]]:
    """Random JSON objects (nested lists and objects, any unicode)."""
    return st.dictionaries(st.text(max_size=8), _json, max_size=4)


_fidelity = st.none() | st.dictionaries(st.sampled_from(["signature", "phase", "x"]),
                                        st.text(max_size=8), min_size=1, max_size=2)
_ids = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)


def usage() -> st.SearchStrategy[UsageMetadata]:
    """Random usage: each count an int >= 0 or None."""
    count = st.none() | st.integers(0, 10**9)
    return st.builds(UsageMetadata, count, count, count, count)


def finish_reasons() -> st.SearchStrategy[FinishReason]:
    """Any of the four finish reasons."""
    return st.sampled_from(list(FinishReason))


def done_items() -> st.SearchStrategy[Any]:
    """Any done item, user-side kinds included."""
    return st.one_of(
        st.builds(TextDone, st.text(), _fidelity),
        st.builds(ThinkingDone, st.text(), _fidelity),
        st.builds(ToolCallDone, _ids, _ids, json_objects(), _fidelity),
        st.builds(InlineDataDone, st.binary(max_size=32), st.just("image/png"), _fidelity),
        st.builds(InlineThinkingDone, st.binary(max_size=32), st.just("image/png"), _fidelity),
        st.builds(EmbeddingDone, st.lists(st.floats(allow_nan=False, width=32)).map(tuple)),
        st.builds(ToolResultDone, st.text(), _ids, st.none() | st.lists(st.text()).map(tuple)),
        st.builds(ImageUrlDone, st.text()),
    )


def messages() -> st.SearchStrategy[UniMessage]:
    """Random messages with optional usage, finish and timestamp."""
    return st.builds(
        UniMessage,
        st.sampled_from(["user", "assistant"]),
        st.lists(done_items(), max_size=4).map(tuple),
        st.none() | usage(),
        st.none() | finish_reasons(),
        st.none() | st.integers(0, 2**62),
    )


def public_events() -> st.SearchStrategy[UniEvent]:
    """Random events in public shape (delta with one item, or stop)."""
    delta = st.builds(
        lambda item, at: UniEvent("delta", (item,), None, None, at),
        st.one_of(
            st.builds(TextDelta, st.text(), _fidelity),
            st.builds(ThinkingDelta, st.text(), _fidelity),
            st.builds(ToolCallDelta, st.text(), st.text(), st.text(), _fidelity),
            st.builds(InlineDataDelta, st.binary(max_size=16), st.text(max_size=10), _fidelity),
            st.builds(EmbeddingDelta, st.lists(st.floats(allow_nan=False)).map(tuple)),
            done_items(),
        ),
        st.integers(0, 2**62),
    )
    stop = st.builds(
        lambda u, f, at: UniEvent("stop", (), u, f, at), usage(), finish_reasons(),
        st.integers(0, 2**62),
    )
    return delta | stop


def response_formats() -> st.SearchStrategy[ResponseFormat]:
    """Both shapes of ``response_format`` (08 D74), any JSON object as the schema."""
    return st.builds(ResponseFormat, st.just("json_object"), strict=st.booleans()) | st.builds(
        ResponseFormat, st.just("json_schema"), _ids, json_objects(), st.booleans()
    )


def configs() -> st.SearchStrategy[UniConfig]:
    """Random configs, unknown keys in ``extra`` included."""
    opt = st.none
    return st.builds(
        UniConfig,
        max_tokens=opt() | st.integers(1, 10**6),
        temperature=opt() | st.floats(0, 2),
        top_p=opt() | st.floats(0, 1, exclude_min=True),
        stop_sequences=opt() | st.lists(st.text(min_size=1, max_size=5), min_size=1,
                                        max_size=4).map(tuple),
        seed=opt() | st.integers(-(2**63), 2**63 - 1),
        response_format=opt() | response_formats(),
        tools=opt()
        | st.lists(
            st.builds(ToolSchema, _ids, st.text(max_size=10), opt() | json_objects()), max_size=2
        ).map(tuple),
        tool_choice=opt()
        | st.sampled_from(["auto", "required", "none"])
        | st.lists(_ids, max_size=2).map(tuple),
        thinking_level=opt() | st.sampled_from(list(ThinkingLevel)),
        thinking_summary=opt() | st.booleans(),
        system_prompt=opt() | st.text(max_size=10),
        prompt_caching=opt() | st.sampled_from(list(PromptCaching)),
        fast_mode=opt() | st.booleans(),
        image_config=opt()
        | st.builds(ImageConfig, opt() | st.just("16:9"), opt() | st.just("2K")),
        tts_config=opt()
        | st.lists(st.builds(SpeakerConfig, _ids, opt() | _ids), max_size=2).map(tuple),
        embedding_config=opt() | st.builds(EmbeddingConfig, opt() | st.integers(1, 4096)),
        trace_id=opt() | _ids,
        extra=st.dictionaries(st.text(max_size=6).map(lambda k: "x_" + k), _json, max_size=2),
    )


# -- client streams -------------------------------------------------------------------------


def _split_text(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=4)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def client_streams(draw: st.DrawFn) -> list[UniEvent]:
    """A valid client stream: items of several kinds, each under its own ``item_id``.

    Fragments may be empty, several items may share one client event, the item that carries
    fidelity carries it once, and usage and finish reason arrive on one or two stop events.
    Every item has visible content, so the stream always ends with a stop.
    """
    items: list[Any] = []
    count = draw(st.integers(1, 5))
    for n in range(count):
        item_id = f"i{n}"
        kind = draw(st.sampled_from(["text", "thinking", "tool_call"]))
        fid = draw(_fidelity)
        if kind == "tool_call":
            args = draw(json_objects())
            raw = json.dumps(args)
            parts = _split_text(draw, raw)
            frags: list[Any] = [
                ToolCallDelta(draw(_ids), draw(_ids), parts[0], {"item_id": item_id, **(fid or {})})
            ]
            frags += [ToolCallDelta("", "", p, {"item_id": item_id}) for p in parts[1:]]
        else:
            text = draw(st.text(min_size=1))
            cls = TextDelta if kind == "text" else ThinkingDelta
            parts = _split_text(draw, text)
            frags = [cls(p, {"item_id": item_id}) for p in parts]
            if fid:
                frags.append(cls("", {"item_id": item_id, **fid}))
        items.extend(frags)
    if all(isinstance(i, ThinkingDelta) for i in items):
        items.append(TextDelta("answer", {"item_id": "final"}))
    events: list[UniEvent] = []
    position = 0
    while position < len(items):
        if draw(st.booleans()):
            events.append(UniEvent("delta"))  # a wire event with nothing universal
        take = draw(st.integers(1, 3))
        events.append(UniEvent("delta", tuple(items[position : position + take])))
        position += take
    u = draw(usage())
    finish = draw(finish_reasons())
    if draw(st.booleans()):
        events.append(UniEvent("stop", (), u, finish))
    else:
        events.append(UniEvent("stop", (), UsageMetadata(prompt_tokens=1), None))
        events.append(UniEvent("stop", (), u, finish))
    return events


# -- hostile JSON (08 D59) ------------------------------------------------------------------

#: A path into a JSON document: object keys and array indices, outermost first.
JsonPath = tuple[str | int, ...]


@attrs.frozen
class Huge:
    """A JSON value too big to print in a falsifying example: ``size`` nested arrays
    (``[[...]]``), ``size`` nested objects (``{"a": {"a": ...{}}}``) or an integer of ``size``
    nines. ``text()`` writes it, ``build()`` makes the Python value, both without recursion."""

    kind: Literal["arrays", "objects", "digits"]
    size: int

    def text(self) -> str:
        """The JSON text of the value."""
        if self.kind == "arrays":
            return "[" * self.size + "]" * self.size
        if self.kind == "objects":
            return '{"a":' * self.size + "{}" + "}" * self.size
        return "9" * self.size

    def build(self) -> Any:
        """The value ``json.loads(self.text())`` would return, if it could."""
        if self.kind == "digits":
            return 10**self.size - 1
        value: Any = [] if self.kind == "arrays" else {}
        for _ in range(self.size - 1):
            value = [value] if self.kind == "arrays" else {"a": value}
        return value


#: Depths that matter: Python's recursion limit (about 1,000) and the issue's 100,000.
_DEPTHS: Final = (2, 500, 990, 1_000, 1_100, 5_000, 100_000)

_json_any = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([2**63, -(2**63) - 1, 2**1024, 10**400])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=16),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=10,
)


def hostile_json() -> st.SearchStrategy[Any]:
    """Any JSON value: ``null``, booleans, huge integers, floats, strings, ``[]``, ``{}``,
    nested arrays and objects, and ``Huge`` ones (up to 100,000 deep, 5,000 digits)."""
    huge = st.builds(
        Huge,
        st.sampled_from(["arrays", "objects", "digits"]),
        st.sampled_from(_DEPTHS) | st.integers(1, 100_000),
    )
    return st.just([]) | st.just({}) | _json_any | huge


def json_paths(document: Any) -> list[JsonPath]:
    """Every path of ``document``, the document itself (``()``) first, parents before
    children."""
    paths: list[JsonPath] = []
    pending: list[tuple[JsonPath, Any]] = [((), document)]
    while pending:
        path, value = pending.pop(0)
        paths.append(path)
        if isinstance(value, dict):
            pending.extend(((*path, key), child) for key, child in value.items())
        elif isinstance(value, list):
            pending.extend(((*path, index), child) for index, child in enumerate(value))
    return paths


Edit = tuple[JsonPath, Any]


@st.composite
def edits(draw: st.DrawFn, document: Any, *, max_edits: int = 3) -> list[Edit]:
    """One to ``max_edits`` replacements ``(path, hostile value)`` at paths of ``document``."""
    paths = json_paths(document)
    return draw(
        st.lists(st.tuples(st.sampled_from(paths), hostile_json()), min_size=1, max_size=max_edits)
    )


def apply_edits(document: Any, changes: Sequence[Edit], *, build: bool = False) -> Any:
    """Return ``document`` with each edit applied in order (containers on the path are copied,
    ``document`` is not changed). A path that an earlier edit removed is skipped. With
    ``build``, ``Huge`` values become their Python values; otherwise they stay for ``dumps``."""
    for path, value in changes:
        if build and isinstance(value, Huge):
            value = value.build()
        document = _replaced(document, path, value)
    return document


def _replaced(document: Any, path: JsonPath, value: Any) -> Any:
    if not path:
        return value
    head, *rest = path
    if isinstance(document, dict) and isinstance(head, str) and head in document:
        return {**document, head: _replaced(document[head], tuple(rest), value)}
    if isinstance(document, list) and isinstance(head, int) and head < len(document):
        copy = list(document)
        copy[head] = _replaced(document[head], tuple(rest), value)
        return copy
    return document


def dumps(document: Any) -> str:
    """``json.dumps`` (compact) of a document that may hold ``Huge`` values."""
    huge: list[Huge] = []

    def placeholder(value: Any) -> str:
        if not isinstance(value, Huge):
            raise TypeError(f"not JSON: {type(value).__name__}")
        huge.append(value)
        return f"@@huge{len(huge) - 1}@@"

    text = json.dumps(document, separators=(",", ":"), default=placeholder)
    for index, value in enumerate(huge):
        text = text.replace(f'"@@huge{index}@@"', value.text(), 1)
    return text
