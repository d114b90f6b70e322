"""The four named timeouts of a call and the clock that enforces them (08 D22).

Every wait of the driver (``mmsp_io.driver``) runs inside one ``anyio.CancelScope`` whose
deadline is the earliest of the limits that apply to it: ``total`` (from the start of
``open_stream``), ``first_event`` (from the start until the first public event is handed out)
and, for reads of the body, ``idle`` (a fresh allowance for each read, so the gap measured is
the provider's, not the time the caller spent holding an event; keep-alive comments are bytes,
so they count). ``connect`` is httpx's connect (and pool) timeout of this request. The caller's
own ``httpx.AsyncClient`` keeps its timeout: its read timeout bounds every wait for bytes (it
reports as ``idle``), its write timeout stands, and its connect and pool timeouts meet
``connect``; where both apply the tighter wins (08 D62). Expiry raises
``StreamTimeoutError(client, which, seconds)``. No scope is held across a ``yield``, so the
driver's iterator is safe to abandon and runs unchanged under asyncio and trio.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable
from typing import Any, TypeVar, final

import anyio
import attrs
import httpx

from mmsp_core.errors import StreamTimeoutError

__all__ = ["Deadlines", "Timeouts", "http_timeout", "read_timeout", "tighter"]

_T = TypeVar("_T")


def _positive_or_none(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Check one field of ``Timeouts``: seconds as an ``int`` or a ``float``, or ``None``.

    Raises:
        TypeError: ``value`` is not a number (a ``bool`` or a string is not one).
        ValueError: ``value`` is not positive (zero, negative, NaN).
    """
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"Timeouts.{attribute.name} must be a number of seconds (int or float) "
                        f"or None, not {type(value).__name__} {value!r:.40}")
    if not value > 0:
        raise ValueError(f"Timeouts.{attribute.name} must be a positive number or None, "
                         f"not {value!r}")


@final
@attrs.frozen
class Timeouts:
    """The four named timeouts of a call, in seconds; ``None`` means no limit (08 D22).

    Attributes:
        connect: opening the connection (httpx's connect and pool timeouts).
        first_event: from sending the request to the first public event.
        idle: the longest wait for the next bytes of the body (keep-alive comments count).
        total: the whole call, from sending the request to the end of the body.

    Raises:
        TypeError: a field that is neither an ``int``, a ``float`` nor ``None`` (a ``bool``
            is not a number of seconds), naming the field.
        ValueError: a field that is not positive.
    """

    connect: float | None = attrs.field(default=10.0, validator=_positive_or_none)
    first_event: float | None = attrs.field(default=300.0, validator=_positive_or_none)
    idle: float | None = attrs.field(default=120.0, validator=_positive_or_none)
    total: float | None = attrs.field(default=None, validator=_positive_or_none)


@attrs.define
class Deadlines:
    """The clock of one call: which limit applies to the next wait, and when it expires."""

    client: str
    timeouts: Timeouts
    #: When the call started: ``total`` counts from here, across retries (08 D60).
    started: float = attrs.field(factory=anyio.current_time)
    first_event_seen: bool = False

    @classmethod
    def starting(cls, client: str, timeouts: Timeouts, started: float | None) -> Deadlines:
        """The clock of a call that began at ``started`` (``anyio.current_time()``, given by a
        caller that retries, 08 D60), or now when it is ``None``."""
        return cls(client, timeouts) if started is None else cls(client, timeouts, started)

    def scope(self, *, idle: bool) -> tuple[anyio.CancelScope, str, float]:
        """A cancel scope for one wait with the earliest applicable deadline, and the name
        and seconds of the limit that deadline belongs to."""
        timeouts = self.timeouts
        deadline, which, seconds = math.inf, "", 0.0
        if timeouts.total is not None:
            deadline, which, seconds = self.started + timeouts.total, "total", timeouts.total
        if timeouts.first_event is not None and not self.first_event_seen:
            limit = self.started + timeouts.first_event
            if limit < deadline:
                deadline, which, seconds = limit, "first_event", timeouts.first_event
        if idle and timeouts.idle is not None:
            limit = anyio.current_time() + timeouts.idle
            if limit < deadline:
                deadline, which, seconds = limit, "idle", timeouts.idle
        return anyio.CancelScope(deadline=deadline), which, seconds

    async def guarded(self, wait: Awaitable[_T], *, idle: bool) -> _T:
        """Await ``wait`` under the earliest applicable deadline.

        Raises:
            StreamTimeoutError: that deadline passed before the wait ended.
        """
        scope, which, seconds = self.scope(idle=idle)
        with scope:
            return await wait
        raise StreamTimeoutError(self.client, which, seconds)


def tighter(mine: float | None, theirs: float | None) -> float | None:
    """The smaller of two timeouts, ``None`` (no limit) losing to any number (08 D62)."""
    return theirs if mine is None else mine if theirs is None else min(mine, theirs)


def http_timeout(http_client: httpx.AsyncClient, timeouts: Timeouts) -> httpx.Timeout:
    """httpx's timeouts for one request: the client's own, with ``connect`` on top of its
    connect and pool timeouts, the tighter winning (08 D62, module doc)."""
    given = http_client.timeout
    return httpx.Timeout(
        connect=tighter(timeouts.connect, given.connect),
        read=given.read,
        write=given.write,
        pool=tighter(timeouts.connect, given.pool),
    )


def read_timeout(client: str, request: httpx.Request) -> StreamTimeoutError:
    """The error of httpx's read timeout of ``request`` (the caller's, or ``idle`` handed to
    the transport): a wait for bytes that was too long (``idle``)."""
    return StreamTimeoutError(client, "idle", request.extensions["timeout"]["read"] or math.inf)
