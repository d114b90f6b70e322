"""What one exchange of the server core is made of (``mmsp_io.httpserver``, package doc): the
``Limits`` a request is held to, the ``Request`` read whole, the hooks a server is given
(``Handler``, ``Admit``, ``Refusal``) and the ``Response`` a handler writes.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Final, Protocol, final

import anyio
import anyio.abc
import attrs
import h11

if TYPE_CHECKING:
    from ._connection import Connection

__all__ = [
    "GONE",
    "Admit",
    "Answer",
    "Handler",
    "Limits",
    "Refusal",
    "Request",
    "Response",
    "first_header",
    "plain_refusal",
]

#: The exceptions of a socket whose peer went away (or that was closed under us).
GONE: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError)


@final
@attrs.frozen
class Limits:
    """What one request and the whole server may hold (08 D18: every buffer is bounded).

    Raises:
        ValueError: a timeout or the connection cap is not positive.
    """

    #: The request line and headers; more is answered 431.
    max_head_bytes: int = 16 * 1024
    #: The body; more is answered 413.
    max_body_bytes: int = 1024 * 1024
    #: After a refusal, how long the rest of the request is read (and dropped) before closing.
    linger_seconds: float = 5.0
    #: Seconds from the end of the previous exchange (or the accept) until the next request's
    #: head is whole: an idle keep-alive connection is closed then, a late head answered 408.
    head_timeout: float = attrs.field(default=30.0, validator=attrs.validators.gt(0))
    #: Seconds from the head until the body is whole; a late body is answered 408. The
    #: default lets the MMSP server's largest body (50 MiB) arrive at 7 Mbit/s.
    body_timeout: float = attrs.field(default=60.0, validator=attrs.validators.gt(0))
    #: Connections open at once; one more is answered 503 and closed. ``None``:
    #: ``_server._default_max_connections()`` when the server starts.
    max_connections: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.gt(0))
    )


@final
@attrs.frozen
class Request:
    """One request, read whole (an ``admit`` hook is given its head: ``body`` is empty)."""

    method: str
    #: The request target without its query string.
    path: str
    query: str
    #: Header names lower-cased, in arrival order.
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        """Return the first value of header ``name`` (case-insensitive), or ``None``."""
        return first_header(self.headers, name)


def first_header(headers: Sequence[tuple[str, str]], name: str) -> str | None:
    """The first value of header ``name`` (case-insensitive) among lower-cased ``headers``."""
    wanted = name.lower()
    return next((value for key, value in headers if key == wanted), None)


class Answer(Protocol):
    """A whole answer: what an ``admit`` hook gives a request it refuses. The core adds
    ``content-length`` and ``connection: close`` to ``headers``."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Sequence[tuple[str, str]]: ...

    @property
    def body(self) -> bytes: ...


#: What answers a request; see the package doc, step 2.
Handler = Callable[[Request, "Response"], Awaitable[None]]
#: The body of a refusal the core answers itself: ``(status, reason) -> (content type, body)``.
Refusal = Callable[[int, str], tuple[str, bytes]]
#: Asked about each request head before its body is read (package doc, step 1): an
#: ``Answer`` refuses the request, ``None`` lets it in.
Admit = Callable[[Request], Awaitable[Answer | None]]


def plain_refusal(status: int, reason: str) -> tuple[str, bytes]:
    """The default ``Refusal``: ``reason`` as one line of plain text."""
    return "text/plain; charset=utf-8", f"{reason}\n".encode()


@final
class Response:
    """The answer to one request, written by the handler (package doc, steps 2 and 3)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._started = False
        self._complete = False
        self._client_gone = False
        self._scope: anyio.CancelScope | None = None
        #: The head ``start(hold=True)`` keeps for the next write.
        self._held = b""

    @property
    def started(self) -> bool:
        """Whether the head was sent."""
        return self._started

    @property
    def complete(self) -> bool:
        """Whether the response was ended or cut: the client leaving now is no disconnect."""
        return self._complete

    @property
    def client_gone(self) -> bool:
        """Whether the client went away before the response was complete."""
        return self._client_gone

    async def start(
        self, status: int, headers: Sequence[tuple[str, str]] = (), *, hold: bool = False
    ) -> None:
        """Send the status line and ``headers``; without ``content-length`` the body is chunked.
        With ``hold``, the head is kept and sent in one write with what the next ``send``,
        ``end`` or ``cut`` sends (package doc, step 2).

        Raises:
            RuntimeError: the head was already sent.
            anyio.BrokenResourceError: the client went away (``client_gone`` is set).
        """
        if self._started:
            raise RuntimeError("the response was already started")
        self._started = True
        self._held = self._connection.conn.send(
            h11.Response(status_code=status, headers=list(headers))) or b""
        if not hold:
            await self._write(b"")

    async def send(self, data: bytes) -> None:
        """Send ``data`` as body bytes (one chunk of a chunked body).

        Raises:
            anyio.BrokenResourceError: the client went away (``client_gone`` is set).
        """
        if data:
            await self._write(self._connection.conn.send(h11.Data(data=data)) or b"")

    async def end(self, data: bytes = b"") -> None:
        """Complete the response, ``data`` its last body bytes, in one write. The client may
        close as soon as it has the last bytes, so a failure to send the end alone is no
        disconnect; one to send ``data`` is.

        Raises:
            anyio.BrokenResourceError: the client went away before ``data`` was sent
                (``client_gone`` is set).
        """
        conn = self._connection.conn
        last = (conn.send(h11.Data(data=data)) or b"") if data else b""
        last += conn.send(h11.EndOfMessage()) or b""
        if data or self._held:
            await self._write(last)
            self._complete = True
            return
        self._complete = True
        with contextlib.suppress(*GONE):
            await self._connection.stream.send(last)

    async def respond(
        self, status: int, headers: Sequence[tuple[str, str]] = (), body: bytes = b""
    ) -> None:
        """Send a whole response in one write: ``start`` with a ``content-length``, then
        ``end`` with ``body``."""
        await self.start(status, [*headers, ("content-length", str(len(body)))], hold=True)
        await self.end(body)

    async def cut(self, *, reset: bool = False) -> None:
        """Close the connection now, the response incomplete (a deliberate cut, no disconnect);
        with ``reset``, with a TCP reset (``SO_LINGER`` of 0) rather than an orderly close. A
        head still held is sent first."""
        self._complete = True
        stream = self._connection.stream
        if self._held:
            with contextlib.suppress(*GONE):
                await self._write(b"")
        raw = stream.extra(anyio.abc.SocketAttribute.raw_socket, None) if reset else None
        if raw is not None:
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await stream.aclose()

    async def _write(self, data: bytes) -> None:
        """Send the held head, if any, and ``data`` in one write."""
        if self._held:
            data, self._held = self._held + data, b""
        try:
            await self._connection.stream.send(data)
        except GONE:
            self._client_left()
            raise

    def _client_left(self) -> None:
        if not self._complete and not self._client_gone:
            self._client_gone = True
            if self._scope is not None:
                self._scope.cancel()
