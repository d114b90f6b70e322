"""An HTTP/1.1 server core on ``h11`` and ``anyio``: the loop every server of this package runs.

Used by the provider simulator and, next, by the MMSP server (whose ASGI twin shares the
request handling above this loop, not the loop). It runs under asyncio and trio.

Theory of operation
-------------------
``serve(handler)`` listens on a TCP port. Each accepted socket gets one ``h11.Connection`` and
runs a loop of exchanges:

1. *Read one request whole*: the head (at most ``Limits.max_head_bytes``; more is answered
   431, bytes that are not HTTP/1.1 are answered 400) and the body (at most
   ``Limits.max_body_bytes``: a longer one, declared by ``Content-Length`` or found while
   reading, is answered 413). After such an answer the connection is closed once the client has
   finished sending (bounded by ``Limits.linger_seconds``), so the client reads the answer
   instead of a reset. A client that closes before its request is whole ends the connection.
2. *Call* ``handler(request, response)``. The handler writes the answer through ``response``:
   ``start`` the head, ``send`` body bytes (a body without ``content-length`` goes out chunked:
   an event stream is a series of ``send`` calls), then ``end``; or ``respond`` for a whole
   body at once; or ``cut`` to close the connection mid-body on purpose. A handler that returns
   without ending its response has it ended; one that started nothing gets a 500.
3. *Meanwhile a watcher reads the socket*. Bytes of a pipelined next request are kept for the
   next cycle (up to ``_PIPELINE_BYTES``; then reading pauses). The client closing the socket, or
   a failed write, before the response is complete sets ``response.client_gone`` and cancels the
   handler: an abandoned stream costs nothing more, and the handler's ``finally`` can see why
   it stopped.
4. When both sides are done and neither asked to close, the next cycle starts on the same
   socket (keep-alive); otherwise the connection is closed.

The bodies of the refusals the core answers itself (400, 413, 431) are plain text unless
``serve`` is given a ``refusal`` function, so a server whose callers read JSON errors answers
them in its own form.

A handler's exception other than cancellation is logged on the ``mmsp_io`` logger and answered
500 if nothing was sent yet, else the connection is closed: it never ends the server.

Graceful close: leaving ``serve``'s block stops accepting at once, closes the connections that
wait for a request, gives the exchanges in progress ``grace`` seconds to finish, then cancels
what is left and closes every socket.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Final, final

import anyio
import anyio.abc
import attrs
import h11

__all__ = [
    "HTTPServer",
    "Handler",
    "Limits",
    "Refusal",
    "Request",
    "Response",
    "first_header",
    "plain_refusal",
    "serve",
]

_logger = logging.getLogger("mmsp_io")

_RECEIVE_SIZE: Final = 65536
#: Bytes of pipelined requests kept while a response is being sent; past this, reading pauses.
_PIPELINE_BYTES: Final = 1024 * 1024
#: The exceptions of a socket whose peer went away (or that was closed under us).
_GONE: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError)


@final
@attrs.frozen
class Limits:
    """What one request may hold (08 D18: every buffer is bounded)."""

    #: The request line and headers; more is answered 431.
    max_head_bytes: int = 16 * 1024
    #: The body; more is answered 413.
    max_body_bytes: int = 1024 * 1024
    #: After a refusal, how long the rest of the request is read (and dropped) before closing.
    linger_seconds: float = 5.0


@final
@attrs.frozen
class Request:
    """One request, read whole."""

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


#: What answers a request; see the module docstring, step 2.
Handler = Callable[[Request, "Response"], Awaitable[None]]
#: The body of a refusal the core answers itself: ``(status, reason) -> (content type, body)``.
Refusal = Callable[[int, str], tuple[str, bytes]]


def plain_refusal(status: int, reason: str) -> tuple[str, bytes]:
    """The default ``Refusal``: ``reason`` as one line of plain text."""
    return "text/plain; charset=utf-8", f"{reason}\n".encode()


@final
class Response:
    """The answer to one request, written by the handler (module docstring, steps 2 and 3)."""

    def __init__(self, connection: _Connection) -> None:
        self._connection = connection
        self._started = False
        self._complete = False
        self._client_gone = False
        self._scope: anyio.CancelScope | None = None

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

    async def start(self, status: int, headers: Sequence[tuple[str, str]] = ()) -> None:
        """Send the status line and ``headers``; without ``content-length`` the body is chunked.

        Raises:
            RuntimeError: the head was already sent.
            anyio.BrokenResourceError: the client went away (``client_gone`` is set).
        """
        if self._started:
            raise RuntimeError("the response was already started")
        self._started = True
        await self._write(h11.Response(status_code=status, headers=list(headers)))

    async def send(self, data: bytes) -> None:
        """Send ``data`` as body bytes (one chunk of a chunked body).

        Raises:
            anyio.BrokenResourceError: the client went away (``client_gone`` is set).
        """
        if data:
            await self._write(h11.Data(data=data))

    async def end(self) -> None:
        """Complete the response. The client may close as soon as it has the last bytes, so
        a failure to send them is no disconnect."""
        self._complete = True
        with contextlib.suppress(*_GONE):
            await self._connection.write(h11.EndOfMessage())

    async def respond(
        self, status: int, headers: Sequence[tuple[str, str]] = (), body: bytes = b""
    ) -> None:
        """Send a whole response: ``start`` with a ``content-length``, ``send``, ``end``."""
        await self.start(status, [*headers, ("content-length", str(len(body)))])
        await self.send(body)
        await self.end()

    async def cut(self) -> None:
        """Close the connection now, the response incomplete (a deliberate cut, no disconnect)."""
        self._complete = True
        await self._connection.stream.aclose()

    async def _write(self, event: h11.Event) -> None:
        try:
            await self._connection.write(event)
        except _GONE:
            self._client_left()
            raise

    def _client_left(self) -> None:
        if not self._complete and not self._client_gone:
            self._client_gone = True
            if self._scope is not None:
                self._scope.cancel()


@final
class _Connection:
    """One socket: the exchanges of the module docstring, in order."""

    def __init__(self, server: HTTPServer, stream: anyio.abc.ByteStream) -> None:
        self.server = server
        self.stream = stream
        self.conn = h11.Connection(
            h11.SERVER, max_incomplete_event_size=server.limits.max_head_bytes
        )
        #: Waiting for a request, not answering one: graceful close may end it at once.
        self.idle = True

    async def write(self, event: h11.Event) -> None:
        data = self.conn.send(event)
        if data:
            await self.stream.send(data)

    async def receive(self) -> None:
        """Feed the next bytes of the socket to h11 (``b""`` at its end)."""
        try:
            data = await self.stream.receive(_RECEIVE_SIZE)
        except anyio.EndOfStream:
            data = b""
        self.conn.receive_data(data)

    async def run(self) -> None:
        with contextlib.suppress(*_GONE):
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

    async def _read_request(self) -> Request | None:
        """Read one whole request (step 1); ``None`` when the connection is to be closed."""
        limits = self.server.limits
        head: h11.Request | None = None
        body = bytearray()
        while True:
            try:
                event = self.conn.next_event()
            except h11.RemoteProtocolError as exc:
                await self._refuse(exc.error_status_hint, "The request is not valid HTTP/1.1.")
                return None
            if event is h11.NEED_DATA:
                if self.conn.client_is_waiting_for_100_continue:
                    await self.write(h11.InformationalResponse(status_code=100, headers=[]))
                await self.receive()
            elif isinstance(event, h11.Request):
                head = event
                if _head_size(event) > limits.max_head_bytes:
                    await self._refuse(431, "The request head is too large.")
                    return None
                if _declared_length(event) > limits.max_body_bytes:
                    await self._refuse(413, "The request body is too large.")
                    return None
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > limits.max_body_bytes:
                    await self._refuse(413, "The request body is too large.")
                    return None
            elif isinstance(event, h11.EndOfMessage) and head is not None:
                return _request(head, bytes(body))
            else:  # ConnectionClosed, or a state h11 says we cannot be in
                return None

    async def _refuse(self, status: int, reason: str) -> None:
        """Answer ``status`` and close, after reading what the client still sends (step 1)."""
        content_type, body = self.server.refusal(status, reason)
        headers = [("content-type", content_type),
                   ("content-length", str(len(body))), ("connection", "close")]
        try:
            await self.write(h11.Response(status_code=status, headers=headers))
            await self.write(h11.Data(data=body))
            await self.write(h11.EndOfMessage())
        except h11.LocalProtocolError:  # h11 cannot answer in this state: just close
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
        """Steps 2 and 3: run the handler while the watcher reads the socket."""
        response = Response(self)
        async with anyio.create_task_group() as tasks:
            response._scope = tasks.cancel_scope
            tasks.start_soon(self._watch, response)
            try:
                await self.server.handler(request, response)
                if response.started and not response.complete:
                    await response.end()
                elif not response.started:
                    _logger.error("%s %s: the handler sent no response", request.method,
                                  request.path)
                    await response.respond(500, [("content-type", "text/plain; charset=utf-8")],
                                           b"The server sent no response.\n")
            except _GONE:
                response._client_left()
            except Exception:
                _logger.exception("%s %s: the handler failed", request.method, request.path)
                await self._fail(response)
            tasks.cancel_scope.cancel()
        return response

    async def _fail(self, response: Response) -> None:
        """After a handler's exception: a 500 if nothing was sent, else close the socket."""
        with contextlib.suppress(*_GONE):
            if not response.started:
                await response.respond(500, [("content-type", "text/plain; charset=utf-8")],
                                       b"Internal server error.\n")
                return
        await response.cut()

    async def _watch(self, response: Response) -> None:
        """Step 3: keep pipelined bytes, notice the client leaving."""
        try:
            while len(self.conn.trailing_data[0]) < _PIPELINE_BYTES:
                data = await self.stream.receive(_RECEIVE_SIZE)
                self.conn.receive_data(data)
        except anyio.EndOfStream:
            self.conn.receive_data(b"")
            response._client_left()
        except _GONE:
            response._client_left()


