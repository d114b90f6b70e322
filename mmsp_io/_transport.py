"""The library's fast HTTP/1.1 transport, and the client built on it (``fast_http_client``).

``fast_http_client`` builds, through httpx's public API only (08 D79), the ``httpx.AsyncClient``
of an ``AutoLLMClient`` given none and of the MMSP server's upstream calls: ``Http11Transport``
as its transport, the environment's proxies on httpx's own transports mounted beside it. A
caller's ``http_client`` is used as given (08 D62). It is an ``httpx.AsyncBaseTransport``, so
httpx still builds the request and applies the client's headers and cookies; a
``Content-Encoding`` is left to the reader of the body (httpx's ``aiter_bytes``, or the
driver's bounded decoder, ``mmsp_io._decoding``).

Why not httpx's own (``AsyncHTTPTransport`` over httpcore): httpcore hands each of a stream's
many small HTTP chunks through h11's events, a cancel scope per socket read and five generator
layers (about 7 µs a chunk, more than the whole MMSP pipeline), and its pool walks every
connection as a request starts or ends, so a thousand concurrent streams never get going.

Theory of operation:

1. ``handle_async_request`` takes a slot (at most ``max_connections`` requests in flight; a
   request past that waits up to the pool timeout: ``httpx.PoolTimeout``), then an idle
   connection to the request's origin (the most recently used one that has not outlived
   ``keepalive_expiry`` and has nothing to read, which would be the server closing it) or a
   new one (``anyio.connect_tcp``, TLS for ``https`` with the context it was given, else
   httpx's default one, under the connect timeout).
2. h11 writes the request (under the write timeout) and parses the response head (each read
   under the read timeout, the head gathered in linear time up to ``MAX_HEAD_BYTES``; a ``1xx``
   head is skipped). The body's framing comes from the head (``_http_body.framing_of``), and
   the bytes after the head go to a ``BodyReader``.
3. The response's stream, ``ResponseBody``, is an async iterator with no generator layer:
   each ``__anext__`` hands out the reader's next piece, reading the socket (under the read
   timeout, looked up when the body starts, so a read timeout set after the headers applies
   to the body) only when the reader needs data. The driver takes it from the response's
   extension ``BODY_EXTENSION`` and skips httpx's wrapper of it.
4. Closing the body gives the slot back and the connection to the idle list when the body
   ended by its framing with nothing after it (bytes received but not yet read count) and
   keep-alive was not refused (``Connection: close``, HTTP/1.0) nor put in doubt (a head with
   both ``Transfer-Encoding`` and ``Content-Length``, RFC 9112 §6.3). A body closed before its
   end (a cancelled or abandoned stream) closes its connection at once, so the server sees the
   caller leave. One the caller marked ``linger`` (the driver does, once its pipeline has seen
   the protocol's terminal event, 08 D56) first reads on to the end of the body, at most
   ``FINISH_BYTES`` within ``FINISH_SECONDS``: that end usually follows the terminal event at
   once, often in a TLS record of its own that no read has decoded yet, and reading it lets
   the next request (an agent's next turn) reuse the connection instead of opening a new one
   with a new TLS handshake. A server that keeps the socket open after its last event costs
   those few milliseconds, then the connection is closed. At most ``max_keepalive`` idle
   connections are kept; past that the oldest is closed.

Failures are httpx's exceptions, as httpx's own transport raises them: ``ConnectError`` /
``ConnectTimeout``, ``WriteError`` / ``WriteTimeout``, ``ReadError`` / ``ReadTimeout``,
``RemoteProtocolError`` (a head or body h11 or the body reader refuses, whatever h11 raises on
it, or a server that closed before its answer), ``PoolTimeout``.
"""

from __future__ import annotations

import collections
import functools
import ipaddress
import math
import os
import select
import ssl
import time
import urllib.request
from collections.abc import Iterable
from typing import Final, final

import anyio
import anyio.abc
import h11
import httpx

from ._http_body import BLANK_LINE, END, NEED_DATA, BodyError, BodyReader, framing_of

__all__ = ["BODY_EXTENSION", "Http11Transport", "ResponseBody", "fast_http_client"]

