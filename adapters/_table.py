"""The machine kernel: one driver for every wire protocol's transition table (08 D59, D63).

Theory of operation
-------------------
A protocol's machine is a subclass of ``TableMachine`` that declares three things:

* ``classify(sse)``: the wire event's name and its parsed data. Anthropic names events by the
  SSE ``event`` field, Responses by the JSON ``type``, Chat by whether the data is ``[DONE]``.
* ``TRANSITIONS``: ``(state, wire name) -> (handler, next state)``, a module-level table in
  the style of h2's ``_transitions``. A handler is a plain function of ``(machine, data)`` that
  returns the one client event of that wire event (a ``UniEvent``, or a ``Fragment`` for a
  plain text, thinking or arguments delta: 08 D65), or ``None`` when the event makes no sense
  in the machine's current sub-state (a delta for a block that is not open).
* ``TERMINAL``: the states reached by the protocol's terminal event (``message_stop``,
  ``[DONE]``, ``response.completed`` / ``incomplete`` / ``failed``); entering one sets
  ``finished``, which ``StreamPipeline`` reads to ignore everything after that event and to
  tell the I/O layer it may stop reading (08 D56).

``next_events`` looks the row up and runs the handler. The kernel keeps the table regrouped
by state (``_ROWS``, built once per class), and the current state's rows at hand, so a lookup
hashes only the wire name. A missing row (an unknown name, or a
known name in a state where it has no row) and a handler's ``None`` are the same case: the
event is skipped with an empty delta event, or raises ``UnknownEventError`` in strict mode
(08 D8, D36, D45, D51). Names a protocol knows and deliberately skips have rows to
``skip`` (build them with ``skip_rows``), so they never raise.

The kernel lets only ``MMSPError`` out (08 D59, h11's "any other exception is a bug" turned
into a typed error at the boundary): a ``BadField`` from the typed accessors
(``adapters._json``), and anything else a handler raises on hostile JSON (``RecursionError``,
``TypeError`` from an unhashable value, ...), becomes ``MalformedEventError`` naming the event.
After any exception the machine is poisoned: every later call raises ``RuntimeError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Final, TypeAlias

from mypy_extensions import mypyc_attr

from mmsp_core.errors import MalformedEventError, MMSPError, UnknownEventError
from mmsp_core.items import ClientEvent
from mmsp_core.kinds import Fragment
from mmsp_core.model import FinishReason, Item, UniEvent, UsageMetadata
from mmsp_core.sse import SSEEvent

from ._json import BadField, loads_object

__all__ = [
    "EMPTY",
    "Handler",
    "TableMachine",
    "Transitions",
    "client_event",
    "skip",
    "skip_rows",
]

#: The client event of a wire event that carries nothing universal.
EMPTY: Final = UniEvent("delta")

Handler: TypeAlias = Callable[[Any, Any], ClientEvent | None]
Transitions: TypeAlias = Mapping[tuple[Any, str], tuple[Handler, Any]]


def skip(machine: Any, data: Any) -> UniEvent:
    """The handler of a known event that produces nothing."""
    return EMPTY


def skip_rows(
    states: Iterable[Any], names: Iterable[str]
) -> dict[tuple[Any, str], tuple[Handler, Any]]:
    """Rows that skip each of ``names`` in each of ``states``, staying in the state (08 D51)."""
    listed = tuple(names)
    return {(state, name): (skip, state) for state in states for name in listed}


def client_event(
    items: list[Item | Fragment],
    usage: UsageMetadata | None = None,
    finish: FinishReason | None = None,
) -> ClientEvent:
    """The client event of a wire event that reports ``items`` (in order), usage and finish:
    its lone ``Fragment`` as it is (the hot path), else a delta event, or a ``stop`` event
    when it reports usage or a finish reason, with each fragment made its item."""
    if usage is None and finish is None:
        if len(items) == 1 and isinstance(items[0], Fragment):
            return items[0]
        return UniEvent("delta", _items(items))
    return UniEvent("stop", _items(items), usage, finish)


def _items(items: list[Item | Fragment]) -> tuple[Item, ...]:
    return tuple(item.item() if isinstance(item, Fragment) else item for item in items)


# A compiled build (setup.py) lets protocol packages that are not compiled subclass it.
@mypyc_attr(allow_interpreted_subclasses=True)
class TableMachine:
    """Drive a protocol's transition table (see the module docstring).

    Subclasses set ``TRANSITIONS``, ``TERMINAL`` and ``INITIAL`` and may override
    ``classify``; their own state lives in further ``__slots__``.

    Args:
        client: the client type (or protocol name) named in errors.
        profile: the client type's profile for this protocol (per-client data, 08 D63).
        strict: unknown and out-of-place events raise ``UnknownEventError`` (08 D8).
    """

    __slots__ = ("_failed", "_rows", "client", "finished", "profile", "state", "strict")

    TRANSITIONS: ClassVar[Transitions]
    TERMINAL: ClassVar[frozenset[Any]] = frozenset()
    INITIAL: ClassVar[Any]
    #: ``TRANSITIONS`` as ``state -> wire name -> row``.
    _ROWS: ClassVar[Mapping[Any, Mapping[str, tuple[Handler, Any]]]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "TRANSITIONS" in vars(cls):
            rows: dict[Any, dict[str, tuple[Handler, Any]]] = {}
            for (state, name), row in cls.TRANSITIONS.items():
                rows.setdefault(state, {})[name] = row
            cls._ROWS = rows

    def __init__(self, client: str, profile: object, *, strict: bool) -> None:
        self.client = client
        self.profile = profile
        self.strict = strict
        self.state: Any = self.INITIAL
        self._rows = self._ROWS.get(self.INITIAL, _NO_ROWS)
        #: The terminal event has been seen (08 D56).
        self.finished = False
        self._failed = False

    def classify(self, sse: SSEEvent) -> tuple[str, Any]:
        """Return the wire event's name and data: by default the SSE ``event`` field and the
        data parsed as one JSON object.

        The default parses before the row is looked up, so an event with non-JSON data is
        malformed even where it would be skipped. A protocol whose skipped events may carry
        anything (Anthropic's pings, Chat's events after ``[DONE]``) returns the raw text here
        and parses in the handlers that read it.

        Raises:
            BadField: the data is not a JSON object.
        """
        return sse.event, loads_object(sse.data)

    def next_events(self, sse: SSEEvent) -> Sequence[ClientEvent]:
        """Return the client events of one SSE event (all-or-nothing).

        Raises:
            MMSPError: whatever the handler raises (``ProviderStreamError``, ...);
                ``MalformedEventError`` for data that is not what the event must carry;
                ``UnknownEventError`` in strict mode for an unknown or out-of-place event.
            RuntimeError: the machine already raised.
        """
        if self._failed:
            raise RuntimeError("the machine already failed; build a new one")
        try:
            name, data = self.classify(sse)
            row = self._rows.get(name)
            event = None if row is None else row[0](self, data)
            if event is None:
                return [self._unexpected(name, sse)]
            next_state = row[1]  # type: ignore[index]
            if next_state is not self.state:
                self.state = next_state
                self._rows = self._ROWS.get(next_state, _NO_ROWS)
                if next_state in self.TERMINAL:
                    self.finished = True
            return [event]
        except MMSPError:
            self._failed = True
            raise
        except BadField as exc:
            self._failed = True
            raise MalformedEventError(self.client, _label(sse), detail=str(exc)) from None
        except Exception as exc:
            # Hostile JSON reached a handler in a way no accessor caught (deep nesting, an
            # unhashable value used as a key): still a malformed event, never a crash (08 D59).
            self._failed = True
            raise MalformedEventError(
                self.client, _label(sse), detail=f"unreadable event: {type(exc).__name__}"
            ) from exc

    def finish(self) -> Sequence[ClientEvent]:
        """End of input: machines hold nothing back, so completeness is the finalizer's."""
        return []

    def _unexpected(self, name: str, sse: SSEEvent) -> UniEvent:
        """Skip an unknown or out-of-place event, or raise in strict mode (08 D8, D45)."""
        if not self.strict:
            return EMPTY
        known = any(known_name == name for _, known_name in self.TRANSITIONS)
        state = getattr(self.state, "name", self.state)
        why = f"unexpected in state {state}" if known else "unknown event"
        raise UnknownEventError(self.client, _label(sse), detail=why)


#: The rows of a state that has none (a terminal state, usually).
_NO_ROWS: Final[Mapping[str, tuple[Handler, Any]]] = {}


def _label(sse: SSEEvent) -> str:
    """What errors show of an event: its name and data (the error class previews it)."""
    return f"{sse.event}: {sse.data}"
