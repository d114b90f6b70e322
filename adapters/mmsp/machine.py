"""The MMSP server's stream, read by the mmsp client (06 §8, 03 §5, 07 §4, 08 D13, D56, D59).

Theory of operation
-------------------
The server writes each **public** event as one SSE ``data:`` event (``data: <json>``), then
``data: [DONE]``; ``: keep-alive`` comments and other SSE fields are ignored (06 §8), so an
event is classified by its data alone:

* ``[DONE]``: the terminal event (08 D56);
* a JSON object with an ``error`` key: the server reports an error, which becomes the
  client's ``UpstreamError`` with the error object's ``type`` as ``error_type``, its own
  ``status`` (an upstream 429, say) and the whole object as ``error`` (03 §5, 08 D13);
* a JSON object whose ``event_type`` is ``delta`` or ``stop``: a public event, read by
  ``event_from_wire`` (inline bytes decoded from base64) and handed on unchanged;
* any other object (another ``event_type``, or none): an event this client does not know,
  skipped, or ``UnknownEventError`` in strict mode (08 D8).

The events are already public, so the protocol's finalizer is ``PassThrough``
(``mmsp_core.grammar``), fed whole events: it hands every event on as it came and raises
``MalformedEventError`` at the first one that breaks the grammar of 02 §12 (a server's fault,
08 D59), and ``IncompleteStreamError`` when the stream ends (or ``[DONE]`` comes) before the
stop (03 §5). A skipped event yields no client event at all, so the finalizer sees exactly
the server's public events.

States: ``STREAMING`` until ``[DONE]``, then ``DONE`` (terminal; the pipeline ignores what
follows, 08 D56).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, Final

from adapters._json import BadField, loads_object, nests_within
from adapters._preflight import MAX_DEPTH
from adapters._table import EMPTY, Handler, TableMachine, skip
from mmsp_core.errors import UpstreamError, WireFormatError
from mmsp_core.items import ClientEvent
from mmsp_core.model import UniEvent
from mmsp_core.sse import SSEEvent
from mmsp_core.wire import event_from_wire

__all__ = ["MMSPMachine"]

#: The data of the server's last event (07 §4).
_DONE: Final = "[DONE]"
#: The ``event_type`` values of the public stream (02 §3).
_PUBLIC: Final = ("delta", "stop")


class _State(enum.Enum):
    STREAMING = enum.auto()
    DONE = enum.auto()


def _public(machine: MMSPMachine, data: dict[str, Any]) -> UniEvent:
    """A public event, read as the server wrote it (inline bytes decoded).

    Raises:
        BadField: a field missing or of the wrong type (``MalformedEventError``, 08 D59).
    """
    try:
        return event_from_wire(data)
    except WireFormatError as exc:
        raise BadField(f"{exc.path}: {exc.reason}") from None


def _error(machine: MMSPMachine, error: Any) -> UniEvent:
    """The server's error event: ``UpstreamError`` with the error object's fields (03 §5).

    Raises:
        UpstreamError: always; a bare string error is the object ``{"message": <it>}``.
        BadField: ``error`` is neither an object nor a string, or nests deeper than
            ``MAX_DEPTH`` (no error has such fields; what reads them later, such as the
            redaction of keys, 08 D61, must not run out of stack).
    """
    if type(error) is str:
        error = {"message": error}
    elif type(error) is not dict:
        raise BadField("'error' must be an object")
    elif not nests_within(error, MAX_DEPTH):
        raise BadField(f"the error object nests deeper than {MAX_DEPTH} levels")
    status, error_type = error.get("status"), error.get("type")
    raise UpstreamError(
        machine.client,
        status if type(status) is int else None,
        error_type if type(error_type) is str else None,
        error,
    )


_TRANSITIONS: Final[dict[tuple[_State, str], tuple[Handler, _State]]] = {
    (_State.STREAMING, "delta"): (_public, _State.STREAMING),
    (_State.STREAMING, "stop"): (_public, _State.STREAMING),
    (_State.STREAMING, "error"): (_error, _State.STREAMING),
    (_State.STREAMING, _DONE): (skip, _State.DONE),
}


class MMSPMachine(TableMachine):
    """The MMSP server's stream to the public events it carries (see the module)."""

    __slots__ = ()

    TRANSITIONS = _TRANSITIONS
    TERMINAL = frozenset({_State.DONE})
    INITIAL = _State.STREAMING

    def __init__(
        self, client: str, profile: object, *, strict: bool, base_url: str | None
    ) -> None:
        super().__init__(client, profile, strict=strict)

    def classify(self, sse: SSEEvent) -> tuple[str, Any]:
        """Name the event by its data (module docstring); the SSE ``event`` field is ignored.

        Raises:
            BadField: data that is neither ``[DONE]`` nor a JSON object, or an ``event_type``
                that is not a string.
        """
        if sse.data == _DONE:
            return _DONE, None
        data = loads_object(sse.data)
        if "error" in data:
            return "error", data["error"]
        event_type = data.get("event_type")
        if event_type is None:
            return "(no event_type)", data
        if type(event_type) is not str:
            raise BadField("'event_type' must be a string")
        return event_type if event_type in _PUBLIC else f"event_type {event_type}", data

    def next_events(self, sse: SSEEvent) -> Sequence[ClientEvent]:
        """The public event of one SSE event, or none for ``[DONE]`` and a skipped event: the
        finalizer takes the server's events only (module docstring).

        Raises:
            UpstreamError: the server's error event.
            MalformedEventError, UnknownEventError, RuntimeError: as the kernel's.
        """
        events = super().next_events(sse)
        return [] if events[0] is EMPTY else events
