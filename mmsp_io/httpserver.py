"""An HTTP/1.1 server core on ``h11`` and ``anyio``: the loop every server of this package runs.

Used by the provider simulator, the MMSP server (whose ASGI twin shares the request handling
above this loop, not the loop) and the trace page. It runs under asyncio and trio.

Theory of operation
-------------------
``serve(handler)`` listens on a TCP port. Each accepted socket gets one ``h11.Connection`` and
runs a loop of exchanges:

1. *Read one request whole*: the head (at most ``Limits.max_head_bytes``; more is answered
   431, bytes that are not HTTP/1.1 are answered 400, and so is a head with both
   ``Content-Length`` and ``Transfer-Encoding``, whose framing is ambiguous: RFC 9112 §6.3
   lets a server refuse it and requires it to close the connection, so no byte after it can
   be served as a request of its own), then ``serve``'s ``admit`` hook, if any, is asked about
   the head alone: its refusal is answered before any byte of the body is read (the MMSP server
   authenticates there, so an unauthenticated upload is never buffered). Then the body (at most
   ``Limits.max_body_bytes``: a longer one, declared by ``Content-Length`` or found while
   reading, is answered 413). After such an answer the connection is closed once the client has
   finished sending, the bytes read then dropped (bounded by ``Limits.linger_seconds``), so the
   client reads the answer instead of a reset. A client that closes before its request is whole
   ends the connection.

   Reading is timed: waiting for a request, from the end of the previous exchange (or the
   accept) until the head is whole, may take ``Limits.head_timeout`` seconds, and the body
   ``Limits.body_timeout`` more. An idle connection with no byte of a request is closed
   silently when its time is up; a request still arriving is answered 408 and closed, without
   lingering: a client that trickles a request holds the connection for a bounded time only.
2. *Call* ``handler(request, response)``. The handler writes the answer through ``response``:
   ``start`` the head, ``send`` body bytes (a body without ``content-length`` goes out chunked:
   an event stream is a series of ``send`` calls), then ``end``; or ``respond`` for a whole
   body at once; or ``cut`` to close the connection mid-body on purpose. A handler that returns
   without ending its response has it ended; one that started nothing gets a 500.
3. *Meanwhile a watcher reads the socket*. Bytes of a pipelined next request are kept for the
   next cycle (up to ``_PIPELINE_BYTES``; then reading pauses). The client closing the socket, or
   a failed write, before the response is complete sets ``response.client_gone`` and cancels the
   handler: an abandoned stream costs nothing more, and the handler's ``finally`` can see why
   it stopped. No read timeout applies here: a response may stream for as long as it needs.
4. When both sides are done and neither asked to close, the next cycle starts on the same
   socket (keep-alive); otherwise the connection is closed.

The bodies of the refusals the core answers itself (400, 408, 413, 431, 503) are plain text
unless ``serve`` is given a ``refusal`` function, so a server whose callers read JSON errors
answers them in its own form.

Isolation: whatever fails while serving one connection (a handler's exception, an error of
``h11`` or of the ``admit`` hook, a bug of this module) ends that connection only. A handler's
exception other than cancellation is answered 500 if nothing was sent yet, else the connection
is closed; any other failure closes the connection. Each is logged on the ``mmsp_io`` logger as
its type and stack, never its message, which may quote a header line (h11's do) and so a key
(08 D61); no header value or body is logged.

Accepting: a failed ``accept`` (out of descriptors or buffers, a connection aborted while
queued) is logged and retried after a pause of 10 ms, doubling up to 1 s while the failures
last; it never ends the server. At most ``Limits.max_connections`` connections are open at
once: one accepted at the cap is answered 503 (``connection: close``) and closed at once,
before it costs a task. The default cap is 1,000, or fewer when the process may open fewer
descriptors (``_default_max_connections``).

Graceful close: leaving ``serve``'s block stops accepting at once, closes the connections that
wait for a request, gives the exchanges in progress ``grace`` seconds to finish, then cancels
what is left and closes every socket.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import sys
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Final, Protocol, cast, final

import anyio
import anyio.abc
import attrs
import h11

if sys.platform != "win32":
    import resource

__all__ = [
    "Admit",
    "Answer",
    "HTTPServer",
    "Handler",
    "Limits",
    "Refusal",
    "Request",
    "Response",
    "first_header",
    "is_loopback_host",
    "names_loopback_host",
    "plain_refusal",
    "serve",
]

_logger = logging.getLogger("mmsp_io")

_RECEIVE_SIZE: Final = 65536
#: Bytes of pipelined requests kept while a response is being sent; past this, reading pauses.
_PIPELINE_BYTES: Final = 1024 * 1024
#: The exceptions of a socket whose peer went away (or that was closed under us).
_GONE: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError)
#: The pause after a failed ``accept``, doubled while the failures last, up to the last one.
_FIRST_ACCEPT_PAUSE: Final = 0.01
_LAST_ACCEPT_PAUSE: Final = 1.0
#: The connection cap when the descriptor limit allows it.
_MAX_CONNECTIONS: Final = 1000
#: Descriptors left for what is not a connection: the listener, log and trace files, the
#: event loop's own.
_RESERVED_DESCRIPTORS: Final = 32


def _default_max_connections() -> int:
    """The default cap (module docstring): 1,000, or half the descriptors the process may open
    (the soft ``RLIMIT_NOFILE``) after ``_RESERVED_DESCRIPTORS``, when that is fewer: each
    connection of a proxy such as the MMSP server may hold a second socket, upstream."""
    if sys.platform == "win32":
        return _MAX_CONNECTIONS
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return _MAX_CONNECTIONS
    return max(1, min(_MAX_CONNECTIONS, (soft - _RESERVED_DESCRIPTORS) // 2))


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
    #: ``_default_max_connections()`` when the server starts.
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


#: What answers a request; see the module docstring, step 2.
Handler = Callable[[Request, "Response"], Awaitable[None]]
#: The body of a refusal the core answers itself: ``(status, reason) -> (content type, body)``.
Refusal = Callable[[int, str], tuple[str, bytes]]
#: Asked about each request head before its body is read (module docstring, step 1): an
#: ``Answer`` refuses the request, ``None`` lets it in.
Admit = Callable[[Request], Awaitable[Answer | None]]


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is a loopback host."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def names_loopback_host(value: str | None) -> bool:
    """Whether a ``Host`` header (``host``, ``host:port``, ``[v6]:port``) names a loopback host."""
    if value is None:
        return False
    bracketed = value.startswith("[")
    host = value[1:].partition("]")[0] if bracketed else value.partition(":")[0]
    return is_loopback_host(host)


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


class _Refused(Exception):
    """A request the core refuses itself: answered ``status``, then the connection is closed
    (module docstring, step 1), after lingering unless ``linger`` is false."""

    def __init__(self, status: int, reason: str, *, linger: bool = True) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.linger = linger


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
        #: The scope of the connection's task; graceful close cancels it.
        self.scope = anyio.CancelScope()

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
            except Exception as exc:
                _logger.error("%s %s: the handler failed: %s", request.method, request.path,
                              _describe(exc))
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


def _describe(exc: BaseException) -> str:
    """The type of ``exc`` (the first leaf of a group) and the stack it was raised through,
    without its message (module docstring, isolation)."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    stack = "".join(traceback.format_list(traceback.extract_tb(exc.__traceback__)))
    return f"{type(exc).__qualname__}\n{stack}".rstrip()


