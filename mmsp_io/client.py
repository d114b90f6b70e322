"""``AutoLLMClient``: one client for every client type, streaming through ``open_stream`` (09).

What happens on a call (spec 02 §8, 08 D20-D22, D24, D27, D37, D38, D47):

1. Preflight, before any I/O, on copies: dict messages are legacy-normalised and read
   (``adapters.coerce_messages``: ``InvalidMessageError`` chained from ``WireFormatError``),
   ``created_at`` is stamped from the real clock where missing, and a message without items is
   refused with ``InvalidMessageError(message_index=i)``.
2. An already aborted signal raises ``AbortedError`` without any request.
3. ``adapters.prepare`` resolves the client once and reads and checks the config (and the
   messages of step 1) into a ``CallPlan`` (08 D79); the ``trace_id`` is checked for
   containment (08 D24); the plan's ``image_urls`` are fetched, for the client types whose
   builder needs their bytes (08 D37); ``plan.request(images)`` builds the request and the
   credentials and ``default_headers`` are added to it.
4. The request is streamed through ``open_stream`` with a fresh pipeline
   (``plan.new_pipeline``). Connection
   failures, 429, 5xx and in-stream overload errors before the first event are
   retried up to ``max_retries`` times with jittered exponential backoff honouring
   ``Retry-After`` (08 D21); once an event has been yielded nothing is retried. ``total``
   counts from the start of the call, across every attempt and back-off sleep: a wait longer
   than what is left raises the last error at once, still ``retryable`` (08 D60). An error
   the client stopped retrying says in its ``detail`` how many attempts were made.
5. At the stop the assistant message is assembled from the done items, when a trace or the
   stateful history needs it (nothing is collected otherwise); the trace is written
   (a failure is a logged warning, 08 D27) and the stateful turn recorded, both before the
   stop is yielded (spec 02 §9).

The key-safety rule (spec 04 §3, 08 D16, D25): the environment's key goes only to the
environment's endpoint or the vendor default; a ``base_url`` given in code needs its
``api_key`` given in code (else ``ApiKeyRequiredError`` at construction). Keys never appear in
an exception message, a ``repr``, a log line or a trace file, neither whole nor as any run of
12 characters after its first 8 (08 D61): provider text that echoes a key is redacted from the
errors raised here (every field, ``args`` and the exception chain) after the pure layers built
and shortened it, which removes the pieces of a key that shortening cut as well.
"""

from __future__ import annotations

import base64
import copy
import functools
import json
import logging
import math
import os
import random
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, aclosing
from typing import Any, Final, cast

import anyio
import anyio.to_thread
import attrs
import httpx

import adapters
from adapters._json import nests_within
from adapters._preflight import MAX_DEPTH
from adapters.clients import (
    check_endpoint,
    client_spec,
    credentials,
    join_url,
    list_models_headers,
    list_models_path,
    parse_model_page,
    same_family,
)
from mmsp_core.errors import (
    AbortedError,
    ConcurrentCallError,
    InvalidMessageError,
    MalformedEventError,
    MMSPError,
    ProviderConnectionError,
    ProviderHTTPError,
    ProviderStreamError,
    StreamLimitError,
    StreamTimeoutError,
    UnsupportedParameterError,
    UpstreamError,
    preview,
    redact,
    redact_error,
)
from mmsp_core.messages import concat_uni_events_to_uni_message
from mmsp_core.model import UniConfig, UniEvent, UniMessage
from mmsp_core.request import HTTPRequest

from . import tracer
from ._transport import fast_http_client
from .abort import AbortSignal, abortable
from .driver import ErrorForStatus, Timeouts, fetch_body, open_stream
from .remote_images import IMAGE_LIMIT, RemoteImages, checked_client

__all__ = ["IMAGE_LIMIT", "AutoLLMClient"]

_logger = logging.getLogger("mmsp_io")

