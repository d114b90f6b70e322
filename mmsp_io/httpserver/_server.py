"""The running server of the core (``mmsp_io.httpserver``, package doc): ``serve``, the accept
loop with its back-off and connection cap, and the graceful close.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Final, cast, final

import anyio
import anyio.abc
import h11

from ._connection import Connection, describe
from ._exchange import GONE, Admit, Handler, Limits, Refusal, plain_refusal

if sys.platform != "win32":
    import resource

__all__ = ["HTTPServer", "serve"]

_logger = logging.getLogger("mmsp_io")

#: The pause after a failed ``accept``, doubled while the failures last, up to the last one.
_FIRST_ACCEPT_PAUSE: Final = 0.01
_LAST_ACCEPT_PAUSE: Final = 1.0
#: The connection cap when the descriptor limit allows it.
_MAX_CONNECTIONS: Final = 1000
#: Descriptors left for what is not a connection: the listener, log and trace files, the
#: event loop's own.
_RESERVED_DESCRIPTORS: Final = 32


def _default_max_connections() -> int:
    """The default cap (package doc): 1,000, or half the descriptors the process may open
    (the soft ``RLIMIT_NOFILE``) after ``_RESERVED_DESCRIPTORS``, when that is fewer: each
    connection of a proxy such as the MMSP server may hold a second socket, upstream."""
    if sys.platform == "win32":
        return _MAX_CONNECTIONS
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return _MAX_CONNECTIONS
    return max(1, min(_MAX_CONNECTIONS, (soft - _RESERVED_DESCRIPTORS) // 2))


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
        #: Connections open at once; one more is answered 503 and closed (package doc).
        self.max_connections = (limits.max_connections if limits.max_connections is not None
                                else _default_max_connections())
        #: Set by graceful close: connections end after their exchange in progress.
        self.closing = False
        self._connections: set[Connection] = set()
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
            connection = Connection(self, stream)
            self._connections.add(connection)
            tasks.start_soon(self._serve_connection, connection)

    async def _turn_away(self, stream: anyio.abc.ByteStream) -> None:
        """Answer 503 and close: the connection cap is reached. The answer fits in the empty
        send buffer of a new socket, so this never waits for the client."""
        with contextlib.suppress(*GONE):
            await stream.send(self._busy)
        await stream.aclose()

    async def _serve_connection(self, connection: Connection) -> None:
        """Serve one accepted connection; whatever fails in it is logged and ends it alone
        (package doc, isolation)."""
        try:
            async with connection.stream:
                with connection.scope:
                    await connection.run()
        except Exception as exc:
            _logger.error("a connection failed and was closed: %s", describe(exc))
        finally:
            self._connections.discard(connection)
            if self.closing and not self._connections:
                self._none_left.set()

    async def _close(self, grace: float) -> None:
        """Graceful close (package doc); the caller cancels what is left."""
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
    block closes gracefully, giving exchanges in progress ``grace`` seconds (package doc).
    ``refusal`` makes the bodies of the core's own 400, 408, 413, 431 and 503 answers.
    ``admit`` is asked about each request head before its body is read (package doc,
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