def _whole_answer(status: int, content_type: str, body: bytes) -> bytes:
    """The bytes of a whole ``connection: close`` answer, as h11 writes them."""
    writer = h11.Connection(h11.SERVER)
    headers = [("content-type", content_type), ("content-length", str(len(body))),
               ("connection", "close")]
    events = (h11.Response(status_code=status, headers=headers), h11.Data(data=body),
              h11.EndOfMessage())
    return b"".join(writer.send(event) or b"" for event in events)


@final
class HTTPServer:
    """A running server; build it with ``serve``."""

    def __init__(
        self,
        handler: Handler,
        limits: Limits,
        host: str,
        port: int,
        refusal: Refusal,
        admit: Admit | None,
    ) -> None:
        self.handler = handler
        self.limits = limits
        self.refusal = refusal
        self.admit = admit
        self.host = host
        self.port = port
        #: Connections open at once; one more is answered 503 and closed (module docstring).
        self.max_connections = (limits.max_connections if limits.max_connections is not None
                                else _default_max_connections())
        #: Set by graceful close: connections end after their exchange in progress.
        self.closing = False
        self._connections: set[_Connection] = set()
        self._none_left = anyio.Event()
        self._busy = _whole_answer(503, *refusal(503, "The server is at its connection limit."))

    @property
    def url(self) -> str:
        """``http://host:port``, the origin clients reach the server at."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def _accept(
        self,
        listener: anyio.abc.SocketListener,
        tasks: anyio.abc.TaskGroup,
    ) -> None:
        """Accept connections on ``listener`` until cancelled, each served by a task of
        ``tasks``; pause after a failure, turn away a connection over the cap (module
        docstring).

        Raises:
            anyio.ClosedResourceError: the listener was closed.
        """
        pause = _FIRST_ACCEPT_PAUSE
        while True:
            try:
                stream = await listener.accept()
            except (OSError, anyio.BrokenResourceError) as exc:  # trio's wraps the OSError
                _logger.warning("accepting a connection failed (%r); trying again in %g s",
                                exc.__cause__ or exc, pause)
                await anyio.sleep(pause)
                pause = min(2 * pause, _LAST_ACCEPT_PAUSE)
                continue
            pause = _FIRST_ACCEPT_PAUSE
            if len(self._connections) >= self.max_connections:
                await self._turn_away(stream)
                continue
            connection = _Connection(self, stream)
            self._connections.add(connection)
            tasks.start_soon(self._serve_connection, connection)

    async def _turn_away(self, stream: anyio.abc.ByteStream) -> None:
        """Answer 503 and close: the connection cap is reached. The answer fits in the empty
        send buffer of a new socket, so this never waits for the client."""
        with contextlib.suppress(*_GONE):
            await stream.send(self._busy)
        await stream.aclose()

    async def _serve_connection(self, connection: _Connection) -> None:
        """Serve one accepted connection; whatever fails in it is logged and ends it alone
        (module docstring, isolation)."""
        try:
            async with connection.stream:
                with connection.scope:
                    await connection.run()
        except Exception as exc:
            _logger.error("a connection failed and was closed: %s", _describe(exc))
        finally:
            self._connections.discard(connection)
            if self.closing and not self._connections:
                self._none_left.set()

    async def _close(self, grace: float) -> None:
        """Graceful close (module docstring); the caller cancels what is left."""
        self.closing = True
        for connection in list(self._connections):
            if connection.idle:
                connection.scope.cancel()
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
    admit: Admit | None = None,
) -> AsyncIterator[HTTPServer]:
    """Serve ``handler`` on ``host:port`` (``0``: a free port) for the ``async with`` block.

    ``limits`` bound each request and the connections (``Limits()`` when ``None``). Leaving the
    block closes gracefully, giving exchanges in progress ``grace`` seconds (module docstring).
    ``refusal`` makes the bodies of the core's own 400, 408, 413, 431 and 503 answers.
    ``admit`` is asked about each request head before its body is read (module docstring,
    step 1). An exception raised in the block comes out as it was, not wrapped in an exception
    group.

    Raises:
        OSError: the port cannot be bound.
    """
    listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    server = HTTPServer(handler, limits if limits is not None else Limits(), host, port, refusal,
                        admit)
    try:
        async with listener, anyio.create_task_group() as tasks:
            accepting = anyio.CancelScope()

            async def accept() -> None:
                # The listeners of a TCP listener are socket listeners: they can ``accept``.
                sockets = cast(Sequence[anyio.abc.SocketListener], listener.listeners)
                with accepting:
                    async with anyio.create_task_group() as each:
                        for one in sockets:
                            each.start_soon(server._accept, one, tasks)

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
