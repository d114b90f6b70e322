"""The anyio driver: one ``HTTPRequest`` sent through httpx, its body run through a pipeline.

Theory of operation (design sketch, "How the anyio driver composes them over httpx"):

1. ``open_stream`` sends the request with ``follow_redirects=False`` on that request, whatever
   the client's default (08 D16). No response (connect failure, protocol error before the
   headers) is ``ProviderConnectionError``, chained from the transport exception (08 D19).
2. A non-2xx status (3xx included) reads a bounded preview of the body and raises what
   ``error_for_status(status, headers, preview)`` builds: by default ``ProviderHTTPError``
   from the provider's JSON error body (OpenAI, Anthropic and Google shapes).
3. Otherwise it yields an async iterator that feeds every body chunk (read from the
   transport's own stream, and decoded when the body has a ``Content-Encoding``, below)
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

Content codings (08 D18) are decoded in bounded steps by ``mmsp_io._decoding``, on every
transport; the four named timeouts (08 D22) are enforced by ``mmsp_io._deadlines``, whose
module doc says which limit bounds which wait; the error of a non-2xx answer is built by
``mmsp_io._status``. A ``tap`` (a cassette's recording, ``mmsp_io._cassettes``) is handed the
transport's raw chunks before any decoding and gives the chunks to read; without one nothing
is wrapped.

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
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Final, TypeAlias, final

import anyio
import httpx

from mmsp_core.errors import (
    IncompleteStreamError,
    MalformedEventError,
    MMSPError,
    ProviderConnectionError,
    StreamLimitError,
    StreamTimeoutError,
)
from mmsp_core.model import UniEvent
from mmsp_core.pipeline import END, NEED_DATA, StreamPipeline
from mmsp_core.request import HTTPRequest

from ._deadlines import Deadlines, Timeouts, http_timeout, read_timeout, tighter
from ._decoding import ACCEPT_ENCODING, BODY_CUT, decoded_chunks, refuse_coding
from ._status import ErrorForStatus, raise_for_status
from ._transport import BODY_EXTENSION, ResponseBody

__all__ = ["ErrorForStatus", "Timeouts", "fetch_body", "open_stream"]

#: Closing a response drops its connection; this bounds it should the transport hang.
_CLOSE_SECONDS: Final = 5.0

#: Response extensions of the transports known to bound every socket read by the request's
#: read timeout: httpcore's (httpx's own transport) and the library's.
_TRUSTED_EXTENSIONS: Final = ("network_stream", BODY_EXTENSION)

#: Given a response and the transport's raw body chunks, the chunks to read instead
#: (``open_stream``; a cassette's recording, ``mmsp_io._cassettes``).
Tap: TypeAlias = Callable[[httpx.Response, AsyncIterator[bytes]], AsyncIterator[bytes]]

#: The parsed form of each URL a request went to: httpx parses a URL given as text on every
#: request (about 20 µs), and a client sends most of its requests to one or two.
_parsed_url: Final = functools.lru_cache(maxsize=64)(httpx.URL)


async def _send(
    http_client: httpx.AsyncClient,
    request: httpx.Request,
    deadlines: Deadlines,
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
        seconds = tighter(deadlines.timeouts.connect, http_client.timeout.connect)
        raise StreamTimeoutError(client, "connect", seconds or math.inf) from exc
    except httpx.ReadTimeout as exc:
        raise read_timeout(client, request) from exc
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
    started: float | None = None, tap: Tap | None = None,
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
            ``(status, headers, body_preview)``; ``_status.provider_http_error`` when ``None``.
        started: when the call began (``anyio.current_time()``), for a caller that retries:
            ``total`` counts from there (08 D60); ``None`` means now.
        tap: the chunks to read instead of the raw ones (``Tap``: a cassette's recording).

    Raises:
        ProviderConnectionError: no response, or one in a content coding not decoded (08 D19,
            ``mmsp_io._decoding``).
        ProviderHTTPError: a non-2xx answer (or what ``error_for_status`` builds).
        StreamTimeoutError: a named timeout expired (08 D22).
        MMSPError: whatever the pipeline raises, in stream order; ``IncompleteStreamError``
            after a cut body is chained from the transport exception (08 D19).
    """
    deadlines = Deadlines.starting(client, timeouts, started)
    http_request = http_client.build_request(
        request.method, _parsed_url(url), headers=request.headers, content=request.body or None,
        timeout=http_timeout(http_client, timeouts),
    )
    http_request.headers["accept-encoding"] = ACCEPT_ENCODING
    response = await _send(http_client, http_request, deadlines, follow_redirects=False)
    # After the first event only ``idle`` and ``total`` can expire. With no ``total``, and
    # ``idle`` enforced by the transport itself (or unset), a read needs no scope of ours.
    unguarded = timeouts.total is None and (
        timeouts.idle is None or _hand_idle_to(response, http_request, timeouts.idle))
    raw, chunks = _body_chunks(response, tap)
    try:
        await raise_for_status(response, chunks, deadlines, error_for_status)
        refuse_coding(chunks, client)
        body = _Body(response, raw, chunks, pipeline, deadlines, http_request)
        events = _events(body, unguarded)
        try:
            yield events
        finally:
            await events.aclose()
    finally:
        await _close(response, raw)


