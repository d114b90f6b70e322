"""``StreamItems``: the finalizer that turns the client stream into the public stream.

Theory of operation (spec 02 §4-§7, RFC-0003 §4-§5):

A machine yields *client* events: delta items only, zero or more per event, each tagged with
``fidelity["item_id"]``; usage and finish reason on ``stop`` events, possibly in pieces; or,
for the commonest delta, a ``kinds.Fragment``, which stands for its one delta item and takes a
fast path when it continues the open item (``_push_fragment``; 08 D65). The
finalizer keeps at most one *open item*. For each incoming fragment it decides (``_route``)
whether the fragment continues the open item, begins a new one (closing the open item with its
``.done``), or is a fidelity-only tail of the open item under another kind. Public fragments
go out as they come, without ``item_id``, without empty fragments, with fidelity at most once.
``.done`` items are built only from what was emitted (``kinds.KINDS``). Usage and finish
reason are merged field by field into the single ``stop`` built by ``close()``.

States: ``OPEN`` (taking events) -> ``ENDED`` (after ``end()``, the trailing ``.done`` is out)
-> ``CLOSED`` (after ``close()`` built the stop). Any exception moves to ``ERROR``; every later
call then raises ``RuntimeError`` (a caller bug, as in h11).

Every call is all-or-nothing: checks run before anything of the call is emitted, so a bad
fragment raises without the previous item's ``.done`` (08 D50). The pipeline pushes one item
at a time, so an error always comes after every public event decided before it (09).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from ._construct import delta_event
from .errors import (
    EmptyResponseError,
    IncompleteStreamError,
    StreamLimitError,
    StreamProtocolError,
)
from .kinds import (
    KINDS,
    SURROGATE,
    Fragment,
    Kind,
    repair_surrogates,
    replace_lone_surrogates,
)
from .model import FinishReason, Item, UniEvent, UsageMetadata

__all__ = ["ClientEvent", "StreamItems"]

#: What a machine yields and a finalizer takes (08 D65): an event, or a fragment standing for
#: a delta event of one item.
ClientEvent: TypeAlias = UniEvent | Fragment

#: Largest joined growing field of one item (characters, bytes or floats); 08 D18.
DEFAULT_MAX_ITEM_SIZE: Final = 64 << 20
#: Fragments of an item kept apart before they are joined into one piece: a 2-character
#: fragment costs some 60 bytes as its own object, so joining bounds what an item holds to a
#: small factor of its size (08 D18).
_COMPACT_EVERY: Final = 256
#: The high surrogates, the first halves of UTF-16 pairs (written with ``chr``: a compiled
#: build, docs/architecture.md "The compiled build", takes no surrogate in a literal).
_HIGH_FIRST: Final = chr(0xD800)
_HIGH_LAST: Final = chr(0xDBFF)


class _State(enum.Enum):
    #: Taking client events.
    OPEN = enum.auto()
    #: ``end()`` ran: the trailing ``.done`` is out; only ``close()`` is allowed.
    ENDED = enum.auto()
    #: ``close()`` built the stop.
    CLOSED = enum.auto()
    #: An exception was raised; every later call raises ``RuntimeError``.
    ERROR = enum.auto()


_OPEN: Final = _State.OPEN


class _OpenItem:
    """The item currently streaming."""

    __slots__ = ("chunks", "compacted", "fidelity", "first", "held", "item_id", "kind", "size")

    def __init__(self, kind: Kind, item_id: str | None) -> None:
        self.kind = kind
        self.item_id = item_id
        #: The first emitted fragment (``None`` until something was emitted).
        self.first: Any = None
        self.chunks: list[Any] = []
        #: ``chunks[:compacted]`` are joined runs of fragments (see ``_COMPACT_EVERY``).
        self.compacted = 0
        self.fidelity: Mapping[str, Any] | None = None
        self.size = 0
        #: A high surrogate kept back from the last fragment, for the next one (08 D55).
        self.held = ""


def _split_fidelity(item: Any) -> tuple[Mapping[str, Any] | None, str | None]:
    """Return (fidelity without ``item_id`` or None when empty, the ``item_id`` or None)."""
    fidelity = item.fidelity
    if not fidelity:
        return None, None
    if "item_id" not in fidelity:
        return replace_lone_surrogates(fidelity), None
    item_id = fidelity["item_id"]
    identity = str(item_id) if item_id not in (None, "") else None
    if len(fidelity) == 1:  # the common case on the hot path: only the identity
        return None, identity
    kept = {k: v for k, v in fidelity.items() if k != "item_id"}
    return replace_lone_surrogates(kept), identity


def _repair(text: str) -> tuple[str, str]:
    """Return ``(text to emit, high surrogate to hold back)`` for a growing string (08 D55).

    A trailing high surrogate may be the first half of a pair whose second half is in the next
    fragment: it is held back. Pairs become their characters; any other surrogate is U+FFFD.
    """
    held = ""
    if text and _HIGH_FIRST <= text[-1] <= _HIGH_LAST:
        text, held = text[:-1], text[-1]
    return repair_surrogates(text), held


class StreamItems:
    """Client stream in, public stream out (spec 02 §4-§7).

    Args:
        client: the client type (or protocol name) named in errors.
        clock: returns Unix milliseconds for each public event's ``created_at``.
        max_item_size: the largest joined growing field of one item.
    """

    def __init__(
        self,
        *,
        client: str,
        clock: Callable[[], int],
        max_item_size: int = DEFAULT_MAX_ITEM_SIZE,
    ) -> None:
        self._client = client
        self._clock = clock
        self._max_item_size = max_item_size
        self._state = _State.OPEN
        self._open: _OpenItem | None = None
        self._usage: UsageMetadata | None = None
        self._finish: FinishReason | None = None
        self._has_content = False

    # -- public API ----------------------------------------------------------------------

    def push(self, event: ClientEvent) -> list[UniEvent]:
        """Take one client event; return the public delta events it decides.

        Raises:
            StreamProtocolError: a done item or unknown type from the client, usage or finish
                reason on a delta event, two different fidelity payloads in one item, a first
                tool-call fragment without name or id (spec 02 §7).
            ToolCallArgumentParseError: the item this fragment closes is a tool call whose
                arguments are not a JSON object (its ``.done`` position).
            StreamLimitError: an item grew past ``max_item_size``.
            RuntimeError: called after ``end()`` or after an error.
        """
        if self._state is not _OPEN:
            self._expect(_OPEN)
        try:
            out: list[UniEvent] = []
            if isinstance(event, Fragment):
                self._push_fragment(event, out)
                return out
            if event.event_type == "delta":
                if event.usage_metadata is not None or event.finish_reason is not None:
                    raise self._protocol_error(
                        "a delta event carries usage_metadata or finish_reason"
                    )
            elif event.event_type != "stop":
                raise self._protocol_error(f"unknown event_type {event.event_type!r}")
            for item in event.content_items:
                self._push_item(item, out)
            if event.usage_metadata is not None:
                usage = self._usage or UsageMetadata()
                self._usage = usage.merge(event.usage_metadata)
            if event.finish_reason:
                self._finish = event.finish_reason
            return out
        except BaseException:
            self._state = _State.ERROR
            raise

    def end(self) -> list[UniEvent]:
        """The client stream is over: return the open item's ``.done``, if it emitted anything.

        When usage or finish reason is missing and the open item is a tool call, its arguments
        are not parsed: the cut explains them, and ``close()`` raises
        ``IncompleteStreamError`` (08 D33).

        Raises:
            ToolCallArgumentParseError: the open tool call's arguments are not a JSON object.
            RuntimeError: called twice or after an error.
        """
        self._expect(_State.OPEN)
        try:
            out: list[UniEvent] = []
            current = self._open
            self._open = None
            cut = self._usage is None or self._finish is None
            if current is not None and not (cut and current.kind.has_headers):
                self._close_item(current, out)
            self._state = _State.ENDED
            return out
        except BaseException:
            self._state = _State.ERROR
            raise

    def close(self) -> UniEvent:
        """Return the single public ``stop`` event (RFC-0003 §5, spec 02 §7 steps 3-5).

        Raises:
            IncompleteStreamError: usage and/or finish reason never arrived; carries what did.
            EmptyResponseError: nothing but thinking (or nothing at all) was produced.
            RuntimeError: called before ``end()``, twice, or after an error.
        """
        self._expect(_State.ENDED)
        self._state = _State.ERROR
        missing = tuple(
            name
            for name, value in (("usage_metadata", self._usage), ("finish_reason", self._finish))
            if value is None
        )
        if missing:
            raise IncompleteStreamError(self._client, missing, self._finish, self._usage)
        if not self._has_content:
            raise EmptyResponseError(self._client, self._finish, self._usage)
        self._state = _State.CLOSED
        return UniEvent("stop", (), self._usage, self._finish, self._clock())

    # -- one fragment ----------------------------------------------------------------------

    def _push_fragment(self, fragment: Fragment, out: list[UniEvent]) -> None:
        """``_push_item`` of the delta ``fragment`` stands for: when it continues the open item
        and has nothing to repair, only the steps that apply to it; else the general path."""
        kind, growing, item_id = fragment
        current = self._open
        if (
            current is not None
            and current.kind is kind
            and current.item_id == item_id
            and current.first is not None
            and not current.held
            and growing.isascii()
        ):
            if not growing:  # an empty continuation is dropped (spec 02 §4)
                return
            size = current.size + len(growing)
            if size > self._max_item_size:
                raise StreamLimitError(f"{kind.name} item", self._max_item_size, size)
            self._emit(current, kind.continuing(growing), growing, size, out)  # type: ignore[misc]
            return
        self._push_new(fragment.item(), out)

    def _push_item(self, item: Item, out: list[UniEvent]) -> None:
        current = self._open
        if current is not None and current.first is not None and not current.held:
            kind = current.kind
            fidelity = item.fidelity
            if (
                type(item) is kind.delta_cls
                and fidelity is not None
                and len(fidelity) == 1
                and current.item_id is not None
            ):
                raw = fidelity.get("item_id")
                if (
                    raw is not None
                    and (raw if type(raw) is str else str(raw)) == current.item_id
                    and not kind.begins_itself(item)
                ):
                    growing = kind.growing(item)
                    if kind.with_growing is None or growing.isascii():
                        # The common case, a fragment continuing the open item with only its
                        # identity as fidelity and nothing to repair: the steps below that
                        # apply to it, and no others.
                        if kind.is_empty(item) and not kind.keeps_empty:
                            return
                        size = current.size + len(growing)
                        if size > self._max_item_size:
                            raise StreamLimitError(f"{kind.name} item", self._max_item_size, size)
                        self._emit(current, kind.fragment(current.first, item, None), growing,
                                   size, out)
                        return
        self._push_new(item, out)

    def _push_new(self, item: Item, out: list[UniEvent]) -> None:
        """``_push_item`` for every fragment (spec 02 §4 steps 1-3, 08 D50, D55)."""
        item_kind = KINDS.get(item.type)
        if item_kind is None:
            raise self._protocol_error(f"a client yields deltas, not {item.type}")
        fid, item_id = _split_fidelity(item)
        empty = item_kind.is_empty(item) and not item_kind.keeps_empty
        current = self._open
        kind, fragment, starts_new = self._route(item_kind, item, item_id, fid, empty)
        target = _OpenItem(kind, item_id) if starts_new or current is None else current

        # Checks first (08 D50): nothing of this push goes out when one fails.
        emitted_fid = fid
        if fid is not None and target.fidelity is not None:
            if fid != target.fidelity:
                raise self._protocol_error(
                    f"item {target.item_id!r} carried two different fidelity payloads"
                )
            emitted_fid = None
        growing = kind.growing(fragment)
        held = ""
        if kind.with_growing is not None and (
            target.held or (not growing.isascii() and SURROGATE.search(growing) is not None)
        ):
            repaired, held = _repair(target.held + growing)
            if repaired != growing:
                fragment = kind.with_growing(fragment, repaired)
                growing = repaired
                empty = kind.is_empty(fragment)
        emits = not empty or emitted_fid is not None
        # A held surrogate is content still to come out (joined, or as U+FFFD at the close),
        # so a first fragment holding one must carry the headers as one that emits must.
        if (emits or held) and target.first is None and kind.lacks_headers(fragment):
            raise self._protocol_error(
                f"the first {kind.name}.delta of an item must carry the name and the tool_call_id"
            )
        size = target.size + len(growing)
        if size > self._max_item_size:
            raise StreamLimitError(f"{kind.name} item", self._max_item_size, size)
        if starts_new and current is not None:
            self._close_item(current, out)

        # Commit.
        if target is not current:
            self._open = target
        elif target.item_id is None:
            target.item_id = item_id
        if fid is not None and target.fidelity is None:
            target.fidelity = fid
        target.held = held
        if not emits:
            return
        public = kind.fragment(target.first, fragment, emitted_fid)
        if target.first is None:
            target.first = public
        self._emit(target, public, growing, size, out)

    def _route(
        self,
        kind: Kind,
        item: Item,
        item_id: str | None,
        fid: Mapping[str, Any] | None,
        empty: bool,
    ) -> tuple[Kind, Any, bool]:
        """Where the fragment ``item`` of ``kind`` goes (spec 02 §4 step 3), as ``(kind,
        fragment, starts_new)``: it begins a new item, or continues the open one. A
        fidelity-only tail under another kind belongs to the open item, re-shaped as an empty
        fragment of the open item's kind."""
        current = self._open
        if current is None:
            return kind, item, True
        if (
            current.first is not None
            and kind is not current.kind
            and item_id is not None
            and item_id == current.item_id
            and fid is not None
            and empty
        ):
            return current.kind, current.kind.empty_like(current.first), False
        starts_new = (
            kind is not current.kind
            or kind.begins_itself(item)
            or (
                not kind.has_headers
                and item_id is not None
                and current.item_id is not None
                and item_id != current.item_id
            )
        )
        return kind, item, starts_new

    def _emit(
        self, target: _OpenItem, public: Any, growing: Any, size: int, out: list[UniEvent]
    ) -> None:
        """Record an emitted fragment's growing part in ``target`` and hand ``public`` out."""
        chunks = target.chunks
        chunks.append(growing)
        if len(chunks) - target.compacted >= _COMPACT_EVERY and isinstance(growing, str | bytes):
            # Many small fragments would hold far more memory than their content: join the
            # newest run into one piece (each character is copied once more, in total).
            run = growing[:0].join(chunks[target.compacted :])
            del chunks[target.compacted :]
            chunks.append(run)
            target.compacted += 1
        target.size = size
        out.append(delta_event(public, self._clock()))

    def _close_item(self, item: _OpenItem, out: list[UniEvent]) -> None:
        """Append the item's ``.done``, after a ``"\ufffd"`` fragment for a high surrogate
        still held back (08 D55), so the ``.done`` stays the join of the fragments."""
        if item.held:
            item.held = ""
            kind = item.kind
            assert kind.with_growing is not None
            # Only kinds with text hold; a tool call holds only after its first fragment.
            filler = kind.with_growing(kind.empty_like(item.first), "\ufffd")
            public = kind.fragment(item.first, filler, None)
            if item.first is None:
                item.first = public
            item.chunks.append("\ufffd")
            out.append(UniEvent("delta", (public,), None, None, self._clock()))
        if item.first is not None:
            out.append(self._done_event(item))

    def _done_event(self, item: _OpenItem) -> UniEvent:
        done = item.kind.done(self._client, item.first, item.chunks, item.fidelity)
        if not item.kind.is_thinking:
            self._has_content = True
        return UniEvent("delta", (done,), None, None, self._clock())

    # -- helpers -----------------------------------------------------------------------------

    def _expect(self, state: _State) -> None:
        if self._state is not state:
            raise RuntimeError(
                f"StreamItems is {self._state.name}; this call needs it {state.name}"
            )

    def _protocol_error(self, detail: str) -> StreamProtocolError:
        return StreamProtocolError(self._client, detail=detail)