def _head_size(head: h11.Request) -> int:
    """The size of a request head as sent (h11 bounds only a head that arrives in pieces)."""
    line = len(head.method) + len(head.target) + 12  # "GET / HTTP/1.1\r\n"
    return line + sum(len(name) + len(value) + 4 for name, value in head.headers) + 2


def _declared_length(head: h11.Request) -> int:
    """The ``content-length`` of a request head (h11 has checked it is one number), else 0."""
    return next((int(value) for name, value in head.headers if name == b"content-length"), 0)


def _request(head: h11.Request, body: bytes) -> Request:
    path, _, query = head.target.decode("ascii", "replace").partition("?")
    return Request(
        method=head.method.decode("ascii"),
        path=path,
        query=query,
        headers=tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in head.headers),
        body=body,
    )


@final
class HTTPServer:
    """A running server; build it with ``serve``."""

    def __init__(
        self, handler: Handler, limits: Limits, host: str, port: int, refusal: Refusal
    ) -> None:
        self.handler = handler
        self.limits = limits
        self.refusal = refusal
        self.host = host
        self.port = port
        #: Set by graceful close: connections end after their exchange in progress.
        self.closing = False
        self._connections: dict[_Connection, anyio.CancelScope] = {}
        self._none_left = anyio.Event()

    @property
    def url(self) -> str:
        """``http://host:port``, the origin clients reach the server at."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def _serve_connection(self, stream: anyio.abc.ByteStream) -> None:
        connection = _Connection(self, stream)
        async with stream:
            with anyio.CancelScope() as scope:
                self._connections[connection] = scope
                try:
                    await connection.run()
                finally:
                    del self._connections[connection]
                    if self.closing and not self._connections:
                        self._none_left.set()

    async def _close(self, grace: float) -> None:
        """Graceful close (module docstring); the caller cancels what is left."""
        self.closing = True
        for connection, scope in list(self._connections.items()):
            if connection.idle:
                scope.cancel()
        if grace > 0 and self._connections:
            with anyio.move_on_after(grace):
                await self._none_left.wait()


@contextlib.asynccontextmanager
async def serve(
    handler: Handler,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    limits: Limits | None = None,
    grace: float = 0.0,
    refusal: Refusal = plain_refusal,
) -> AsyncIterator[HTTPServer]:
    """Serve ``handler`` on ``host:port`` (``0``: a free port) for the ``async with`` block.

    ``limits`` bound each request (``Limits()`` when ``None``). Leaving the block closes
    gracefully, giving exchanges in progress ``grace`` seconds
    (module docstring). ``refusal`` makes the bodies of the core's own 400, 413 and 431 answers.
    An exception raised in the block comes out as it was, not wrapped in
    an exception group.

    Raises:
        OSError: the port cannot be bound.
    """
    listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    server = HTTPServer(handler, limits if limits is not None else Limits(), host, port, refusal)
    try:
        async with listener, anyio.create_task_group() as tasks:
            accepting = anyio.CancelScope()

            async def accept() -> None:
                with accepting:
                    await listener.serve(server._serve_connection, task_group=tasks)

            tasks.start_soon(accept)
            try:
                yield server
            finally:
                accepting.cancel()
                with anyio.CancelScope(shield=True):
                    await server._close(grace)
                tasks.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # The task group wraps what the ``async with`` body raised; hand it back as it was.
        if len(group.exceptions) != 1:
            raise
        error = group.exceptions[0]
        raise error from error.__cause__
