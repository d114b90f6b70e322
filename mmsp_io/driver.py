"""The anyio driver: one ``HTTPRequest`` sent through httpx, its body run through a pipeline.

Theory of operation (design sketch, "How the anyio driver composes them over httpx"):

1. ``open_stream`` sends the request with ``follow_redirects=False`` on that request, whatever
   the client's default (08 D16). No response (connect failure, protocol error before the
   headers) is ``ProviderConnectionError``, chained from the transport exception (08 D19).
2. A non-2xx status (3xx included) reads a bounded preview of the body and raises what
   ``error_for_status(status, headers, preview)`` builds: by default ``ProviderHTTPError``
   from the provider's JSON error body (OpenAI, Anthropic and Google shapes).
3. Otherwise it yields an async iterator that feeds every body chunk (read from the
   transport's own stream, and decoded here when the body has a ``Content-Encoding``, below)
   to ``pipeline.receive_data`` and hands out ``pipeline.next_event()`` until ``NEED_DATA``;
   at the end of the body it calls ``receive_eof`` and drains until ``END``.
   Once the pipeline has seen its protocol's terminal event (``pipeline.finished``:
   ``message_stop``, ``data: [DONE]``, ``response.completed``), nothing more is read: the
   response is closed at once, releasing the connection, and the pipeline is drained the
   same way, so a server that keeps the socket open after the end of the stream costs
   nothing (08 D56).
4. A body cut mid-stream (``httpx.RemoteProtocolError``, ``ReadError``, ...) is treated as the
   end of the body: the pipeline's end-of-input path decides. If usage and finish reason had
   arrived the stream ends with its stop; otherwise the finalizer's ``IncompleteStreamError``
   is raised chained from the transport exception (08 D19). A one-JSON-body answer (embeddings)
   cut short is no JSON, so its ``MalformedEventError`` becomes that ``IncompleteStreamError``.
5. Leaving the context closes the response at once. A body read through httpx's chain of
   nested async generators is first run to its end under a cancelled scope: closing only the
   outermost leaves the inner ones to the garbage collector, which trio reports as a
   ``ResourceWarning`` for each. The library's own transport hands over an iterator that is no
   generator (``mmsp_io._transport``), which closing the response closes.

Content codings (08 D18): a body with a ``Content-Encoding`` is decoded here, in one place
for every transport (a caller's ``http_client`` and the MMSP server's upstream clients
included); httpx's content decoder is never used, as it inflates each read whole and nested
codings one into the other (592 bytes of ``gzip, gzip`` became 2.58 GB). The transport's raw
chunks go through a zlib decompressor in steps of at most ``DECODED_STEP`` decoded bytes, each
handed on (to the pipeline, ``fetch_body``'s body or the error preview) before the next is
decoded, so the limits of a body count decoded bytes (the SSE decoder's line and event, a
one-body decoder's body, ``fetch_body``'s ``limit``) and a decompression bomb meets them, with
their ``StreamLimitError``, while memory holds one step of it. Requests ask for what is decoded
(``Accept-Encoding: gzip, deflate``, over the client's own list): one coding, ``gzip`` or
``deflate`` (zlib's format, or raw deflate as some servers send it). An answer in any other
coding, or in several (``gzip, gzip``), cannot be read: ``ProviderConnectionError`` once its
status is known to be 2xx (08 D19: no usable response came, as when the transport refuses a
head; ``MalformedEventError`` names an event, and no event was read). A compressed stream that
breaks, ends before its end (a gzip body cut short) or has bytes after it is a cut body
(step 4). A body without ``Content-Encoding``, the common case, goes from the transport to the
pipeline with nothing in between.

Timeouts (08 D22): every wait runs inside one ``anyio.CancelScope`` whose deadline is the
earliest of the limits that apply to it: ``total`` (from the start of ``open_stream``),
``first_event`` (from the start until the first public event is handed out) and, for reads of
the body, ``idle`` (a fresh allowance for each read, so the gap measured is the provider's, not
the time the caller spent holding an event; keep-alive comments are bytes, so they count).
``connect`` is httpx's connect (and pool) timeout of this request. The caller's own
``httpx.AsyncClient`` keeps its timeout: its read timeout bounds every wait for bytes (it
reports as ``idle``), its write timeout stands, and its connect and pool timeouts meet
``connect``; where both apply the tighter wins (08 D62). Expiry raises
``StreamTimeoutError(client, which, seconds)``. No scope is held across a ``yield``, so the
iterator is safe to abandon and runs unchanged under asyncio and trio.

Deadlines that cost nothing per chunk: after the first event only ``idle`` and ``total`` can
expire. When ``total`` is unset and the response came from httpx's own transport (httpcore's,
whose response carries the ``network_stream`` extension) or from the library's
(``mmsp_io._transport``, ``BODY_EXTENSION``), ``idle`` is handed to httpx's read timeout of the
body (the tighter of it and the caller's), which both apply to every socket read anyway, and
the reads after the first event run under no scope of ours: an expiry is the same
``StreamTimeoutError("idle", seconds)``. The reads before the first event then share one scope
(``first_event``, the only limit left to them) instead of one each. The response headers
arrive before the handover, so ``idle`` never bounds the wait for them. The response tells
which transport carried it, so no lookup of the client's transports is made (08 D79). Any
other transport (``MockTransport``, a caller's custom one) is not known to honour read
timeouts and keeps the per-read deadline.
"""

