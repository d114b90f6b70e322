"""The MMSP server as an ASGI application: ``asgi_app(config)`` (issue 11 item 2).

For users who run several workers under an ASGI server (hypercorn, uvicorn) behind a load
balancer. The request handling is the gateway's (``mmsp_io.server.handler``), the same code the
h11 front end runs; this module only adapts ASGI to it:

- authentication (07 §3) is checked on the head (``app.head_refusal``, as the h11 front end
  does), before the body is read: an unauthenticated upload is answered 401 and never read;
- the body is read whole, at most 50 MiB (07 §1): a longer one, declared by
  ``content-length`` or found while reading, is answered 413 in the server's error form, and
  what the caller still sends is read and dropped for up to ``_LINGER_SECONDS`` so that it
  reads the answer instead of a reset;
- ``_Output`` gives the gateway the ``start``/``send``/``respond``/``cut`` of the h11 core's
  ``Response`` over ASGI messages; a cut ends the application without ending the body, which
  the ASGI server answers by closing the connection. The head is sent at once; the body is
  queued, at most ``_OUTBOX_BYTES`` of it, and sent to the ASGI ``send`` by a task of its own,
  everything queued in one message, so a send costs no hand-over between tasks unless the
  queue is full. The gateway's wait for a slow caller is then a wait for room in that queue,
  which its idle timeout can always interrupt, even where the ASGI server shields its socket
  writes from cancellation (hypercorn on trio does). Such a server still holds the connection
  of an idle caller until it reads or leaves; the upstream call is aborted all the same;
- while the gateway answers, a watcher waits for ``http.disconnect``: the caller leaving sets
  ``client_gone`` and cancels the gateway, which closes the upstream response at once;
- ``lifespan`` events are acknowledged; at shutdown the rows' HTTP clients are closed.

Graceful shutdown is the ASGI server's: it stops accepting and lets requests in flight finish.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any, Final, final

import anyio
import attrs

from ..httpserver import Request
from . import access
from .app import head_refusal
from .config import ConfigError, ServerConfig, load_config
from .handler import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_KEEPALIVE,
    MAX_BODY_BYTES,
    Answer,
    Gateway,
    refusal,
)
from .relay import Frames

__all__ = ["ASGIApp", "asgi_app"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: After a 413, how long the rest of the body is read and dropped.
_LINGER_SECONDS: Final = 5.0
#: The bytes of a response's body queued for the ASGI ``send`` (``_Output``).
_OUTBOX_BYTES: Final = 64 * 1024


def asgi_app(
    config: ServerConfig | Mapping[str, Any] | None = None,
    *,
    keepalive: float = DEFAULT_KEEPALIVE,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    trace_dir: str | os.PathLike[str] | None = None,
) -> ASGIApp:
    """The MMSP server of ``config`` as an ASGI 3 application (module docstring); the options
    are the gateway's (``Gateway``). Without ``config`` the file ``MMSP_SERVER_CONFIG`` names is
    loaded, so an ASGI server can build the app itself in each worker:
    ``hypercorn --workers 4 'mmsp_io.server:asgi_app()'``.

    Raises:
        ConfigError: no configuration, an invalid one, or a row's client that cannot be built
            (07 §2).
    """
    if config is None:
        path = os.environ.get("MMSP_SERVER_CONFIG")
        if not path:
            raise ConfigError("no server configuration: pass one to asgi_app or set "
                              "MMSP_SERVER_CONFIG")
        config = load_config(path)
    gateway = Gateway(config, keepalive=keepalive, idle_timeout=idle_timeout,
                      trace_dir=trace_dir)
    access.configure(gateway.config.access_log)  # absent: the ASGI server's logging decides
    return ASGIApp(gateway)


class _Disconnected(Exception):
    """The caller left before its request was whole."""


@final
class _Output:
    """The gateway's ``Output`` over ASGI ``send`` (module docstring): the head is sent at
    once; the body is queued (``relay.Frames``, at most ``_OUTBOX_BYTES``: a send waits for
    room) and ``pump`` sends all of it that is queued in one message."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._body = Frames(_OUTBOX_BYTES)
        #: Whether the body ends with the queued bytes (``end``, ``respond``): its last
        #: message says ``more_body: false``. A cut ends nothing.
        self._ends = False
        self.started = False
        self.complete = False
        self._client_gone = False
        self.scope: anyio.CancelScope | None = None

    @property
    def client_gone(self) -> bool:
        return self._client_gone

    async def start(
        self, status: int, headers: Sequence[tuple[str, str]] = (), *, hold: bool = False
    ) -> None:
        """Send the head at once (``hold`` is the h11 core's: an ASGI server chooses when
        its head is written)."""
        if self.started:
            raise RuntimeError("the response was already started")
        self.started = True
        await self._send({"type": "http.response.start", "status": status,
                          "headers": [(k.encode(), v.encode()) for k, v in headers]})

    async def send(self, data: bytes) -> None:
        """Queue ``data``, waiting while the queue is full.

        Raises:
            anyio.ClosedResourceError: the response was ended or cut.
        """
        if self.complete:
            raise anyio.ClosedResourceError
        await self._body.put(data)

    async def end(self, data: bytes = b"") -> None:
        """Queue ``data``, the body's last bytes, and end the body with them.

        Raises:
            anyio.ClosedResourceError: the response was ended or cut.
        """
        await self.send(data)
        self.complete = self._ends = True
        self._body.close()

    async def respond(
        self, status: int, headers: Sequence[tuple[str, str]] = (), body: bytes = b""
    ) -> None:
        await self.start(status, [*headers, ("content-length", str(len(body)))])
        await self.end(body)

    async def cut(self) -> None:
        self.complete = True
        self._body.close()

    async def pump(self) -> None:
        """Send the queued body, all of it in one ``http.response.body`` message each time,
        until ``close``; the last one ends the body after ``end`` or ``respond``."""
        body = self._body
        while True:
            await body.ready()
            data = body.take(_OUTBOX_BYTES)
            last = data is None or body.finished
            if data or (last and self._ends):
                await self._send({"type": "http.response.body", "body": data or b"",
                                  "more_body": not (last and self._ends)})
            if last:
                return

    def close(self) -> None:
        """No more body: ``pump`` returns once what is queued is sent."""
        self._body.close()

    def client_left(self) -> None:
        if not self.complete and not self._client_gone:
            self._client_gone = True
            if self.scope is not None:
                self.scope.cancel()


