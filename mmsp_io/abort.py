"""``AbortSignal``: the caller's way to stop a call, under asyncio and trio alike (08 D20).

An abort is not a cancellation. It ends the stream with ``AbortedError(client, reason)`` (an
``MMSPError``), closes the HTTP response, yields no ``stop``, records no history and writes no
trace (spec 03 §4). Cancellation from outside (a cancel scope, task cancellation, the caller's
own timeout) is the event loop's business and propagates untouched.

How it works: each wait of a call (connecting, reading the body, the pause before a retry)
runs inside ``abortable(signal, client)``, a fresh ``anyio.CancelScope`` registered with the
signal for the length of that wait only. ``abort()`` cancels every registered scope, so a
pending read stops at once, whichever task is reading; the scope catches its own
cancellation, and ``abortable`` turns it into ``AbortedError``. A scope never stays open
across a ``yield``, so between events nothing is registered: the caller's next step (or
``aclose()``) sees ``aborted`` and raises. Outside cancellation is not caught by these scopes.
``wait()`` lets a task sleep until the signal fires (an ``anyio.Event``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio

from mmsp_core.errors import AbortedError

__all__ = ["AbortSignal", "abortable"]


class AbortSignal:
    """A one-shot abort flag a caller passes to ``streaming_response`` (09).

    Call ``abort`` from the event loop's thread; from another thread go through
    ``anyio.from_thread.run_sync(signal.abort, reason)``.
    """

    __slots__ = ("_aborted", "_event", "_reason", "_scopes")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: str | None = None
        self._scopes: set[anyio.CancelScope] = set()
        self._event: anyio.Event | None = None

    def __repr__(self) -> str:
        state = f"aborted, reason={self._reason!r}" if self._aborted else "not aborted"
        return f"<AbortSignal {state}>"

    @property
    def aborted(self) -> bool:
        """Whether ``abort`` was called."""
        return self._aborted

    @property
    def reason(self) -> str | None:
        """The reason given to the first ``abort`` call."""
        return self._reason

    def abort(self, reason: str | None = None) -> None:
        """Abort every call using this signal; idempotent, the first reason wins (03 §4)."""
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason
        for scope in tuple(self._scopes):
            scope.cancel()
        if self._event is not None:
            self._event.set()

    async def wait(self) -> None:
        """Return once the signal has been aborted."""
        if self._aborted:
            return
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()


@contextmanager
def abortable(signal: AbortSignal | None, client: str) -> Iterator[None]:
    """Run one wait so that ``signal.abort()`` stops it at once (module doc).

    The block must not ``yield`` to a caller (it would leave the scope open across the yield).

    Raises:
        AbortedError: the signal was aborted before or during the block.
    """
    if signal is None:
        yield
        return
    if signal.aborted:
        raise AbortedError(client, signal.reason)
    with anyio.CancelScope() as scope:
        signal._scopes.add(scope)
        try:
            yield
        finally:
            signal._scopes.discard(scope)
    if scope.cancelled_caught or signal.aborted:
        raise AbortedError(client, signal.reason)