from __future__ import annotations

import functools
import math
import time
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final, TypeVar, final

import anyio
import attrs
import httpx

import adapters
from mmsp_core.errors import (
    IncompleteStreamError,
    MalformedEventError,
    MMSPError,
    ProviderConnectionError,
    ProviderHTTPError,
    StreamLimitError,
    StreamTimeoutError,
)
from mmsp_core.model import UniEvent
from mmsp_core.pipeline import END, NEED_DATA, StreamPipeline
from mmsp_core.request import HTTPRequest

from ._transport import BODY_EXTENSION, ResponseBody

__all__ = [
    "ACCEPT_ENCODING",
    "DECODED_STEP",
    "ERROR_PREVIEW_BYTES",
    "ErrorForStatus",
    "Timeouts",
    "fetch_body",
    "open_stream",
    "provider_http_error",
]

#: How much of a non-2xx body is read for the error (08 D18: every buffer is bounded).
ERROR_PREVIEW_BYTES: Final = 64 * 1024

#: Builds the exception of a non-2xx answer from its status, headers and body preview (09).
#: ``headers`` is case-insensitive (an ``httpx.Headers``).
ErrorForStatus = Callable[[int, Mapping[str, str], bytes], BaseException]

#: The content codings decoded (module doc, "Content codings"), as requests ask for them.
ACCEPT_ENCODING: Final = "gzip, deflate"
#: The most decoded bytes one step of a content decoder hands out.
DECODED_STEP: Final = 64 * 1024
#: zlib's window bits for each content coding decoded: the gzip format, the zlib format.
_WINDOW_BITS: Final = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS,
                       "deflate": zlib.MAX_WBITS}

#: Transport failures httpx raises; while reading a body they mean "the body was cut".
_TRANSPORT_ERRORS: Final = (httpx.TransportError, httpx.DecodingError)

#: Closing a response drops its connection; this bounds it should the transport hang.
_CLOSE_SECONDS: Final = 5.0

_T = TypeVar("_T")

#: Response extensions of the transports known to bound every socket read by the request's
#: read timeout: httpcore's (httpx's own transport) and the library's.
_TRUSTED_EXTENSIONS: Final = ("network_stream", BODY_EXTENSION)


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
class _Deadlines:
    """The clock of one call: which limit applies to the next wait, and when it expires."""

    client: str
    timeouts: Timeouts
    #: When the call started: ``total`` counts from here, across retries (08 D60).
    started: float = attrs.field(factory=anyio.current_time)
    first_event_seen: bool = False

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


