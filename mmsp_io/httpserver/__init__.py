"""An HTTP/1.1 server core on ``h11`` and ``anyio``: the loop every server of ``mmsp_io`` runs.

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
   an event stream is a series of ``send`` calls), then ``end``, which may carry the last
   bytes; or ``respond`` for a whole body at once; or ``cut`` to close the connection mid-body
   on purpose. A handler that returns without ending its response has it ended; one that
   started nothing gets a 500. Each call is one write to the socket: ``start(hold=True)``
   keeps the head for the next call's write (an event stream's head goes with its first
   event), ``end(data)`` sends the last bytes and the end of the body together, and
   ``respond`` is one write.
3. *Meanwhile the connection's reader reads the socket*: one task per connection, beside its
   exchanges for as long as it is open, feeds h11 what arrives (the request being read, and
   while a response is written the bytes of a pipelined next request, kept for the next cycle
   up to ``_connection._PIPELINE_BYTES``; then reading pauses until they are read). No task
   is started or cancelled per request. The client closing the socket, or a failed write,
   before the response is complete sets ``response.client_gone`` and cancels the handler: an
   abandoned stream costs nothing more, and the handler's ``finally`` can see why it stopped.
   No read timeout applies here: a response may stream for as long as it needs.
4. When both sides are done and neither asked to close, the next cycle starts on the same
   socket (keep-alive); otherwise the connection is closed.

The bodies of the refusals the core answers itself (400, 408, 413, 431, 503) are plain text
unless ``serve`` is given a ``refusal`` function, so a server whose callers read JSON errors
answers them in its own form.

Isolation: whatever fails while serving one connection (a handler's exception, an error of
``h11`` or of the ``admit`` hook, a bug of this package) ends that connection only. A handler's
exception other than cancellation is answered 500 if nothing was sent yet, else the connection
is closed; any other failure closes the connection. Each is logged on the ``mmsp_io`` logger as
its type and stack, never its message, which may quote a header line (h11's do) and so a key
(08 D61); no header value or body is logged.

Accepting: a failed ``accept`` (out of descriptors or buffers, a connection aborted while
queued) is logged and retried after a pause of 10 ms, doubling up to 1 s while the failures
last; it never ends the server. At most ``Limits.max_connections`` connections are open at
once: one accepted at the cap is answered 503 (``connection: close``) and closed at once,
before it costs a task. The default cap is 1,000, or fewer when the process may open fewer
descriptors (``_server._default_max_connections``).

Graceful close: leaving ``serve``'s block stops accepting at once, closes the connections that
wait for a request, gives the exchanges in progress ``grace`` seconds to finish, then cancels
what is left and closes every socket.

Modules, one concern each: ``_exchange`` (``Limits``, ``Request``, the hooks and ``Response``),
``_connection`` (one socket's exchanges, steps 1 to 4, and their isolation), ``_server``
(``serve``, accepting, the connection cap, graceful close) and ``_hosts`` (the loopback
``Host`` rule of the gateway and the trace page). This package re-exports their public names.
"""

from __future__ import annotations

from ._exchange import (
    Admit,
    Answer,
    Handler,
    Limits,
    Refusal,
    Request,
    Response,
    first_header,
    plain_refusal,
)
from ._hosts import is_loopback_host, names_loopback_host
from ._server import HTTPServer, serve

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
