"""The public stream's grammar, checked one event at a time, and the pass-through finalizer.

Theory of operation (spec 02 §3, §12):

``StreamGrammar`` holds the rules of 02 §12 once. It takes a public stream event by event
(``check``) and keeps only what the rules still need: the index of the next event, whether the
stop has been seen, and the open group (its kind, its first fragment, the growing value of each
fragment, the one fidelity payload it carried). A group opens with its first ``K.delta`` and
closes with its ``K.done``, which is compared with the join of the fragments then; so a broken
rule is reported at the first event that breaks it, never later. What a violation raises is
the caller's choice: ``StreamGrammar`` calls the ``fail(index, rule)`` it was built with and
raises what that returns. ``mmsp_core.testing.assert_stream_grammar`` raises ``AssertionError``;
``PassThrough`` raises ``MalformedEventError``.

``PassThrough`` is a finalizer (``StreamItems``' interface) for a stream that is already public,
the mmsp client's: it hands every delta event on unchanged, ``created_at`` as given (it stamps
nothing, so the clock is unused), keeps the stop for ``close()``, and raises
``MalformedEventError`` at the first event that breaks the grammar: the server's fault (08 D59).
A server that sends a surrogate code point (a JSON ``\\ud83d`` escape) is repaired as
``StreamItems`` repairs a provider's (08 D55), so that every event it hands on encodes as
UTF-8: a fragment's trailing high surrogate is held back for the group's next fragment (a pair
split across two events becomes one character), any other surrogate in any string field,
fidelity or parsed arguments becomes U+FFFD, and a surrogate still held when the group closes
goes out as one more U+FFFD fragment before the ``.done``. The grammar compares a ``.done``
with its fragments as they would be repaired (a ``.done`` whose JSON joined the pair the
fragments split is no fault), so the repair never turns a valid stream into a malformed one.
What the open group holds is bounded as ``StreamItems`` bounds an item (08 D18): its joined
size by ``max_item_size`` (``StreamLimitError`` past it), its fragments' overhead by joining
every run of them into one piece.
Input that ends before the stop is ``IncompleteStreamError``. States and poisoning are those of
``StreamItems``: ``OPEN`` -> ``ENDED`` (``end()``) -> ``CLOSED`` (``close()``); any exception
moves to ``ERROR`` and every later call raises ``RuntimeError``.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from . import jsonlib
from ._construct import delta_event
from .errors import IncompleteStreamError, MalformedEventError, StreamLimitError
from .items import _COMPACT_EVERY, DEFAULT_MAX_ITEM_SIZE, ClientEvent, _repair
from .kinds import KINDS, SURROGATE, Fragment, Kind, repair_surrogates, replace_lone_surrogates
from .model import FinishReason, UniEvent, UsageMetadata

__all__ = ["PassThrough", "StreamGrammar"]

#: The finish reasons a stop may carry (a tuple: ``in`` compares, so it never hashes).
_FINISH_REASONS: Final = tuple(FinishReason)
#: Kinds whose growing field is bytes and whose ``.done`` repeats the ``mime_type``.
_BINARY_KINDS: Final = ("inline_data", "inline_thinking")


def _joined(kind_name: str, values: list[Any]) -> Any:
    if kind_name in _BINARY_KINDS:
        return b"".join(values)
    if kind_name == "embedding":
        return tuple(x for v in values for x in v)
    return "".join(values)


class StreamGrammar:
    """Check a public stream against every rule of spec 02 §12, event by event.

    ``stream := delta_event* stop_event``; ``group := K.delta+ K.done``; one item per delta
    event; usage and finish reason only on the stop, which has no items; ``created_at`` on
    every event; no ``item_id`` in fidelity; at most one fragment per group with fidelity, equal
    to the ``.done``'s; name and id on the first ``tool_call.delta`` only (08 D29); every
    ``.done`` equal to the join of its fragments (arguments parsed, name, id and ``mime_type``
    those of the first fragment); no group left open. Text and arguments are compared as
    08 D55 repairs them: a surrogate pair, split or joined, is its character, and a lone
    surrogate (one a JSON escape in the arguments parses into, too) equals U+FFFD.

    Args:
        fail: ``(index of the event, the rule it breaks) -> exception``; ``check`` raises it.
        max_item_size: the largest joined growing field of one group (characters, bytes or
            numbers); ``None``: no limit.
    """

    __slots__ = (
        "_chunks", "_compacted", "_fail", "_fidelity", "_first", "_index", "_limit", "_open",
        "_size", "_stopped",
    )

    def __init__(
        self, fail: Callable[[int, str], Exception], *, max_item_size: int | None = None
    ) -> None:
        self._fail = fail
        self._limit = max_item_size
        self._index = 0
        self._stopped = False
        #: The open group's kind, or ``None`` between groups.
        self._open: Kind | None = None
        self._first: Any = None
        #: The open group's fragments; ``_chunks[:_compacted]`` are joined runs of them.
        self._chunks: list[Any] = []
        self._compacted = 0
        self._size = 0
        self._fidelity: Mapping[str, Any] | None = None

    @property
    def finished(self) -> bool:
        """True once the stop event has been checked: the stream is complete."""
        return self._stopped

    def check(self, event: UniEvent) -> None:
        """Check the next event of the stream.

        Raises:
            Exception: what ``fail`` returns, for the first rule this event breaks.
            StreamLimitError: the open group grew past ``max_item_size`` (08 D18).
        """
        index = self._index
        self._index = index + 1
        if self._stopped:
            raise self._fail(index, "only the last event may be a stop event")
        if event.event_type == "stop":
            self._check_stop(index, event)
        elif event.event_type == "delta":
            self._check_delta(index, event)
        else:
            raise self._fail(index, f"event_type {event.event_type!r} is neither delta nor stop")

    def _check_stop(self, index: int, stop: UniEvent) -> None:
        if stop.content_items:
            raise self._fail(index, "the stop event carries no content items")
        if not isinstance(stop.usage_metadata, UsageMetadata):
            raise self._fail(index, "the stop event must carry usage_metadata")
        if stop.finish_reason not in _FINISH_REASONS:
            raise self._fail(index, f"bad finish_reason {stop.finish_reason!r}")
        if stop.created_at is None:
            raise self._fail(index, "created_at missing")
        if self._open is not None:
            raise self._fail(index, f"the {self._open.name} group was never closed")
        self._stopped = True

    def _check_delta(self, index: int, event: UniEvent) -> None:
        fail = self._fail
        if event.usage_metadata is not None or event.finish_reason is not None:
            raise fail(index, "a delta event carries no usage_metadata or finish_reason")
        if event.created_at is None:
            raise fail(index, "created_at missing")
        if len(event.content_items) != 1:
            raise fail(index, "a delta event holds exactly one item")
        item: Any = event.content_items[0]
        open_kind = self._open
        if open_kind is not None and KINDS.get(item.type) is open_kind and item.fidelity is None:
            # A continuing fragment of the open group without fidelity (the hot path): of the
            # rules below only the empty name and id of a later tool_call.delta apply.
            if open_kind.name == "tool_call" and (item.name or item.tool_call_id):
                raise fail(index, "a later tool_call.delta carries empty name and tool_call_id")
            self._grow(open_kind.name, open_kind.growing(item))
            return
        group = None if open_kind is None else open_kind.name
        kind_name, _, phase = item.type.partition(".")
        kind = KINDS.get(f"{kind_name}.delta")
        if kind is None or phase not in ("delta", "done"):
            raise fail(index, f"item type {item.type!r} does not stream")
        fidelity = item.fidelity
        if fidelity is not None and "item_id" in fidelity:
            raise fail(index, "item_id must not reach the public stream")
        if group is not None and kind_name != group:
            raise fail(index, f"{item.type} inside an open {group} group")
        if phase == "done":
            if group is None:
                raise fail(index, f"{item.type} closes no group")
            try:
                self._check_done(index, kind_name, kind.growing, item)
            except RecursionError:  # fidelity or arguments nested too deeply to compare
                raise fail(index, f"{item.type} is nested too deeply to check") from None
            self._open = None
            self._first = None
            self._chunks = []
            self._compacted = 0
            self._size = 0
            self._fidelity = None
            return
        if group is None:
            if kind_name == "tool_call" and not (item.name and item.tool_call_id):
                raise fail(index, "the first tool_call.delta carries name and tool_call_id")
            self._open = kind
            self._first = item
        elif kind_name == "tool_call" and (item.name or item.tool_call_id):
            raise fail(index, "a later tool_call.delta carries empty name and tool_call_id")
        if fidelity:
            if self._fidelity is not None:
                raise fail(index, "more than one fragment of the group carries fidelity")
            self._fidelity = fidelity
        self._grow(kind_name, kind.growing(item))

    def _grow(self, kind_name: str, chunk: Any) -> None:
        """Add a fragment to the open group, within ``max_item_size``; every run of
        ``_COMPACT_EVERY`` fragments is joined into one piece, so that many small fragments
        hold about their size (as ``StreamItems`` does)."""
        size = self._size + len(chunk)
        if self._limit is not None and size > self._limit:
            raise StreamLimitError(f"{kind_name} item", self._limit, size)
        self._size = size
        chunks = self._chunks
        chunks.append(chunk)
        if len(chunks) - self._compacted >= _COMPACT_EVERY:
            run = _joined(kind_name, chunks[self._compacted :])
            del chunks[self._compacted :]
            chunks.append(run)
            self._compacted += 1

    def _check_done(
        self, index: int, kind_name: str, growing: Callable[[Any], Any], done: Any
    ) -> None:
        fail = self._fail
        if (done.fidelity or None) != self._fidelity:
            raise fail(index, "the .done's fidelity differs from its fragment's")
        first = self._first
        joined = _joined(kind_name, self._chunks)
        if kind_name == "tool_call":
            if (done.name, done.tool_call_id) != (first.name, first.tool_call_id):
                raise fail(index, "tool_call.done's name and id differ from the first fragment's")
            try:
                parsed = jsonlib.loads(joined or "{}")
            except ValueError:
                raise fail(index, "a tool_call.done whose fragments do not parse") from None
            if done.arguments != parsed and replace_lone_surrogates(
                done.arguments
            ) != replace_lone_surrogates(parsed):
                raise fail(index, "tool_call.done's arguments differ from the parsed fragments")
            return
        value = done.embedding if kind_name == "embedding" else growing(done)
        if value != joined and not (
            isinstance(value, str) and repair_surrogates(value) == repair_surrogates(joined)
        ):
            raise fail(index, f"{done.type} differs from the join of its fragments")
        if kind_name in _BINARY_KINDS and done.mime_type != first.mime_type:
            raise fail(index, f"{done.type}'s mime_type differs from the first fragment's")


class _State(enum.Enum):
    #: Taking events.
    OPEN = enum.auto()
    #: ``end()`` ran; only ``close()`` is allowed.
    ENDED = enum.auto()
    #: ``close()`` returned the stop.
    CLOSED = enum.auto()
    #: An exception was raised; every later call raises ``RuntimeError``.
    ERROR = enum.auto()


class PassThrough:
    """The finalizer of an already-public stream: checks it, passes it on (see the module).

    Args:
        client: the client type (or protocol name) named in errors.
        clock: unused: every event keeps the ``created_at`` it came with (it is accepted so
            that ``PassThrough`` is built as every finalizer is).
        max_item_size: the largest joined growing field of one item (08 D18).
    """

    __slots__ = ("_client", "_grammar", "_held", "_state", "_stop")

    #: ``StreamPipeline`` pushes every event whole: an event of several items, or a stop with
    #: items, must reach the grammar as it came to be rejected (02 §12).
    takes_whole_events: Final = True

    def __init__(
        self,
        *,
        client: str,
        clock: Callable[[], int],
        max_item_size: int = DEFAULT_MAX_ITEM_SIZE,
    ) -> None:
        self._client = client
        self._grammar = StreamGrammar(
            functools.partial(_malformed, client), max_item_size=max_item_size
        )
        self._state = _State.OPEN
        self._stop: UniEvent | None = None
        #: A high surrogate kept back from the open group's last fragment (08 D55).
        self._held = ""

    def push(self, event: ClientEvent) -> list[UniEvent]:
        """Check one public event; return it (a delta) or keep it for ``close()`` (the stop).

        A ``Fragment`` (a machine's cheap delta, 08 D65) is checked as the delta event of the
        one item it stands for. A delta holding a surrogate code point goes out repaired
        (08 D55, see the module): possibly as no event (a fragment that was only a held high
        surrogate) or as two (the U+FFFD of a surrogate held until the ``.done``).

        Raises:
            MalformedEventError: the event breaks a rule of the grammar (spec 02 §12, 08 D59).
            StreamLimitError: an item grew past ``max_item_size`` (08 D18).
            RuntimeError: called after ``end()`` or after an error.
        """
        if self._state is not _State.OPEN:
            self._expect(_State.OPEN)
        if isinstance(event, Fragment):
            event = UniEvent("delta", (event.item(),))
        try:
            self._grammar.check(event)
        except BaseException:
            self._state = _State.ERROR
            raise
        if event.event_type == "stop":
            self._stop = event
            return []
        return self._repaired(event)

    def _repaired(self, event: UniEvent) -> list[UniEvent]:
        """The events that hand on ``event``, a delta the grammar accepted, without any
        surrogate code point (08 D55); ``[event]`` itself when it holds none."""
        item: Any = event.content_items[0]
        kind = KINDS.get(item.type)
        if kind is None:  # a .done: its group is closed
            out = []
            if self._held:  # 08 D55: a high surrogate held to the end of its item
                self._held = ""
                group = KINDS[item.type.replace(".done", ".delta")]
                assert group.continuing is not None  # only kinds with text hold a surrogate
                out.append(delta_event(group.continuing("\ufffd"), event.created_at))
            done = _without_surrogates(item)
            out.append(event if done is item else attrs.evolve(event, content_items=(done,)))
            return out
        repaired = item
        if kind.with_growing is not None:
            growing = kind.growing(item)
            held = self._held
            if held or (not growing.isascii() and SURROGATE.search(growing) is not None):
                text, self._held = _repair(held + growing)
                repaired = kind.with_growing(item, text)
                if self._held and kind.is_empty(repaired) and repaired.fidelity is None:
                    return []  # only the held half of a pair: it goes out with the next one
        if repaired.fidelity is not None or kind.with_growing is None or (
            kind.has_headers and repaired.name
        ):  # string fields besides the growing one (the hot path has none)
            repaired = _without_surrogates(repaired)
        return [event if repaired is item else attrs.evolve(event, content_items=(repaired,))]

    def end(self) -> list[UniEvent]:
        """The input is over; nothing is held back, so this returns ``[]``.

        Raises:
            RuntimeError: called twice or after an error.
        """
        self._expect(_State.OPEN)
        self._state = _State.ENDED
        return []

    def close(self) -> UniEvent:
        """Return the stop event, unchanged.

        Raises:
            IncompleteStreamError: the input ended before its stop event (RFC-0003 §5).
            RuntimeError: called before ``end()``, twice, or after an error.
        """
        self._expect(_State.ENDED)
        stop = self._stop
        if stop is None:
            self._state = _State.ERROR
            raise IncompleteStreamError(self._client, ("usage_metadata", "finish_reason"))
        self._state = _State.CLOSED
        return stop

    def _expect(self, state: _State) -> None:
        if self._state is not state:
            raise RuntimeError(
                f"PassThrough is {self._state.name}; this call needs it {state.name}"
            )


def _malformed(client: str, index: int, rule: str) -> MalformedEventError:
    return MalformedEventError(client, f"public event {index}", detail=rule)


def _without_surrogates(item: Any) -> Any:
    """``item`` with every surrogate in its string fields, fidelity and parsed arguments
    repaired by ``kinds.repair_surrogates`` (pairs joined, lone ones U+FFFD; 08 D55); ``item``
    itself when it holds none."""
    changes: dict[str, Any] = {}
    for field in attrs.fields(type(item)):
        value = getattr(item, field.name)
        repaired: Any  # a string or a mapping (a compiled build checks a narrower type)
        if isinstance(value, str):
            repaired = repair_surrogates(value)
        elif isinstance(value, Mapping):
            repaired = replace_lone_surrogates(value)
        else:
            continue
        if repaired is not value:
            changes[field.name] = repaired
    return attrs.evolve(item, **changes) if changes else item