#: The parsed form of each URL a request went to: httpx parses a URL given as text on every
#: request (about 20 µs), and a client sends most of its requests to one or two.
_parsed_url: Final = functools.lru_cache(maxsize=64)(httpx.URL)


def _tighter(mine: float | None, theirs: float | None) -> float | None:
    return theirs if mine is None else mine if theirs is None else min(mine, theirs)


def _http_timeout(http_client: httpx.AsyncClient, timeouts: Timeouts) -> httpx.Timeout:
    """httpx's timeouts for one request: the client's own, with ``connect`` on top of its
    connect and pool timeouts, the tighter winning (08 D62, module doc)."""
    given = http_client.timeout
    return httpx.Timeout(
        connect=_tighter(timeouts.connect, given.connect),
        read=given.read,
        write=given.write,
        pool=_tighter(timeouts.connect, given.pool),
    )


def _read_timeout(client: str, request: httpx.Request) -> StreamTimeoutError:
    """The error of httpx's read timeout of ``request`` (the caller's, or ``idle`` handed to
    the transport): a wait for bytes that was too long (``idle``)."""
    return StreamTimeoutError(client, "idle", request.extensions["timeout"]["read"] or math.inf)


async def _send(
    http_client: httpx.AsyncClient,
    request: httpx.Request,
    deadlines: _Deadlines,
    *,
    follow_redirects: bool,
) -> httpx.Response:
    """Send ``request`` and wait for the response headers.

    Raises:
        StreamTimeoutError: connecting took longer than ``connect``, or the headers did not
            come within ``first_event`` / ``total``.
        ProviderConnectionError: no response (chained from the transport exception), also when
            the transport let its HTTP parser's ``ValueError`` through: httpcore maps only
            h11's ``RemoteProtocolError`` (h11 0.14 raised a ``ValueError`` on a 5,000-digit
            ``Content-Length``); the library's transport maps whatever h11 raises.
    """
    client = deadlines.client
    try:
        return await deadlines.guarded(
            http_client.send(request, stream=True, follow_redirects=follow_redirects), idle=False
        )
    except (httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
        seconds = _tighter(deadlines.timeouts.connect, http_client.timeout.connect)
        raise StreamTimeoutError(client, "connect", seconds or math.inf) from exc
    except httpx.ReadTimeout as exc:
        raise _read_timeout(client, request) from exc
    except httpx.RequestError as exc:
        raise ProviderConnectionError(client, str(exc) or type(exc).__name__) from exc
    except MMSPError:  # StreamTimeoutError is a ValueError too
        raise
    except ValueError as exc:
        raise ProviderConnectionError(
            client, f"the response head could not be read: {str(exc) or type(exc).__name__}"
        ) from exc


async def _end_body(chunks: AsyncIterator[bytes]) -> None:
    """Run httpx's body iterator to its end without reading on (module doc, step 5).

    Each step runs under a cancelled scope, so the first wait for bytes ends the whole chain of
    generators with the cancellation; bytes httpx already holds are dropped.
    """
    with anyio.CancelScope(shield=True):
        with anyio.CancelScope() as scope:
            scope.cancel()
            try:
                while True:
                    await chunks.__anext__()
            except Exception:  # StopAsyncIteration or a cut: either way the chain ended
                pass


async def _read_bounded(chunks: AsyncIterator[bytes], deadlines: _Deadlines, limit: int) -> bytes:
    """Read at most ``limit`` bytes of the body; stop early, without error, on a cut."""
    body = bytearray()
    while len(body) < limit:
        try:
            chunk = await deadlines.guarded(chunks.__anext__(), idle=True)
        except (StopAsyncIteration, StreamTimeoutError, *_TRANSPORT_ERRORS):
            break
        body += chunk
    return bytes(body[:limit])


async def _raise_for_status(
    response: httpx.Response,
    chunks: AsyncIterator[bytes],
    deadlines: _Deadlines,
    error_for_status: ErrorForStatus | None,
) -> None:
    """Raise the error of a non-2xx answer (3xx included: nothing is followed, 08 D16, D19)."""
    if 200 <= response.status_code < 300:
        return
    body = await _read_bounded(chunks, deadlines, ERROR_PREVIEW_BYTES)
    build = error_for_status or functools.partial(provider_http_error, deadlines.client)
    raise build(response.status_code, response.headers, body)


@asynccontextmanager
async def open_stream(
    http_client: httpx.AsyncClient,
    url: str,
    request: HTTPRequest,
    pipeline: StreamPipeline,
    *,
    client: str,
    timeouts: Timeouts,
    error_for_status: ErrorForStatus | None = None,
    started: float | None = None,
) -> AsyncIterator[AsyncIterator[UniEvent]]:
    """Send ``request`` to ``url`` and stream the public events of its body (09).

    ``request.headers`` must already hold the credentials. The request never follows a
    redirect, whatever ``http_client``'s default (08 D16). The iterator is valid only inside
    the ``async with``; leaving it closes the response at once.

    Args:
        http_client: used as given (its pool, proxies and TLS settings).
        url: the base URL joined with ``request.path``.
        pipeline: a fresh pipeline for this response.
        client: the client type named in errors.
        timeouts: the four named timeouts (08 D22).
        error_for_status: builds the exception of a non-2xx answer from
            ``(status, headers, body_preview)``; ``provider_http_error`` when ``None``.
        started: when the call began (``anyio.current_time()``), for a caller that retries:
            ``total`` counts from there (08 D60); ``None`` means now.

    Raises:
        ProviderConnectionError: no response, or one in a content coding not decoded (08 D19,
            module doc).
        ProviderHTTPError: a non-2xx answer (or what ``error_for_status`` builds).
        StreamTimeoutError: a named timeout expired (08 D22).
        MMSPError: whatever the pipeline raises, in stream order; ``IncompleteStreamError``
            after a cut body is chained from the transport exception (08 D19).
    """
    deadlines = _deadlines(client, timeouts, started)
    http_request = http_client.build_request(
        request.method, _parsed_url(url), headers=request.headers, content=request.body or None,
        timeout=_http_timeout(http_client, timeouts),
    )
    http_request.headers["accept-encoding"] = ACCEPT_ENCODING
    response = await _send(http_client, http_request, deadlines, follow_redirects=False)
    # After the first event only ``idle`` and ``total`` can expire. With no ``total``, and
    # ``idle`` enforced by the transport itself (or unset), a read needs no scope of ours.
    unguarded = timeouts.total is None and (
        timeouts.idle is None or _hand_idle_to(response, http_request, timeouts.idle)
    )
    raw, chunks = _body_chunks(response)
    try:
        await _raise_for_status(response, chunks, deadlines, error_for_status)
        _refuse_coding(chunks, client)
        body = _Body(response, raw, chunks, pipeline, deadlines, http_request)
        events = _events(body, unguarded)
        try:
            yield events
        finally:
            await events.aclose()
    finally:
        await _close(response, raw)


def _body_chunks(response: httpx.Response) -> tuple[AsyncIterator[bytes], AsyncIterator[bytes]]:
    """The transport's own iterator of ``response``'s raw body, and the chunks to read: the
    same, or ``_Decoded`` from them when the body has a ``Content-Encoding`` (module doc).

    The library's transport puts its iterator in the response's extensions
    (``BODY_EXTENSION``: no generator layer at all); any other transport's is the response's
    own stream (what ``aiter_raw`` reads, without its chunker). ``_close`` closes the response.
    """
    raw: AsyncIterator[bytes] | None = response.extensions.get(BODY_EXTENSION)
    if raw is None:
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)  # as httpx's AsyncClient ensures
        raw = stream.__aiter__()
    header = response.headers.get("content-encoding")
    if header is None:
        return raw, raw
    tokens = (token.strip().lower() for token in header.split(","))
    coding = ", ".join(token for token in tokens if token not in ("", "identity"))
    return raw, (_Decoded(raw, coding) if coding else raw)


