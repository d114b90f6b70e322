"""One connection of the server core: the exchanges of ``mmsp_io.httpserver``'s package doc,
steps 1 to 4, read and answered in order on one socket, and the isolation of its failures.
"""

from __future__ import annotations

import contextlib
import logging
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, final

import anyio
import anyio.abc
import attrs
import h11

from ._exchange import GONE, Limits, Request, Response

if TYPE_CHECKING:
    from ._server import HTTPServer

__all__ = ["Connection", "describe"]

_logger = logging.getLogger("mmsp_io")

_RECEIVE_SIZE: Final = 65536
#: Bytes of pipelined requests kept while a response is being sent; past this, reading pauses.
_PIPELINE_BYTES: Final = 1024 * 1024


class _Refused(Exception):
    """A request the core refuses itself: answered ``status``, then the connection is closed
    (package doc, step 1), after lingering unless ``linger`` is false."""

    def __init__(self, status: int, reason: str, *, linger: bool = True) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.linger = linger


@final
class Connection:
    """One socket: the exchanges of the package doc, in order."""

    def __init__(self, server: HTTPServer, stream: anyio.abc.ByteStream) -> None:
        self.server = server
        self.stream = stream
        self.conn = h11.Connection(
            h11.SERVER, max_incomplete_event_size=server.limits.max_head_bytes
        )
        #: Waiting for a request, not answering one: graceful close may end it at once.
        self.idle = True
        #: The scope of the connection's task; graceful close cancels it.
        self.scope = anyio.CancelScope()
        #: The response being written, whose handler the client leaving cancels.
        self._response: Response | None = None
        #: Set by the reader when it fed h11 (``_read_on``); a new one for the next bytes.
        self._arrived = anyio.Event()
        #: Set when h11's buffer has room again for a reader paused at ``_PIPELINE_BYTES``.
        self._room: anyio.Event | None = None
        #: Whether the reader stopped: the socket's end was fed to h11, or ``_failure``.
        self._ended = False
        #: Why the reader stopped before the socket's end (the socket failed or was closed).
        self._failure: BaseException | None = None

    async def write(self, event: h11.Event) -> None:
        data = self.conn.send(event)
        if data:
            await self.stream.send(data)

    async def receive(self) -> None:
        """Wait until the reader has fed h11 more bytes of the socket (at once when it has
        stopped: h11 then has the socket's end).

        Raises:
            anyio.BrokenResourceError, anyio.ClosedResourceError: the socket failed.
        """
        if not self._ended:
            if self._room is not None:  # h11 asked for data: whatever it held was read
                self._room.set()
            await self._arrived.wait()
        if self._failure is not None:
            raise self._failure

    async def run(self) -> None:
        """The exchanges of the socket, in order, with its reader beside them (step 3)."""
        async with anyio.create_task_group() as reading:
            reading.start_soon(self._read_on)
            with contextlib.suppress(*GONE):
                await self._exchanges()
            reading.cancel_scope.cancel()

    async def _exchanges(self) -> None:
        """Steps 1 to 4, one exchange after another, until the socket is to be closed."""
        while not self.server.closing:
            request = await self._read_request()
            if request is None:
                return
            self.idle = False
            response = await self._exchange(request)
            self.idle = True
            if response.client_gone or self.conn.our_state is not h11.DONE:
                return
            if self.conn.their_state is not h11.DONE:
                return
            self.conn.start_next_cycle()

    async def _read_on(self) -> None:
        """Step 3: the connection's one reader, for as long as it is open. It feeds h11 what
        arrives, for the request being read and, while a response is written, for the
        pipelined next one, pausing while h11 holds ``_PIPELINE_BYTES`` not yet read as
        events; the client closing the socket, or the socket failing, while a response is
        incomplete is the client leaving (``Response._client_left``)."""
        conn = self.conn
        try:
            while True:
                while len(conn.trailing_data[0]) >= _PIPELINE_BYTES:
                    self._room = anyio.Event()
                    await self._room.wait()
                    self._room = None
                try:
                    data = await self.stream.receive(_RECEIVE_SIZE)
                except anyio.EndOfStream:
                    data = b""
                conn.receive_data(data)
                if not data:
                    break
                self._wake()
        except GONE as exc:
            self._failure = exc
        self._ended = True
        self._wake()
        if self._response is not None:
            self._response._client_left()

    def _wake(self) -> None:
        """Tell a ``receive`` waiting that h11 has more (or that the reader stopped)."""
        self._arrived.set()
        self._arrived = anyio.Event()

    async def _read_request(self) -> Request | None:
        """Read one whole request (step 1); ``None`` when the connection is to be closed,
        after answering the refusal of a request that broke a rule."""
        limits = self.server.limits
        try:
            with anyio.move_on_after(limits.head_timeout) as waiting:
                head = await self._read_head()
            if waiting.cancelled_caught:
                if not self.conn.trailing_data[0]:  # idle: no byte of a request arrived
                    return None
                raise _Refused(408, "The request head took too long.", linger=False)
            if head is None:
                return None
            request = _request(head)
            if self.server.admit is not None:
                answer = await self.server.admit(request)
                if answer is not None:
                    await self._close_with(answer.status, answer.headers, answer.body)
                    return None
            with anyio.move_on_after(limits.body_timeout) as waiting:
                body = await self._read_body(head)
            if waiting.cancelled_caught:
                raise _Refused(408, "The request body took too long.", linger=False)
        except _Refused as refused:
            content_type, text = self.server.refusal(refused.status, refused.reason)
            await self._close_with(refused.status, [("content-type", content_type)], text,
                                   linger=refused.linger)
            return None
        return None if body is None else attrs.evolve(request, body=body)

    def _next_event(self) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
        """h11's next event.

        Raises:
            _Refused: the bytes are not HTTP/1.1 (or a head is too large to parse).
        """
        try:
            return self.conn.next_event()
        except h11.RemoteProtocolError as exc:
            raise _Refused(exc.error_status_hint, "The request is not valid HTTP/1.1.") from exc

    async def _read_head(self) -> h11.Request | None:
        """The next request's head, checked (``_check_head``); ``None``: the client closed.

        Raises:
            _Refused: the head breaks a rule of step 1.
        """
        while True:
            event = self._next_event()
            if event is h11.NEED_DATA:
                await self.receive()
            elif isinstance(event, h11.Request):
                _check_head(event, self.server.limits)
                return event
            else:  # ConnectionClosed, or a state h11 says we cannot be in
                return None

    async def _read_body(self, head: h11.Request) -> bytes | None:
        """The body of the request ``head`` began; ``None``: the client closed first.

        Raises:
            _Refused: the body is longer than ``Limits.max_body_bytes``, or not HTTP/1.1.
        """
        limit = self.server.limits.max_body_bytes
        if _declared_length(head) > limit:
            raise _Refused(413, "The request body is too large.")
        body = bytearray()
        while True:
            event = self._next_event()
            if event is h11.NEED_DATA:
                if self.conn.client_is_waiting_for_100_continue:
                    await self.write(h11.InformationalResponse(status_code=100, headers=[]))
                await self.receive()
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > limit:
                    raise _Refused(413, "The request body is too large.")
            elif isinstance(event, h11.EndOfMessage):
                return bytes(body)
            else:  # ConnectionClosed
                return None

    async def _close_with(
        self, status: int, headers: Sequence[tuple[str, str]], body: bytes, *, linger: bool = True
    ) -> None:
        """Answer ``status`` with ``connection: close``; when ``linger``, read and drop what the
        client still sends of its request, for at most ``Limits.linger_seconds`` (step 1)."""
        head = [*headers, ("content-length", str(len(body))), ("connection", "close")]
        try:
            await self.write(h11.Response(status_code=status, headers=head))
            await self.write(h11.Data(data=body))
            await self.write(h11.EndOfMessage())
        except h11.LocalProtocolError:  # h11 cannot answer in this state: just close
            return
        if not linger:
            return
        with anyio.move_on_after(self.server.limits.linger_seconds):
            while self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
                try:
                    event = self.conn.next_event()
                except h11.RemoteProtocolError:
                    return
                if event is h11.NEED_DATA:
                    await self.receive()
                elif isinstance(event, h11.ConnectionClosed):
                    return

    async def _exchange(self, request: Request) -> Response:
        """Steps 2 and 3: run the handler while the reader reads the socket; the client
        leaving cancels the handler (``Response._client_left``)."""
        response = Response(self)
        self._response = response
        with anyio.CancelScope() as response._scope:
            if self._ended:
                response._client_left()  # it left before the handler began
            try:
                await self.server.handler(request, response)
                if response.started and not response.complete:
                    await response.end()
                elif not response.started:
                    _logger.error("%s %s: the handler sent no response", request.method,
                                  request.path)
                    await response.respond(500, [("content-type", "text/plain; charset=utf-8")],
                                           b"The server sent no response.\n")
            except GONE:
                response._client_left()
            except Exception as exc:
                _logger.error("%s %s: the handler failed: %s", request.method, request.path,
                              describe(exc))
                await self._fail(response)
        self._response = None
        return response

    async def _fail(self, response: Response) -> None:
        """After a handler's exception: a 500 if nothing was sent, else close the socket."""
        with contextlib.suppress(*GONE):
            if not response.started:
                await response.respond(500, [("content-type", "text/plain; charset=utf-8")],
                                       b"Internal server error.\n")
                return
        await response.cut()