#: The response extension that holds its ``ResponseBody`` (the driver reads it from there).
BODY_EXTENSION: Final = "mmsp_io.body"
#: ``fast_http_client``'s default pool: a thousand concurrent streams and more get going at
#: once (issue 9); past 1,600 a request waits for a slot; 100 idle connections are kept 30 s
#: (as the OpenAI and Anthropic SDKs keep: 100 streams at once reuse them round after round).
MAX_CONNECTIONS: Final = 1_600
MAX_KEEPALIVE: Final = 100
KEEPALIVE_EXPIRY: Final = 30.0
#: A lingering body (module doc, step 4) is read on to its end for at most this long and this
#: many bytes of body when it is closed; else its connection is closed.
FINISH_SECONDS: Final = 0.02
FINISH_BYTES: Final = 64 * 1024
#: The most bytes asked of the socket at once.
READ_SIZE: Final = 64 * 1024
#: The longest response head read (httpcore's limit).
MAX_HEAD_BYTES: Final = 100 * 1024
#: Socket and TLS failures of a read or a write.
_IO_ERRORS: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError,
                     ssl.SSLError)

#: An origin: scheme, host, port.
_Origin = tuple[bytes, str, int]


def _readable(stream: anyio.abc.ByteStream) -> bool:
    """Whether an idle connection's socket has something to read: the server closed it (or
    sent what no request asked for), so it cannot carry another exchange."""
    sock = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
    if sock is None or sock.fileno() < 0:
        return True
    if not hasattr(select, "poll"):  # Windows: no poll, and no limit on select's descriptors
        return bool(select.select([sock], [], [], 0)[0])
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


async def _read_to_end(stream: anyio.abc.ByteStream, reader: BodyReader, *,
                      wait: bool) -> bool:
    """Read on to the end of ``reader``'s body through what was received and, when ``wait``,
    from ``stream`` within ``FINISH_SECONDS`` and ``FINISH_BYTES`` (module doc, step 4); say
    whether the body ended by its framing with nothing after it, so that the connection can
    carry another exchange."""
    handed_out = 0
    with anyio.move_on_after(FINISH_SECONDS if wait else math.inf):
        while True:
            try:
                chunk = reader.next_chunk()
            except BodyError:
                return False
            if chunk is END:
                return reader.reusable
            if chunk is not NEED_DATA:
                handed_out += len(chunk)  # type: ignore[arg-type]
                if wait and handed_out > FINISH_BYTES:
                    return False
            elif not (wait and reader.can_end):
                return False
            else:
                try:
                    data = await stream.receive(READ_SIZE)
                except (anyio.EndOfStream, *_IO_ERRORS):
                    return False
                reader.receive_data(data)
    return False


@final
class _Connection:
    """One socket to an origin, and when it last went idle (``time.monotonic``)."""

    __slots__ = ("idle_since", "origin", "stream")

    def __init__(self, stream: anyio.abc.ByteStream, origin: _Origin) -> None:
        self.stream = stream
        self.origin = origin
        self.idle_since = 0.0