@final
class _Decoded:
    """The chunks of a body with a content coding, decoded in steps of at most
    ``DECODED_STEP`` bytes (module doc, "Content codings"), from the transport's ``raw`` ones.

    Attributes:
        raw: the transport's iterator of the raw body.
        refused: why the coding cannot be decoded (not ``gzip`` or ``deflate``, or several),
            ``None`` when it can.

    Raises (iterating):
        httpx.DecodingError: the coding is refused, or its compressed stream broke, ended
            before its end or has bytes after it (a cut body, module doc step 4).
        Whatever ``raw`` raises.
    """

    __slots__ = ("_coding", "_decompressor", "_fed", "_more", "_opening", "raw", "refused")

    def __init__(self, raw: AsyncIterator[bytes], coding: str) -> None:
        self.raw = raw
        self._coding = coding
        bits = _WINDOW_BITS.get(coding)
        self._decompressor = None if bits is None else zlib.decompressobj(bits)
        self.refused = None if bits is not None else (
            f"the answer's Content-Encoding is {coding!r}; only one of {ACCEPT_ENCODING} "
            "is read")
        #: Whether compressed bytes were given to the decompressor (an empty body is empty).
        self._fed = False
        #: A ``deflate`` body's first bytes while they are fewer than a zlib header's two:
        #: read again as raw deflate if zlib refuses the header; ``None`` once past it.
        self._opening: bytes | None = b"" if coding == "deflate" else None
        #: Whether the last step may have left decoded bytes to hand out before reading on.
        self._more = False

    def __aiter__(self) -> _Decoded:
        return self

    async def __anext__(self) -> bytes:
        while True:
            decompressor = self._decompressor
            if decompressor is None:
                raise httpx.DecodingError(str(self.refused))
            if self._more:  # what the last step left: no read
                data = decompressor.unconsumed_tail
            else:
                try:
                    data = await self.raw.__anext__()
                except StopAsyncIteration:
                    if self._fed and not decompressor.eof:
                        raise httpx.DecodingError(
                            f"the body ended inside its {self._coding} stream") from None
                    raise
                if not data:
                    continue
                if decompressor.eof:
                    raise httpx.DecodingError(f"bytes after the end of the {self._coding} "
                                              "stream")
            decoded = self._step(decompressor, data)
            if decoded:
                return decoded

    def _step(self, decompressor: zlib._Decompress, data: bytes) -> bytes:
        """At most ``DECODED_STEP`` bytes decoded from ``data`` (``b""`` when they only
        complete what came before); a ``deflate`` body that does not start with a zlib header
        is read again as raw deflate, as some servers send it (and httpx reads it).

        Raises:
            httpx.DecodingError: the compressed stream is broken, or bytes follow its end.
        """
        self._fed = True
        opening = self._opening
        try:
            decoded = decompressor.decompress(data, DECODED_STEP)
        except zlib.error as exc:
            if opening is None:
                raise httpx.DecodingError(f"the {self._coding} stream is broken: {exc}") from exc
            self._opening = None
            self._decompressor = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._step(self._decompressor, opening + data)
        if opening is not None:
            opening += data
            self._opening = opening if len(opening) < 2 else None
        if decompressor.unused_data:
            raise httpx.DecodingError(f"bytes after the end of the {self._coding} stream")
        self._more = not decompressor.eof and (
            len(decoded) == DECODED_STEP or bool(decompressor.unconsumed_tail))
        return decoded


