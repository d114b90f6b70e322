"""``JsonEventsMachine``: each SSE event's data is one client-stream ``UniEvent`` in wire JSON.

The machine of the core's own tests, benchmarks and examples, before any provider adapter is
involved (09). An event whose JSON is ``{"error": {...}}`` raises that error at its position,
the way the MMSP server reports failures (spec 03 §5).
"""

from __future__ import annotations

from . import jsonlib
from .errors import MalformedEventError, WireFormatError
from .model import UniEvent
from .sse import SSEEvent
from .wire import error_from_wire, event_from_wire

__all__ = ["JsonEventsMachine"]


class JsonEventsMachine:
    """SSE events whose data are client events in MMSP JSON.

    Args:
        client: the name used in errors.
    """

    def __init__(self, client: str = "json-events") -> None:
        self._client = client

    def next_events(self, sse: SSEEvent) -> list[UniEvent]:
        """Return the one client event held by ``sse.data``.

        Raises:
            MalformedEventError: the data is not JSON or not a valid event.
            MMSPError: the data is an ``{"error": ...}`` object: that error.
        """
        try:
            obj = jsonlib.loads(sse.data)
        except (ValueError, RecursionError):  # too deep a nesting is a RecursionError
            raise MalformedEventError(self._client, sse.data, detail="not JSON") from None
        try:
            if type(obj) is dict and "error" in obj:
                reported = error_from_wire(obj)
            else:
                return [event_from_wire(obj)]
        except WireFormatError as exc:
            raise MalformedEventError(self._client, sse.data, detail=str(exc)) from exc
        raise reported

    def finish(self) -> list[UniEvent]:
        """Nothing is held between events."""
        return []