@final
class ResponseBody(httpx.AsyncByteStream):
    """The body of one response (module doc, step 3): an async iterator of its chunks, each
    step a coroutine of its own; closing it releases the connection (step 4).

    Raises (iterating):
        httpx.ReadTimeout: a read of the socket outlasted the read timeout.
        httpx.ReadError: the socket failed.
        httpx.RemoteProtocolError: the body broke its framing, or the connection closed before
            it was whole.
    """

    __slots__ = ("_connection", "_keep_alive", "_owner", "_reader", "_request", "_started",
                 "_timeout", "linger")

    def __init__(self, transport: Http11Transport, connection: _Connection, reader: BodyReader,
                 request: httpx.Request, keep_alive: bool) -> None:
        self._owner = transport
        self._connection: _Connection | None = connection
        self._reader = reader
        self._request = request
        self._keep_alive = keep_alive
        #: The read timeout of the body, looked up at its first read (module doc, step 3).
        self._timeout: float | None = None
        self._started = False
        #: Set by a caller that has all it wants of the body: closing it before its end then
        #: reads on to that end, briefly, to keep the connection (module doc, step 4).
        self.linger = False

    def __aiter__(self) -> ResponseBody:
        return self

    async def __anext__(self) -> bytes:
        reader = self._reader
        while True:
            try:
                chunk = reader.next_chunk()
            except BodyError as exc:
                raise httpx.RemoteProtocolError(str(exc), request=self._request) from exc
            if chunk is NEED_DATA:
                await self._receive()
            elif chunk is END:
                raise StopAsyncIteration
            else:
                return chunk  # type: ignore[return-value]

    async def _receive(self) -> None:
        connection = self._connection
        if connection is None:
            raise httpx.ReadError("the response is closed", request=self._request)
        if not self._started:
            self._started = True
            self._timeout = self._request.extensions.get("timeout", {}).get("read")
        data = await _read(connection.stream, self._timeout, self._request, "the body")
        if data:
            self._reader.receive_data(data)
        else:
            self._reader.receive_eof()

    async def aclose(self) -> None:
        """Release the connection: back to the pool when it can carry another exchange (a
        ``linger`` body first read on to its end, briefly), closed otherwise. Closing twice
        does nothing more."""
        connection = self._connection
        if connection is None:
            return
        self._connection = None
        reuse = False
        try:
            reuse = self._keep_alive and await _read_to_end(connection.stream, self._reader,
                                                            wait=self.linger)
        finally:
            await self._owner._release(connection, reuse=reuse)


async def _read(stream: anyio.abc.ByteStream, timeout: float | None,
                request: httpx.Request, waiting_for: str) -> bytes:
    """The next bytes of ``stream`` (``b""`` at its end), within ``timeout`` seconds.

    Raises:
        httpx.ReadTimeout: nothing came within ``timeout`` (while ``waiting_for`` that).
        httpx.ReadError: the socket failed.
    """
    try:
        if timeout is None:
            return await stream.receive(READ_SIZE)
        with anyio.fail_after(timeout):
            return await stream.receive(READ_SIZE)
    except anyio.EndOfStream:
        return b""
    except TimeoutError as exc:
        raise httpx.ReadTimeout(f"timed out waiting for {waiting_for}", request=request) from exc
    except _IO_ERRORS as exc:
        raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc


@final
class Http11Transport(httpx.AsyncBaseTransport):
    """The library's own HTTP/1.1 transport and connection pool (module doc).

    Args:
        limits: ``max_connections`` requests in flight (``None``: no limit),
            ``max_keepalive_connections`` idle connections kept, ``keepalive_expiry`` seconds
            an idle connection is kept.
        ssl_context: the TLS context of ``https`` origins; httpx's default one (made on the
            first ``https`` request) when ``None``.
    """

    def __init__(self, limits: httpx.Limits, ssl_context: ssl.SSLContext | None = None) -> None:
        self._max_active = limits.max_connections
        self._max_idle = limits.max_keepalive_connections
        self._expiry = math.inf if limits.keepalive_expiry is None else limits.keepalive_expiry
        self._tls = ssl_context
        self._idle: dict[_Origin, list[_Connection]] = {}
        self._idle_count = 0
        self._active = 0
        self._waiters: collections.deque[anyio.Event] = collections.deque()
        self._closed = False

    @property
    def active(self) -> int:
        """How many requests hold a slot (sent, and their body not yet closed)."""
        return self._active

    @property
    def idle(self) -> int:
        """How many idle connections are kept for reuse."""
        return self._idle_count

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and return its response once the head has arrived (module doc).

        Raises:
            httpx.PoolTimeout, httpx.ConnectError, httpx.ConnectTimeout, httpx.WriteError,
            httpx.WriteTimeout, httpx.ReadError, httpx.ReadTimeout,
            httpx.RemoteProtocolError: as httpx's own transport raises them.
        """
        if self._closed:
            raise RuntimeError("the transport is closed")
        timeouts = request.extensions.get("timeout", {})
        await self._take_slot(request, timeouts.get("pool"))
        try:
            connection = await self._connection_for(request, timeouts.get("connect"))
        except BaseException:
            self._give_slot()
            raise
        try:
            return await self._exchange(connection, request, timeouts)
        except BaseException:
            await self._release(connection, reuse=False)
            raise

    async def aclose(self) -> None:
        """Close every idle connection; the transport takes no more requests."""
        self._closed = True
        idle = [connection for connections in self._idle.values() for connection in connections]
        self._idle.clear()
        self._idle_count = 0
        for connection in idle:
            await anyio.aclose_forcefully(connection.stream)

    # -- slots ---------------------------------------------------------------------------------

    async def _take_slot(self, request: httpx.Request, timeout: float | None) -> None:
        """Wait until fewer than ``max_connections`` requests are in flight, then take a slot.

        Raises:
            httpx.PoolTimeout: no slot came free within ``timeout``.
        """
        limit = self._max_active
        if limit is not None and self._active >= limit:
            try:
                with anyio.fail_after(timeout):
                    while self._active >= limit:
                        event = anyio.Event()
                        self._waiters.append(event)
                        try:
                            await event.wait()
                        finally:
                            if not event.is_set():
                                self._waiters.remove(event)
            except TimeoutError as exc:
                raise httpx.PoolTimeout("timed out waiting for a connection slot",
                                        request=request) from exc
        self._active += 1

    def _give_slot(self) -> None:
        self._active -= 1
        waiters = self._waiters
        while waiters:  # every waiter checks again; one of them takes the slot
            waiters.popleft().set()

    # -- connections ---------------------------------------------------------------------------

    async def _connection_for(self, request: httpx.Request,
                              timeout: float | None) -> _Connection:
        """An idle connection to ``request``'s origin that can carry an exchange, or a new one.

        Raises:
            httpx.ConnectError, httpx.ConnectTimeout: no connection could be opened.
        """
        url = request.url
        scheme = url.raw_scheme
        host = url.raw_host.decode("ascii")  # an internationalized name in its IDNA form
        origin: _Origin = (scheme, host, url.port or (443 if scheme == b"https" else 80))
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            self._idle_count -= 1
            if now - connection.idle_since < self._expiry and not _readable(connection.stream):
                return connection
            await anyio.aclose_forcefully(connection.stream)
        return _Connection(await self._connect(origin, request, timeout), origin)

    async def _connect(self, origin: _Origin, request: httpx.Request,
                       timeout: float | None) -> anyio.abc.ByteStream:
        scheme, host, port = origin
        if scheme not in (b"http", b"https"):
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {scheme.decode()!r}",
                                            request=request)
        tls = None
        if scheme == b"https":
            tls = self._tls
            if tls is None:
                tls = self._tls = default_tls_context()
        try:
            with anyio.fail_after(timeout):
                if tls is None:
                    return await anyio.connect_tcp(host, port)
                return await anyio.connect_tcp(host, port, ssl_context=tls, tls_hostname=host,
                                               tls_standard_compatible=False)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"timed out connecting to {host}:{port}",
                                       request=request) from exc
        except (*_IO_ERRORS, anyio.EndOfStream) as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc

    async def _release(self, connection: _Connection, *, reuse: bool) -> None:
        """Give the slot back, and ``connection`` to the idle list or closed (step 4). The
        lists change before the first wait, so releases at the same time keep the limit."""
        self._give_slot()
        closing = connection
        if reuse and not self._closed and self._max_idle != 0:
            connection.idle_since = time.monotonic()
            self._idle.setdefault(connection.origin, []).append(connection)
            self._idle_count += 1
            if self._max_idle is None or self._idle_count <= self._max_idle:
                return
            closing = min((c for cs in self._idle.values() for c in cs),
                          key=lambda c: c.idle_since)
            self._idle[closing.origin].remove(closing)
            self._idle_count -= 1
        with anyio.CancelScope(shield=True):
            await anyio.aclose_forcefully(closing.stream)

    # -- one exchange --------------------------------------------------------------------------

    async def _exchange(self, connection: _Connection, request: httpx.Request,
                        timeouts: dict[str, float | None]) -> httpx.Response:
        """Write ``request`` and read its response head (module doc, step 2)."""
        method = request.method.encode("ascii")
        h11_connection = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
        try:
            parts = [h11_connection.send(h11.Request(
                method=method, target=request.url.raw_path, headers=request.headers.raw))]
            async for part in request.stream:  # type: ignore[union-attr]
                if part:
                    parts.append(h11_connection.send(h11.Data(data=part)))
            parts.append(h11_connection.send(h11.EndOfMessage()))
        except h11.LocalProtocolError as exc:
            raise httpx.LocalProtocolError(str(exc), request=request) from exc
        stream = connection.stream
        try:
            with anyio.fail_after(timeouts.get("write")):
                await stream.send(b"".join(p for p in parts if p is not None))
        except TimeoutError as exc:
            raise httpx.WriteTimeout("timed out sending the request", request=request) from exc
        except _IO_ERRORS as exc:
            raise httpx.WriteError(str(exc) or type(exc).__name__, request=request) from exc
        head, rest = await self._read_head(h11_connection, stream, request, timeouts.get("read"))
        framing, length = framing_of(method, head)
        reader = BodyReader(framing, length, rest)
        body = ResponseBody(self, connection, reader, request, _keeps_alive(head, request))
        return httpx.Response(
            head.status_code, headers=head.headers.raw_items(), stream=body,
            extensions={"http_version": b"HTTP/" + head.http_version,
                        "reason_phrase": head.reason, BODY_EXTENSION: body},
        )

    async def _read_head(self, h11_connection: h11.Connection, stream: anyio.abc.ByteStream,
                         request: httpx.Request,
                         timeout: float | None) -> tuple[h11.Response, bytes]:
        """The final response head (``1xx`` heads skipped) and the bytes after it.

        The head is gathered in a ``bytearray`` and the search for its end resumes where the
        previous one stopped, so a head that trickles in costs linear time.

        Raises:
            httpx.ReadTimeout, httpx.ReadError: as for a body.
            httpx.RemoteProtocolError: the head is not HTTP/1.1 h11 accepts (whatever h11
                raises on it: the driver reports this as ``ProviderConnectionError``, 08 D19),
                longer than ``MAX_HEAD_BYTES``, or the server closed before it was whole.
        """
        buffer = bytearray()
        scan = 0
        while True:
            end = BLANK_LINE.search(buffer, scan)
            if end is None:
                if len(buffer) > MAX_HEAD_BYTES:
                    raise httpx.RemoteProtocolError("the response head is too long",
                                                    request=request)
                scan = max(len(buffer) - 2, 0)  # a blank line may start in the last two bytes
                data = await _read(stream, timeout, request, "the response")
                if not data:
                    raise httpx.RemoteProtocolError(
                        "Server disconnected without sending a response.", request=request)
                buffer += data
                continue
            if end.end() > MAX_HEAD_BYTES:
                raise httpx.RemoteProtocolError("the response head is too long",
                                                request=request)
            try:
                h11_connection.receive_data(bytes(buffer[:end.end()]))
                event = h11_connection.next_event()
            except Exception as exc:  # h11 refuses the head, whatever it raises (a ValueError...)
                raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__,
                                                request=request) from exc
            del buffer[:end.end()]
            scan = 0
            if isinstance(event, h11.Response):
                return event, bytes(buffer)
            if not isinstance(event, h11.InformationalResponse):
                raise httpx.RemoteProtocolError("the response head is not HTTP/1.1",
                                                request=request)


def _keeps_alive(head: h11.Response, request: httpx.Request) -> bool:
    """Whether the connection may carry another exchange once ``head``'s body has ended by its
    framing (module doc, step 4): an HTTP/1.1 answer, neither side asking to close, and not an
    answer framed by both ``Transfer-Encoding`` and ``Content-Length``, which is read as
    chunked but may be an attempt at response splitting (RFC 9112 §6.3 and §11.1)."""
    names = {name for name, _ in head.headers}
    return (head.http_version == b"1.1"
            and not (b"transfer-encoding" in names and b"content-length" in names)
            and not _asks_to_close(head.headers)
            and not _asks_to_close(request.headers.raw))


def _asks_to_close(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether a head's ``Connection`` header holds ``close`` (both case-insensitive)."""
    return any(token.strip().lower() == b"close"
               for name, value in headers if name.lower() == b"connection"
               for token in value.split(b","))