def _hand_idle_to(response: httpx.Response, request: httpx.Request, idle: float) -> bool:
    """Make ``idle`` the read timeout of ``request``'s body, when ``response`` came from
    httpx's own transport or the library's (``Http11Transport``), each of which bounds every
    read of the socket by it (told by the response's extensions); say whether it did.

    The response headers have already arrived under the caller's own read timeout: both
    transports read the timeout again when the body starts, so only the body's reads get the
    tighter of the two (08 D22, D62). Any other transport (``MockTransport``, a custom one) is
    not trusted to honour it and keeps the per-read deadline.
    """
    extensions = response.extensions
    if not any(name in extensions for name in _TRUSTED_EXTENSIONS):
        return False
    timeout = request.extensions["timeout"]
    request.extensions["timeout"] = {**timeout, "read": _tighter(idle, timeout["read"])}
    return True


def _deadlines(client: str, timeouts: Timeouts, started: float | None) -> _Deadlines:
    if started is None:
        return _Deadlines(client, timeouts)
    return _Deadlines(client, timeouts, started)


def _refuse_coding(chunks: AsyncIterator[bytes], client: str) -> None:
    """Refuse a body in a content coding that is not decoded (module doc, "Content codings").

    Raises:
        ProviderConnectionError: ``chunks`` are ``_Decoded`` from a refused coding.
    """
    if isinstance(chunks, _Decoded) and chunks.refused is not None:
        raise ProviderConnectionError(client, chunks.refused)