@final
class ASGIApp:
    """An ASGI 3 application over one ``Gateway``; build it with ``asgi_app``."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        else:  # websockets: refused, this server speaks HTTP only
            await send({"type": "websocket.close", "code": 1003})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.gateway.draining = True  # GET /readyz: 503 (health)
                await self.gateway.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = tuple((k.decode("latin-1").lower(), v.decode("latin-1"))
                        for k, v in scope.get("headers", ()))
        head = Request(
            method=scope["method"],
            path=scope["path"],
            query=scope.get("query_string", b"").decode("latin-1"),
            headers=headers,
            body=b"",
        )
        refused = await head_refusal(self.gateway, head, local_host=_local_host(scope))
        if refused is not None:
            await send(_closing_start(refused))
            await send({"type": "http.response.body", "body": refused.body, "more_body": False})
            return
        try:
            body = await self._body(headers, receive)
        except _Disconnected:
            return
        if body is None:
            answer = refusal(413, "InvalidRequestError", "Request body is too large.")
            await send(_closing_start(answer))
            # The body ends after the caller's: an ASGI server closes a connection whose
            # response is complete while its request is not, and the caller would get a reset.
            await send({"type": "http.response.body", "body": answer.body, "more_body": True})
            with anyio.move_on_after(_LINGER_SECONDS):
                while (await receive()).get("more_body", False):
                    pass
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        out = _Output(send)
        request = attrs.evolve(head, body=body)
        async with anyio.create_task_group() as tasks:
            out.scope = tasks.cancel_scope
            tasks.start_soon(_watch, receive, out)
            async with anyio.create_task_group() as sending:
                sending.start_soon(out.pump)
                try:
                    await self.gateway.handle(request, out, local_host=_local_host(scope))
                    if out.started and not out.complete:
                        await out.end()
                finally:
                    out.close()
            tasks.cancel_scope.cancel()

    @staticmethod
    async def _body(headers: Sequence[tuple[str, str]], receive: Receive) -> bytes | None:
        """The request body, or ``None`` when it is longer than 50 MiB (module docstring).

        Raises:
            _Disconnected: the caller left before the body was whole.
        """
        declared = next((value for name, value in headers if name == "content-length"), "0")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            return None
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                return None
            if not message.get("more_body", False):
                return bytes(body)


def _closing_start(answer: Answer) -> Message:
    """The ``http.response.start`` of a refusal, which closes the connection."""
    headers = [(name.encode(), value.encode()) for name, value in answer.headers]
    return {"type": "http.response.start", "status": answer.status, "headers": [
        *headers, (b"content-length", str(len(answer.body)).encode()), (b"connection", b"close")]}


def _local_host(scope: Scope) -> str | None:
    """The address the request came in at (the ASGI ``server``), for the gateway's ``Host``
    rule; ``None`` when the ASGI server does not say."""
    server = scope.get("server")
    return str(server[0]) if server else None


async def _watch(receive: Receive, out: _Output) -> None:
    """Wait for the caller to leave (module docstring)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    out.client_left()