def _check_head(head: h11.Request, limits: Limits) -> None:
    """Check a request head against the rules of step 1 that need no body.

    Raises:
        _Refused: 431 for a head over ``Limits.max_head_bytes``; 400 for a head with both
            ``Content-Length`` and ``Transfer-Encoding`` (RFC 9112 §6.3).
    """
    if _head_size(head) > limits.max_head_bytes:
        raise _Refused(431, "The request head is too large.")
    names = {name for name, _ in head.headers}
    if b"content-length" in names and b"transfer-encoding" in names:
        raise _Refused(400, "A request may not have both Content-Length and Transfer-Encoding.")


def _head_size(head: h11.Request) -> int:
    """The size of a request head as sent (h11 bounds only a head that arrives in pieces)."""
    line = len(head.method) + len(head.target) + 12  # "GET / HTTP/1.1\r\n"
    return line + sum(len(name) + len(value) + 4 for name, value in head.headers) + 2


def _declared_length(head: h11.Request) -> int:
    """The ``content-length`` of a request head (h11 has checked it is one number), else 0."""
    return next((int(value) for name, value in head.headers if name == b"content-length"), 0)


def _request(head: h11.Request) -> Request:
    """The ``Request`` of ``head``, its body still empty."""
    path, _, query = head.target.decode("ascii", "replace").partition("?")
    return Request(
        method=head.method.decode("ascii"),
        path=path,
        query=query,
        headers=tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in head.headers),
        body=b"",
    )


def describe(exc: BaseException) -> str:
    """The type of ``exc`` (the first leaf of a group) and the stack it was raised through,
    without its message (package doc, isolation)."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    stack = "".join(traceback.format_list(traceback.extract_tb(exc.__traceback__)))
    return f"{type(exc).__qualname__}\n{stack}".rstrip()