async def _close(response: httpx.Response, raw: AsyncIterator[bytes]) -> None:
    """End the transport's body iterator ``raw`` and close ``response``, even inside a
    cancelled scope (the caller's cancellation or ours); closing twice does nothing more (a
    closed response's iterator was ended first, or ran to its end)."""
    if response.is_closed:
        return
    if isinstance(raw, AsyncGenerator):  # httpx's chain of generators (module doc, step 5)
        await _end_body(raw)
    with anyio.move_on_after(_CLOSE_SECONDS, shield=True):
        await response.aclose()


async def _events(body: _Body, unguarded: bool) -> AsyncGenerator[UniEvent, None]:
    """The public events of ``body``, steps 3 and 4 of the module doc.

    Until the first event every read runs under ``body.deadlines``: each read under its own scope,
    or, when ``unguarded`` (``idle`` is the transport's), every read before the first event
    under one scope, as only ``first_event`` can then expire. After it, reads are guarded only
    when ``unguarded`` is false (module doc, "Timeouts").

    Raises:
        StreamTimeoutError: a named timeout, or the caller's read timeout, expired.
        MMSPError: whatever the pipeline raises.
    """
    deadlines = body.deadlines
    if unguarded:
        event = await deadlines.guarded(body.next_event(guard=False), idle=False)
    else:
        event = await body.next_event(guard=True)
    while event is not None:
        deadlines.first_event_seen = True
        yield event
        event = await body.next_event(guard=not unguarded)


@final
class _Body:
    """The reading side of one response: its next public event, read on demand from
    ``chunks`` (the transport's ``raw`` ones, or decoded from them)."""

    __slots__ = ("chunks", "cut", "deadlines", "pipeline", "raw", "request", "response")

    def __init__(
        self,
        response: httpx.Response,
        raw: AsyncIterator[bytes],
        chunks: AsyncIterator[bytes],
        pipeline: StreamPipeline,
        deadlines: _Deadlines,
        request: httpx.Request,
    ) -> None:
        self.response = response
        self.raw = raw
        self.chunks = chunks
        self.pipeline = pipeline
        self.deadlines = deadlines
        self.request = request
        #: The transport failure that cut the body, once one did (step 4).
        self.cut: BaseException | None = None

    async def next_event(self, *, guard: bool) -> UniEvent | None:
        """The pipeline's next event, or ``None`` after the last, reading as long as it needs
        data (each read under ``deadlines`` when ``guard``).

        Raises:
            StreamTimeoutError: a guarded read, or the caller's read timeout, expired.
            IncompleteStreamError: a cut one-body answer (module doc, step 4).
            MMSPError: whatever the pipeline raises, chained from the cut if there was one.
        """
        pipeline = self.pipeline
        while True:
            try:
                event = pipeline.next_event()
            except MMSPError as exc:
                cut = self.cut
                if cut is None:
                    raise
                if isinstance(exc, MalformedEventError):
                    # An event-stream decoder drops an event a cut left unterminated; only a
                    # one-body decoder hands the machine what arrived, which is then no JSON:
                    # the answer was cut, not malformed (08 D19).
                    raise IncompleteStreamError(
                        exc.client, ("usage_metadata", "finish_reason"), None, None
                    ) from cut
                raise exc from cut
            if event is END:
                return None
            if event is not NEED_DATA:
                return event
            if pipeline.finished:  # the terminal event came (08 D56)
                if isinstance(self.raw, ResponseBody):  # its connection may be reused
                    self.raw.linger = True
                await _close(self.response, self.raw)
                pipeline.receive_eof()
                continue
            try:
                if guard:
                    chunk = await self.deadlines.guarded(self.chunks.__anext__(), idle=True)
                else:
                    chunk = await self.chunks.__anext__()
            except StopAsyncIteration:
                pipeline.receive_eof()
            except httpx.ReadTimeout as exc:
                raise _read_timeout(self.deadlines.client, self.request) from exc
            except _TRANSPORT_ERRORS as exc:
                self.cut = exc
                pipeline.receive_eof()
            else:
                pipeline.receive_data(chunk)