#: Redirects followed by one image fetch (each hop checked as the first, 08 D37).
_IMAGE_REDIRECTS: Final = 5
#: An image is read as sent: its length is what the limits count.
_IMAGE_HEADERS: Final = (("accept-encoding", "identity"),)
#: Why a remote image is refused when the client fetches none (``RemoteImages.enabled``).
_IMAGES_OFF: Final = (
    "remote images are not fetched here: send the image as a data: URI, or enable fetching "
    "(RemoteImages(enabled=True); on an MMSP server, remote_images.enabled in its configuration)"
)
#: The largest ``list_models`` page read, and how many pages are followed (spec 04 §5).
_MODEL_PAGE_LIMIT: Final = 16 * 1024 * 1024
_MAX_MODEL_PAGES: Final = 100
#: Backoff between retries (08 D21): ``base * 2**attempt`` seconds, capped, with jitter.
_RETRY_BASE: Final = 0.5
_RETRY_CAP: Final = 8.0
#: A provider asking to wait longer than this is not retried: the error goes to the caller.
_RETRY_AFTER_CAP: Final = 60.0
#: Values of ``MMSP_DEBUG`` that leave strict mode off (spec 02 §2.1).
_FALSE_WORDS: Final = frozenset({"", "0", "false", "no", "off"})


def _now_ms() -> int:
    """The real clock, Unix milliseconds (09)."""
    return time.time_ns() // 1_000_000


def _env(name: str) -> str | None:
    """An environment variable; an empty one counts as unset."""
    return os.environ.get(name) or None


def _debug_from_environment() -> bool:
    """``MMSP_DEBUG`` is on unless unset or one of ``""``, 0, false, no, off (02 §2.1)."""
    return os.environ.get("MMSP_DEBUG", "").strip().lower() not in _FALSE_WORDS