def default_tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (``httpx.create_ssl_context()``: its certificates, or those
    ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` name), offering HTTP/1.1 by ALPN; one per value of
    those two variables, shared by every client of the process: loading a CA bundle takes tens
    of milliseconds, which each client made would otherwise pay."""
    return _tls_context_for(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _tls_context_for(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """``default_tls_context`` for these values of the variables (httpx reads them itself)."""
    tls = httpx.create_ssl_context()
    tls.set_alpn_protocols(["http/1.1"])
    return tls


def fast_http_client(
    *,
    max_connections: int | None = MAX_CONNECTIONS,
    max_keepalive: int | None = MAX_KEEPALIVE,
    keepalive_expiry: float | None = KEEPALIVE_EXPIRY,
    ssl_context: ssl.SSLContext | None = None,
    trust_env: bool = True,
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose requests go through ``Http11Transport`` (module doc),
    built through httpx's public API (08 D79); ``AutoLLMClient`` uses one when it is given no
    ``http_client`` (a caller's client is used as given, 08 D62).

    The client follows no redirect and has no timeout of httpx's own: the driver's named
    timeouts apply to each request (08 D16, D22). Close it (``async with`` or ``aclose``).

    Args:
        max_connections: requests in flight at once (``None``: no limit); one past it waits
            for a slot within the pool timeout, else ``httpx.PoolTimeout``.
        max_keepalive: idle connections kept for reuse (``None``: no limit; ``0``: none).
        keepalive_expiry: seconds an idle connection is kept (``None``: no expiry).
        ssl_context: the TLS context of ``https`` origins; ``default_tls_context()`` when
            ``None`` (httpx's default certificates, ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``
            apply).
        trust_env: read the environment's proxies (``HTTP_PROXY``, ``HTTPS_PROXY``,
            ``ALL_PROXY``, ``NO_PROXY``, as httpx reads them): a proxied request goes through
            httpx's own transport (the library's speaks to origins only), with the same TLS
            context and limits.
    """
    tls = ssl_context if ssl_context is not None else default_tls_context()
    limits = httpx.Limits(max_connections=max_connections,
                          max_keepalive_connections=max_keepalive,
                          keepalive_expiry=keepalive_expiry)
    return httpx.AsyncClient(
        transport=Http11Transport(limits, tls),
        mounts=_proxy_mounts(tls, limits) if trust_env else None,
        trust_env=trust_env, follow_redirects=False, timeout=None,
    )


def _proxy_mounts(tls: ssl.SSLContext,
                  limits: httpx.Limits) -> dict[str, httpx.AsyncBaseTransport | None]:
    """The transports the environment's proxies call for, by httpx's URL pattern, as httpx
    mounts them for a client built without a transport: ``HTTP_PROXY``, ``HTTPS_PROXY`` and
    ``ALL_PROXY`` on httpx's own transport (``http://`` assumed when the value names no
    scheme), and each ``NO_PROXY`` host on the client's transport (``None``), as curl reads
    ``NO_PROXY`` (``*`` turns every proxy off). Given a transport, httpx mounts none itself."""
    found = urllib.request.getproxies()
    bypassed = [host.strip() for host in found.get("no", "").split(",")]
    if "*" in bypassed:
        return {}
    mounts: dict[str, httpx.AsyncBaseTransport | None] = {}
    for scheme in ("http", "https", "all"):
        proxy = found.get(scheme)
        if proxy:
            mounts[f"{scheme}://"] = httpx.AsyncHTTPTransport(
                proxy=proxy if "://" in proxy else f"http://{proxy}", verify=tls, limits=limits)
    for host in filter(None, bypassed):
        mounts[_bypass_pattern(host)] = None
    return mounts


def _bypass_pattern(host: str) -> str:
    """httpx's URL pattern of one ``NO_PROXY`` entry: a pattern as given, an IP address (or
    network) or ``localhost`` exactly, a name with its subdomains (``example.com``:
    ``*example.com``)."""
    if "://" in host:
        return host
    if host.lower() == "localhost":
        return f"all://{host}"
    try:
        address = ipaddress.ip_address(host.split("/")[0])
    except ValueError:
        return f"all://*{host}"
    return f"all://[{host}]" if address.version == 6 else f"all://{host}"