def _body_chunks(
    response: httpx.Response, tap: Tap | None = None
) -> tuple[AsyncIterator[bytes], AsyncIterator[bytes]]:
    """The transport's own iterator of ``response``'s raw body, and the chunks to read: the
    same (or what ``tap`` makes of them), or decoded from them when the body has a
    ``Content-Encoding`` (``mmsp_io._decoding``).

    The library's transport puts its iterator in the response's extensions
    (``BODY_EXTENSION``: no generator layer at all); any other transport's is the response's
    own stream (what ``aiter_raw`` reads, without its chunker). ``_close`` closes the response.
    """
    raw: AsyncIterator[bytes] | None = response.extensions.get(BODY_EXTENSION)
    if raw is None:
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)  # as httpx's AsyncClient ensures
        raw = stream.__aiter__()
    read = raw if tap is None else tap(response, raw)
    return raw, decoded_chunks(read, response.headers.get("content-encoding"))


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
    request.extensions["timeout"] = {**timeout, "read": tighter(idle, timeout["read"])}
    return True


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
    when ``unguarded`` is false (module doc, "Deadlines that cost nothing per chunk").

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
        deadlines: Deadlines,
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
                raise read_timeout(self.deadlines.client, self.request) from exc
            except BODY_CUT as exc:
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
    method: str = "GET",
    content: bytes | None = None,
) -> tuple[bytes, httpx.Headers]:
    """``GET`` (or ``method`` with ``content``) a whole body of at most ``limit`` bytes, under
    the same timeouts as a stream.

    Used for ``list_models`` (authenticated, so never redirected, 08 D16), for remote images
    (no credentials, so redirects may be followed, 08 D37) and for Vertex AI's token exchange
    (a ``POST``, 08 D72). ``started`` is as for ``open_stream``.

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
    deadlines = Deadlines.starting(client, timeouts, started)
    request = http_client.build_request(method, url, headers=headers, content=content,
                                        timeout=http_timeout(http_client, timeouts))
    request.headers["accept-encoding"] = ACCEPT_ENCODING
    response = await _send(http_client, request, deadlines, follow_redirects=follow_redirects)
    raw, chunks = _body_chunks(response)
    try:
        await raise_for_status(response, chunks, deadlines, error_for_status)
        refuse_coding(chunks, client)
        body = bytearray()
        while True:
            try:
                chunk = await deadlines.guarded(chunks.__anext__(), idle=True)
            except StopAsyncIteration:
                return bytes(body), response.headers
            except httpx.ReadTimeout as exc:
                raise read_timeout(client, request) from exc
            except BODY_CUT as exc:
                raise ProviderConnectionError(client, str(exc) or type(exc).__name__) from exc
            body += chunk
            if len(body) > limit:
                raise StreamLimitError("response body", limit, len(body))
    finally:
        await _close(response, raw)