def _merge_headers(*layers: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Later layers replace earlier headers of the same name, case-insensitively."""
    merged: dict[str, tuple[str, str]] = {}
    for layer in layers:
        for name, value in layer:
            merged[name.lower()] = (name, value)
    return tuple(merged.values())


#: A host name or IPv4 address: letters, digits, ``-``, ``_`` and dots.
_HOST: Final = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?")


def _check_argument_types(
    http_client: object, timeouts: object, max_retries: object, default_headers: object
) -> None:
    """Refuse constructor arguments of the wrong Python type with a clear message (08 D69).

    Raises:
        TypeError: the argument named in the message has the wrong type.
        ValueError: a negative ``max_retries``.
    """
    def wrong(name: str, expected: str, value: object) -> TypeError:
        return TypeError(f"{name} must be {expected}, not {type(value).__name__}")

    if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
        raise wrong("http_client", "an httpx.AsyncClient (or None)", http_client)
    if timeouts is not None and not isinstance(timeouts, Timeouts):
        raise wrong("timeouts", "a mmsp_io.Timeouts (or None)", timeouts)
    if not isinstance(max_retries, int) or isinstance(max_retries, bool):
        raise wrong("max_retries", "an int", max_retries)
    if max_retries < 0:
        raise ValueError("max_retries must be 0 or more")
    if default_headers is not None:
        if not isinstance(default_headers, Mapping):
            raise wrong("default_headers", "a mapping of header names to values", default_headers)
        for name, value in default_headers.items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise TypeError(f"default_headers must map strings to strings, not "
                                f"{type(name).__name__} to {type(value).__name__}")


def _check_base_url(client_type: str, base_url: str, api_key: str | None) -> None:
    """Refuse a base URL no request can go to, before any request (08 D69).

    It must be ``http`` or ``https`` with a host (a name, an IPv4 address or a bracketed IPv6
    address) and, if it names one, a port from 1 to 65535.

    Raises:
        UnsupportedParameterError: ``parameter="base_url"``, the reason in ``detail`` (the URL
            shortened, and the key redacted should the URL hold it).
    """
    def refuse(reason: str) -> UnsupportedParameterError:
        shown = redact(preview(base_url), api_key or "")
        return UnsupportedParameterError(client_type, "base_url",
                                         detail=f"{reason}: {shown!r}")

    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL as exc:
        raise refuse(f"not a URL ({exc})") from None
    if url.scheme not in ("http", "https"):
        raise refuse("the base URL must start with http:// or https://")
    host = url.host
    if not host:
        raise refuse("the base URL has no host")
    if ":" not in host and not _HOST.fullmatch(host):  # an IPv6 address was parsed by httpx
        raise refuse("the host is not a host name or an IP address")
    if url.port is not None and not 1 <= url.port <= 65535:
        raise refuse(f"the port {url.port} is outside 1-65535")


def _retry_delay(attempt: int, exc: MMSPError) -> float | str:
    """Seconds to wait before retry ``attempt + 1``, or why there is no retry (08 D21).

    Retried before the first event only: connection failures, HTTP 408/409/429/5xx and
    in-stream overload or rate-limit errors (their ``retryable``). A ``Retry-After`` is
    honoured; one longer than a minute ends the retries.
    """
    retry_after: float | None = exc.retry_after if isinstance(exc, ProviderHTTPError) else None
    if retry_after is not None:
        if retry_after > _RETRY_AFTER_CAP:
            return f"the provider asked to wait {retry_after:g} s"
        return retry_after
    return random.uniform(0.5, 1.0) * min(_RETRY_CAP, _RETRY_BASE * 2.0**attempt)


async def _each_abortable(
    events: AsyncIterator[UniEvent], signal: AbortSignal, client: str
) -> AsyncGenerator[UniEvent, None]:
    """``events``, each wait for the next one under ``abortable(signal)`` (none across a
    ``yield``).

    Raises:
        AbortedError: the signal was aborted before or during a wait.
    """
    while True:
        with abortable(signal, client):
            event = await anext(events, None)
        if event is None:
            return
        yield event


def _retried(exc: MMSPError) -> bool:
    """Whether the client retries ``exc`` when it comes before the first event (08 D21)."""
    return isinstance(
        exc, ProviderConnectionError | ProviderHTTPError | ProviderStreamError
    ) and exc.retryable


def _gave_up(exc: MMSPError, attempts: int, why: str) -> None:
    """Say in ``exc.detail`` how many attempts were made and why there was no other."""
    note = f"gave up after {attempts} attempt{'s' if attempts != 1 else ''}: {why}"
    exc.detail = f"{exc.detail}; {note}" if exc.detail else note


def _upstream_http_error(
    client: str, status: int, headers: Mapping[str, str], body: bytes
) -> UpstreamError:
    """A gateway's refusal as its own ``UpstreamError`` (spec 03 §5, 08 D13): the MMSP
    server's ``{"error": {...}}`` object as it is, or a stand-in for a body without one (or
    with one nested too deeply for the key redaction to walk, 08 D61)."""
    text = body.decode("utf-8", "replace")
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to read (08 D59)
        document = None
    error = document.get("error") if isinstance(document, dict) else None
    if not isinstance(error, dict) or not nests_within(error, MAX_DEPTH):
        error = {"type": "HTTPError", "message": f"HTTP {status}: {text[:200]}"}
    error_type = error.get("type")
    return UpstreamError(client, status, error_type if isinstance(error_type, str) else None,
                         error)


class _Redirect(Exception):
    """A redirect answered to an image fetch: the next hop (``_image_answer``)."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