async def fetch_body(
    http_client: httpx.AsyncClient,
    url: str,
    *,
    client: str,
    timeouts: Timeouts,
    limit: int,
    headers: tuple[tuple[str, str], ...] = (),
    follow_redirects: bool = False,
    error_for_status: ErrorForStatus | None = None,
    started: float | None = None,
) -> tuple[bytes, httpx.Headers]:
    """``GET`` a whole body of at most ``limit`` bytes, under the same timeouts as a stream.

    Used for ``list_models`` (authenticated, so never redirected, 08 D16) and for remote images
    (no credentials, so redirects may be followed, 08 D37). ``started`` is as for
    ``open_stream``.

    Returns:
        The body and the response headers.

    Raises:
        ProviderConnectionError: no response, one in a content coding not decoded, or the
            body was cut.
        ProviderHTTPError: a non-2xx answer (or what ``error_for_status`` builds).
        StreamTimeoutError: a named timeout expired.
        StreamLimitError: the body, decoded, is longer than ``limit``
            (``what="response body"``).
    """
    deadlines = _deadlines(client, timeouts, started)
    request = http_client.build_request("GET", url, headers=headers,
                                        timeout=_http_timeout(http_client, timeouts))
    request.headers["accept-encoding"] = ACCEPT_ENCODING
    response = await _send(http_client, request, deadlines, follow_redirects=follow_redirects)
    raw, chunks = _body_chunks(response)
    try:
        await _raise_for_status(response, chunks, deadlines, error_for_status)
        _refuse_coding(chunks, client)
        body = bytearray()
        while True:
            try:
                chunk = await deadlines.guarded(chunks.__anext__(), idle=True)
            except StopAsyncIteration:
                return bytes(body), response.headers
            except httpx.ReadTimeout as exc:
                raise _read_timeout(client, request) from exc
            except _TRANSPORT_ERRORS as exc:
                raise ProviderConnectionError(client, str(exc) or type(exc).__name__) from exc
            body += chunk
            if len(body) > limit:
                raise StreamLimitError("response body", limit, len(body))
    finally:
        await _close(response, raw)


# --------------------------------------------------------------------------------------------
# Provider error bodies (08 D19)
# --------------------------------------------------------------------------------------------


def provider_http_error(
    client: str, status: int, headers: Mapping[str, str], body: bytes
) -> ProviderHTTPError:
    """Build the ``ProviderHTTPError`` of a non-2xx answer (08 D19): the pure
    ``adapters.provider_http_error`` at the current time.

    It reads the provider's JSON error body at the places its protocol's ``ErrorShape`` names
    (OpenAI, Anthropic and Google shapes, the plain ones of gateways); a body that is not
    JSON, however deeply nested, becomes a short preview of its text. The request id comes
    from the ``x-request-id`` / ``request-id`` / ``x-goog-request-id`` header or the body;
    ``retry_after`` from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date).
    """
    return adapters.provider_http_error(client, status, headers, body, now=time.time())