class _Refused(Exception):
    """Another non-2xx answer to an image fetch; only its status is told (08 D37)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def _image_answer(status: int, headers: Mapping[str, str], body: bytes) -> Exception:
    """The exception of a non-2xx answer to an image fetch (``fetch_body``'s
    ``error_for_status``): a redirect to follow, else the status alone; the body is never
    shown."""
    location = headers.get("location")
    if 300 <= status < 400 and location:
        return _Redirect(location)
    return _Refused(status)


def _size(count: int) -> str:
    """A byte count as people read it: whole MiB, else bytes."""
    mib = 1024 * 1024
    return f"{count // mib} MiB" if count % mib == 0 else f"{count:,} bytes"


@attrs.frozen
class _Call:
    """One call, ready to send: what preflight decided (spec 02 §8)."""

    plan: adapters.CallPlan
    request: HTTPRequest
    url: str
    timeouts: Timeouts


@attrs.define(eq=False)
class _StatefulCall:
    """The stateful call in flight; an aborted one does not block the next (spec 02 §9)."""

    signal: AbortSignal | None

    @property
    def blocking(self) -> bool:
        return self.signal is None or not self.signal.aborted


class AutoLLMClient:
    """Stream a model of any supported client type (spec 04, 09).

    Args:
        model: the model id, sent exactly as given.
        api_key: the key; else ``<P>_API_KEY`` under the key-safety rule (spec 04 §3).
        base_url: the endpoint; else ``<P>_BASE_URL``, else the client's default.
        client_type: the client type or alias; else ``CLIENT_TYPE``, else routed by model id.
        default_headers: sent with every request; they win over every header the client sets,
            credentials included, except on ``mmsp`` whose key overrides ``Authorization``.
        http_client: an ``httpx.AsyncClient`` used as given and never closed here; without one
            the client makes its own (``fast_http_client()``), closed by ``aclose()`` /
            ``async with``.
        timeouts: the four named timeouts of every call (08 D22); a call may pass its own.
        max_retries: retries before the first event (08 D21).
        strict: unknown wire events raise ``UnknownEventError``; ``None`` reads ``MMSP_DEBUG``.
        trace_dir: where traces go; ``None`` means ``MMSP_CACHE_DIR`` or ``./cache``.
        remote_images: which http(s) images are fetched for a client type that sends images
            as bytes, and how many bytes (08 D37); ``None`` means ``RemoteImages()``: any host,
            at most ``IMAGE_LIMIT`` bytes an image.

    Raises:
        RoutingError: no client type can be chosen, or a service-account key on
            google-official.
        ApiKeyRequiredError: the client needs a key and has none it may use (08 D25).
        UnsupportedOperationError: a Bedrock endpoint, or a Vertex AI endpoint or key on a
            Gemini client (08 D23, D66).
        UnsupportedParameterError: ``parameter="base_url"`` for a base URL no request can go
            to: not http(s), no host or a malformed one, a port outside 1-65535 (08 D69;
            checked after the Bedrock and Vertex rules).
        TypeError: ``http_client`` is not an ``httpx.AsyncClient``, ``timeouts`` not a
            ``Timeouts``, ``max_retries`` not an int, ``default_headers`` not a mapping of
            strings (08 D69), ``remote_images`` not a ``RemoteImages``.
        ValueError: a negative ``max_retries``.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client_type: str | None = None,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeouts: Timeouts | None = None,
        max_retries: int = 2,
        strict: bool | None = None,
        trace_dir: str | os.PathLike[str] | None = None,
        remote_images: RemoteImages | None = None,
    ) -> None:
        _check_argument_types(http_client, timeouts, max_retries, default_headers)
        if remote_images is not None and not isinstance(remote_images, RemoteImages):
            raise TypeError(f"remote_images must be a mmsp_io.RemoteImages (or None), not "
                            f"{type(remote_images).__name__}")
        named = client_type or _env("CLIENT_TYPE")
        self._model = model
        self._client_type = adapters.route(model, named)
        self._named = named is not None
        spec = client_spec(self._client_type)
        # The key-safety rule of spec 04 §3 (08 D25), given the environment.
        self._api_key, self._base_url = credentials(
            self._client_type, api_key or None, base_url or None, os.environ
        )
        check_endpoint(self._client_type, model, self._base_url, self._api_key)
        _check_base_url(self._client_type, self._base_url, self._api_key)
        self._auth = adapters.auth_headers(self._client_type, self._api_key)
        self._default_headers = tuple((default_headers or {}).items())
        self._traits = adapters.protocol_traits(spec.speaks(model)[0])
        self._error_for_status: ErrorForStatus | None = (
            functools.partial(_upstream_http_error, self._client_type)
            if self._traits.upstream_errors else None
        )
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else fast_http_client()
        self._timeouts = timeouts if timeouts is not None else Timeouts()
        self._max_retries = max_retries
        self._strict = strict if strict is not None else _debug_from_environment()
        self._trace_root = tracer.trace_dir(trace_dir)
        self._remote_images = remote_images if remote_images is not None else RemoteImages()
        self._history: list[UniMessage] = []
        self._in_flight: _StatefulCall | None = None

    def __repr__(self) -> str:
        return (f"AutoLLMClient(model={self._model!r}, client_type={self._client_type!r}, "
                f"base_url={self._base_url!r})")

    @property
    def model(self) -> str:
        """The model id."""
        return self._model

    @property
    def client_type(self) -> str:
        """The client type the model was routed to (spec 04 §2)."""
        return self._client_type

    @property
    def base_url(self) -> str:
        """The endpoint requests go to."""
        return self._base_url

    async def aclose(self) -> None:
        """Close the client's own HTTP client (a caller's ``http_client`` is left open)."""
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AutoLLMClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- history (spec 02 §9) ----------------------------------------------------------------

    def get_history(self) -> list[UniMessage]:
        """A deep copy of the stateful history."""
        return copy.deepcopy(self._history)

    def set_history(self, history: Sequence[UniMessage | Mapping[str, Any]]) -> None:
        """Replace the history with a deep copy of ``history``, legacy-normalised.

        Raises:
            InvalidMessageError: a message that cannot be read (08 D47).
        """
        self._history = copy.deepcopy(adapters.coerce_messages(self._client_type, history))

    def clear_history(self) -> None:
        """Empty the history."""
        self._history = []

    # -- calls -------------------------------------------------------------------------------

    def streaming_response(
        self,
        messages: Sequence[UniMessage | Mapping[str, Any]],
        config: UniConfig | Mapping[str, Any] | None = None,
        signal: AbortSignal | None = None,
        *,
        timeouts: Timeouts | None = None,
    ) -> AsyncGenerator[UniEvent, None]:
        """Stream the public events of one request (spec 02; RFC-0003); ``config`` may be left
        out (no options).

        Closing the generator early closes the HTTP response at once. Nothing runs, the
        messages are not even read, until the generator is first iterated.

        Raises:
            InvalidMessageError: a message that cannot be read or sent (before any request).
            UnsupportedParameterError: a config value the client cannot send, or a
                ``trace_id`` outside the trace directory (before any request).
            AbortedError: ``signal`` was aborted (08 D20).
            ProviderHTTPError, ProviderConnectionError, StreamTimeoutError: after retries.
            MMSPError: whatever the stream raises (``IncompleteStreamError``, ...).
        """
        # The generator itself, not one wrapped in another: a layer less per event.
        return self._run(messages, config, signal, timeouts, prepare=True)

    async def streaming_response_stateful(
        self,
        message: UniMessage | Mapping[str, Any],
        config: UniConfig | Mapping[str, Any] | None = None,
        signal: AbortSignal | None = None,
        *,
        timeouts: Timeouts | None = None,
    ) -> AsyncGenerator[UniEvent, None]:
        """Stream ``history + [message]`` and record the turn before the stop (spec 02 §9).

        On any error, abort included, the history is left untouched.

        Raises:
            ConcurrentCallError: another stateful call of this client is in flight and not
                aborted.
            MMSPError: as ``streaming_response``.
        """
        if self._in_flight is not None and self._in_flight.blocking:
            raise ConcurrentCallError(self._client_type)
        call = _StatefulCall(signal)
        self._in_flight = call
        try:
            prepared = self._prepare([*self._history, message])
            user_message = prepared[-1]

            def record(assistant: UniMessage) -> None:
                try:
                    turn = copy.deepcopy([user_message, assistant])
                except RecursionError:
                    # A provider's value (tool-call arguments) nested too deeply to copy is
                    # malformed, as the pipeline says of one too deep to finalize (08 D59).
                    raise MalformedEventError(
                        self._client_type, "(the assistant message)",
                        detail="a value is nested too deeply to keep in the history",
                    ) from None
                self._history.extend(turn)
                self._in_flight = None

            run = self._run(prepared, config, signal, timeouts, on_stop=record)
            async with aclosing(run) as events:
                async for event in events:
                    yield event
        finally:
            if self._in_flight is call:
                self._in_flight = None

    def _prepare(self, messages: Sequence[UniMessage | Mapping[str, Any]]) -> list[UniMessage]:
        """Preflight steps 1-3 of spec 02 §8, on copies (08 D38, D47).

        Raises:
            InvalidMessageError: a message that cannot be read, or one without items.
        """
        now = _now_ms()
        prepared = []
        for index, message in enumerate(adapters.coerce_messages(self._client_type, messages)):
            if not message.content_items and self._traits.base_preflight:
                raise InvalidMessageError(self._client_type, None, index,
                                          detail="the message has no content items")
            if message.created_at is None:
                message = attrs.evolve(message, created_at=now)
            prepared.append(message)
        return prepared

    async def _run(
        self,
        given: Sequence[UniMessage | Mapping[str, Any]],
        config: UniConfig | Mapping[str, Any] | None,
        signal: AbortSignal | None,
        timeouts: Timeouts | None,
        *,
        prepare: bool = False,
        on_stop: Callable[[UniMessage], None] | None = None,
    ) -> AsyncGenerator[UniEvent, None]:
        """Steps 2-5 of the module doc, over ``given`` messages already prepared, or prepared
        here first (``prepare``)."""
        client = self._client_type
        messages = self._prepare(given) if prepare else cast("list[UniMessage]", given)
        started = anyio.current_time()
        try:
            call = await self._request(messages, config, signal, timeouts, started)
            trace_id = call.plan.trace_id
            assembles = bool(trace_id) or on_stop is not None
            for attempt in range(self._max_retries + 1):
                yielded = False
                done_events: list[UniEvent] = []
                pipeline = call.plan.new_pipeline(_now_ms)
                try:
                    async with AsyncExitStack() as stack:
                        with abortable(signal, client):
                            events = await stack.enter_async_context(open_stream(
                                self._http, call.url, call.request, pipeline, client=client,
                                timeouts=call.timeouts, error_for_status=self._error_for_status,
                                started=started,
                            ))
                        if signal is not None:  # no scope per event without a signal
                            events = await stack.enter_async_context(
                                aclosing(_each_abortable(events, signal, client))
                            )
                        async for event in events:
                            # The assistant message is built only when a trace or the
                            # stateful history takes it (``assembles``).
                            if not assembles:
                                pass
                            elif event.event_type == "stop":
                                assistant = concat_uni_events_to_uni_message([*done_events, event])
                                if trace_id:
                                    with abortable(signal, client):
                                        await self._write_trace(trace_id, call.plan.config,
                                                                [*messages, assistant])
                                if on_stop is not None:
                                    on_stop(assistant)
                            elif event.content_items[0].type.endswith(".done"):
                                done_events.append(event)
                            yielded = True
                            yield event
                        return
                except MMSPError as exc:
                    if yielded or not _retried(exc):
                        raise
                    delay = _retry_delay(attempt, exc)
                    total = call.timeouts.total
                    left = math.inf if total is None else started + total - anyio.current_time()
                    if attempt == self._max_retries:
                        _gave_up(exc, attempt + 1, f"max_retries is {self._max_retries}")
                        raise
                    if isinstance(delay, str):
                        _gave_up(exc, attempt + 1, delay)
                        raise
                    if delay >= left:  # the wait would outlast the call (08 D60)
                        _gave_up(exc, attempt + 1, f"waiting {delay:.3g} s more would exceed "
                                 f"the total timeout of {total} s")
                        raise
                    _logger.info("%s: retrying after %s (attempt %d)", client,
                                 type(exc).__name__, attempt + 1)
                with abortable(signal, client):
                    await anyio.sleep(delay)
        except MMSPError as exc:
            if self._api_key:
                redact_error(exc, self._api_key)
            raise

    async def _request(
        self,
        messages: list[UniMessage],
        config: UniConfig | Mapping[str, Any] | None,
        signal: AbortSignal | None,
        timeouts: Timeouts | None,
        started: float,
    ) -> _Call:
        """Steps 2 and 3 of the module doc: everything decided before the first byte is sent.

        Raises:
            AbortedError: ``signal`` was already aborted, or fired while fetching images.
            UnsupportedParameterError: a config the client cannot send, or a ``trace_id``
                outside the trace directory (08 D24).
            InvalidMessageError, UnsupportedContentError: messages the builder cannot send.
        """
        client = self._client_type
        if signal is not None and signal.aborted:
            raise AbortedError(client, signal.reason)
        plan = adapters.prepare(client, self._model, messages, config,
                                base_url=self._base_url, strict=self._strict)
        if plan.trace_id:
            tracer.trace_files(self._trace_root, plan.trace_id, client)
        call_timeouts = timeouts if timeouts is not None else self._timeouts
        images = await self._fetch_images(plan.image_urls, signal, call_timeouts, started)
        request = plan.request(images)
        request = attrs.evolve(request, headers=self._with_credentials(request.headers))
        return _Call(plan, request, join_url(self._base_url, request.path), call_timeouts)

    def _with_credentials(
        self, headers: Sequence[tuple[str, str]]
    ) -> tuple[tuple[str, str], ...]:
        """``headers`` with the credentials and ``default_headers`` over them: the defaults win,
        except on a protocol whose key wins over them (a gateway's bearer token)."""
        if self._traits.key_wins_over_default_headers:
            return _merge_headers(headers, self._default_headers, self._auth)
        return _merge_headers(headers, self._auth, self._default_headers)

    async def _write_trace(
        self, trace_id: str, config: UniConfig, history: list[UniMessage]
    ) -> None:
        """Write the trace of this turn; a failure is a logged warning (08 D27)."""
        write = functools.partial(tracer.write_trace, self._trace_root, trace_id,
                                  self._client_type, self._model, history, config,
                                  secret=self._api_key)
        try:
            await anyio.to_thread.run_sync(write)
        except (OSError, MMSPError) as exc:
            _logger.warning("%s: could not write the trace %r: %s", self._client_type,
                            trace_id, redact(str(exc), self._api_key or ""))

    # -- remote images (08 D37) ----------------------------------------------------------------

    async def _fetch_images(
        self,
        urls: Mapping[str, int],
        signal: AbortSignal | None,
        timeouts: Timeouts,
        started: float,
    ) -> dict[str, str]:
        """Fetch each http(s) image of ``urls`` (``CallPlan.image_urls``: a URL with the index
        of the first message carrying it) as a ``data:`` URI, by URL, as the client's
        ``RemoteImages`` allows: an image within ``max_image_bytes`` and all of them within
        ``max_total_bytes``; a host that must be checked through ``checked_client``
        (``mmsp_io.remote_images``).

        Raises:
            InvalidMessageError: remote images are not fetched (``enabled`` is off), or one
                cannot be fetched (``item_type="image_url"``, the reason in ``detail``).
            AbortedError: ``signal`` fired while fetching.
        """
        policy = self._remote_images
        fetched: dict[str, str] = {}
        if not urls:
            return fetched
        if not policy.enabled:
            raise InvalidMessageError(self._client_type, "image_url", next(iter(urls.values())),
                                      detail=_IMAGES_OFF)
        left = policy.max_total_bytes
        async with AsyncExitStack() as stack:
            http = self._http if policy.allow_private else (
                await stack.enter_async_context(checked_client(policy)))
            for url, index in urls.items():
                fetched[url], size = await self._fetch_image(http, url, index, signal,
                                                             timeouts, started, left)
                left -= size
        return fetched

    async def _fetch_image(
        self,
        http: httpx.AsyncClient,
        url: str,
        index: int,
        signal: AbortSignal | None,
        timeouts: Timeouts,
        started: float,
        left: int,
    ) -> tuple[str, int]:
        """Fetch one image through ``http`` (no credentials; at most ``_IMAGE_REDIRECTS``
        redirects, each one a new request) as a ``data:`` URI; return it and the image's size.
        At most ``max_image_bytes`` are read, and no more than ``left`` of the call's total.

        No text of the answer shows in an error, and every failure to get one (a refused host,
        no connection, a timeout) reads alike, so that a caller learns nothing of what it
        cannot fetch (08 D37).

        Raises:
            InvalidMessageError: ``item_type="image_url"``: the image cannot be fetched, is
                larger than allowed or is not an image.
            AbortedError: ``signal`` fired while fetching.
        """
        client = self._client_type
        largest = self._remote_images.max_image_bytes

        def failed(reason: str = "") -> InvalidMessageError:
            text = f"could not fetch the image {preview(url)}"
            return InvalidMessageError(client, "image_url", index,
                                       detail=f"{text}: {reason}" if reason else text)

        target = url
        try:
            for _ in range(_IMAGE_REDIRECTS + 1):
                try:
                    with abortable(signal, client):
                        body, headers = await fetch_body(
                            http, target, client=client, timeouts=timeouts,
                            limit=min(largest, left), headers=_IMAGE_HEADERS,
                            error_for_status=_image_answer, started=started,
                        )
                    break
                except _Redirect as redirect:
                    target = str(httpx.URL(target).join(redirect.location))
                    if not target.lower().startswith(("http://", "https://")):
                        raise failed() from None
            else:
                raise failed("too many redirects")
        except StreamLimitError as exc:
            if left < largest:
                total = self._remote_images.max_total_bytes
                raise failed(f"the images of this request are larger than {_size(total)} "
                             "together") from exc
            raise failed(f"it is larger than {_size(largest)}") from exc
        except _Refused as exc:
            raise failed(f"HTTP {exc.status}") from None
        except (ProviderConnectionError, StreamTimeoutError) as exc:
            raise failed() from exc
        except httpx.InvalidURL as exc:
            raise failed("the URL is not valid") from exc
        mime = headers.get("content-type", "").split(";")[0].strip().lower()
        if not mime.startswith("image/"):
            raise failed("the answer is not an image")
        return f"data:{mime};base64,{base64.b64encode(body).decode('ascii')}", len(body)

    # -- list_models (spec 04 §5) ------------------------------------------------------------

    async def list_models(self) -> list[str]:
        """The model ids the endpoint serves, all pages (spec 04 §5).

        When the client type was deduced from the model id (not named), only ids whose own
        family routes to the same official client are kept.

        Raises:
            ProviderHTTPError, ProviderConnectionError, StreamTimeoutError: the request failed
                (``UpstreamError`` on ``mmsp``).
            MalformedEventError: the answer is not a model list.
        """
        client = self._client_type
        ids: list[str] = []
        token: str | None = None
        listing = list_models_headers(client)
        headers = self._with_credentials(listing)
        try:
            for _ in range(_MAX_MODEL_PAGES):
                url = join_url(self._base_url, list_models_path(client, token))
                body, _headers = await fetch_body(
                    self._http, url, client=client, timeouts=self._timeouts,
                    limit=_MODEL_PAGE_LIMIT, headers=headers,
                    error_for_status=self._error_for_status,
                )
                page = parse_model_page(client, body)
                ids.extend(page.ids)
                token = page.next_page_token
                if token is None:
                    break
        except MMSPError as exc:
            if self._api_key:
                redact_error(exc, self._api_key)
            raise
        if self._named:
            return ids
        return same_family(ids, client)

