"""The MMSP server's request handling, shared by its two front ends (spec 07 §3-§5, 03 §5).

Theory of operation
-------------------
``Gateway`` holds one ``AutoLLMClient`` per configured row and answers requests. A front end
(``mmsp_io.server.app`` on the h11 core, ``mmsp_io.server.asgi`` under an ASGI server) reads a
request whole into an ``httpserver.Request`` and calls ``Gateway.handle(request, out)`` with
an ``Output``: ``start``/``send``/``respond``/``cut`` and ``client_gone``, which the h11
core's ``Response`` is and the ASGI front end imitates. The front end also cancels the handler
when the caller leaves. Nothing here knows which front end runs it.

1. ``Gateway.decide(request)`` is plain code: the ``Host`` rule of an open server (below),
   authentication for every ``/v1/`` path (07 §3: a key of ``api_keys`` or ``keys`` as a
   bearer token or as Anthropic's ``x-api-key``, 08 D73, looked up by its SHA-256 digest,
   ``limits.Limiter.identify``), the routes, and the refusals of 07 §4 in table order (a key
   naming a model outside its ``models`` is refused as an unknown model, 08 D75). It returns
   either a whole ``Answer`` (a refusal, the model list, the metrics), a ``StreamCall`` (the
   row and the request's messages and config, forwarded as sent) or a ``FrontCall``: a request
   at a front door (``doors``, 08 D73), read by the door of the protocol whose route it is, its
   refusals in that protocol's error body. The operator's routes outside ``/v1``
   (``/healthz``, ``/readyz``, ``/metrics``) are answered before it (``health``).
2. A ``StreamCall``, or a ``FrontCall`` with ``stream: true``, is streamed by ``relay``: a
   producer running the row's call (``Gateway._call``) and a writer sending its frames to the
   caller, joined by a bounded buffer, with keep-alives, an idle caller cut off, a leaving
   caller's upstream call closed, and ``abort_streams`` for a graceful shutdown. A
   ``FrontCall`` with ``stream: false`` is answered whole (``whole``).
3. Every call is tracked while it runs (``Gateway._flight``): its signal is aborted when it
   ends, with ``"client disconnected"`` first when the caller left, then ``"request ended"``
   (03 §4); its outcome is counted.

Whether a refused request reached a provider: it did not; nothing before step 2 sends
anything upstream.

What a caller may make the gateway do is bounded by the operator's configuration
(``config``):

- limits (``limits``, 08 D75, D76): a call of a key over its ``rpm``, ``tpm`` or ``budget`` is
  answered 429 with ``Retry-After`` before any upstream call (``handle``); the tokens and cost
  of its stop's usage are counted when the call ends, however it ends (``_flight``).
- ``Host``: an open server (no ``api_keys``) listening on a loopback address answers only
  requests whose ``Host`` header names a loopback host (the trace page's rule), else 403
  ``PermissionDeniedError`` (counted as ``refused.unauthorized``): a web page the operator
  visits cannot drive it through a name that resolves to ``127.0.0.1`` (DNS rebinding). A
  front end tells ``handle`` the address it listens on, or the one the request came in at
  (``local_host``); when it cannot, the rule applies.
- ``extra_body``: a caller's config is forwarded as sent (07 §4), but ``extra_body`` is
  sent to the provider unread, so each of its keys must be listed in the row's
  ``extra_body_keys``, else the call ends with an ``UnsupportedParameterError`` event
  (``parameter="extra_body"``) before any provider request (a caller's ``n: 8`` would
  multiply the operator's cost).
- remote images: the rows' clients fetch the images callers name only as ``remote_images``
  allows (``mmsp_io.RemoteImages``; by default nothing is fetched).
- ``GET /v1/metrics`` shows the error texts of failed calls only with
  ``metrics.show_errors`` (08 D75).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import Any, Final, final

import anyio
import anyio.abc
import attrs
import httpx

from adapters import FrontDoor
from mmsp_core.errors import (
    MMSPError,
    UnsupportedParameterError,
    preview,
    redact,
    redact_error,
)
from mmsp_core.model import UniConfig, UniEvent, UniMessage

from .._telemetry import Spans, annotate_current_span, caller_context, telemetry_setting
from .._transport import fast_http_client
from ..abort import AbortSignal
from ..client import AutoLLMClient
from ..driver import Timeouts
from ..httpserver import Request, is_loopback_host, names_loopback_host
from ..tracer import with_trace_label
from .access import AccessLog
from .answers import JSON, Answer, json_answer, refusal, wire_error
from .calls import Flight, FrontCall, Output, StreamCall
from .config import ConfigError, KeyRow, ModelRow, ServerConfig, resolve_config
from .doors import DoorStream, door_refusal, front_doors, model_list
from .failover import Group, fails_over, groups, places
from .health import operational_answer
from .limits import limiter_for
from .metrics import Metrics
from .prometheus import prometheus_for
from .relay import MMSPStream, stream
from .whole import whole

__all__ = ["MAX_BODY_BYTES", "Answer", "FrontCall", "Gateway", "Output", "StreamCall", "refusal",
           "wire_error"]

_logger = logging.getLogger("mmsp_io")

#: The largest request body (07 §1); more is answered 413 by the front end.
MAX_BODY_BYTES: Final = 50 * 1024 * 1024
DEFAULT_KEEPALIVE: Final = 15.0
DEFAULT_IDLE_TIMEOUT: Final = 120.0


def _media_type(value: str | None) -> str:
    return (value or "").partition(";")[0].strip().lower()


def _json_body(request: Request) -> dict[str, Any] | None:
    """The request's body as a JSON object; ``None`` when it is none or is not declared
    ``application/json`` (07 §4: a body a web page could send without asking first is
    refused, so a page cannot make the gateway spend)."""
    if _media_type(request.header("content-type")) != JSON:
        return None
    try:
        body = json.loads(request.body)
    except (ValueError, RecursionError):
        return None
    return body if isinstance(body, dict) else None


def _refusal(
    door: FrontDoor | None, status: int, error_type: str, message: str,
    param: str | None = None,
) -> Answer:
    """A refusal in the door's error body (08 D73), else in the server's (07 §4)."""
    if door is None:
        return refusal(status, error_type, message)
    return door_refusal(door, status, message, param=param)


@final
class Gateway:
    """The request handling of the MMSP server (module docstring).

    Args:
        config: a validated ``ServerConfig``, or a configuration document to validate.
        keepalive: seconds between ``: keep-alive`` comments while no event is ready (07 §1).
        idle_timeout: seconds a send to a caller may make no progress before the stream is
            aborted.
        trace_dir: where the rows' clients save traces (``None``: ``MMSP_CACHE_DIR`` or
            ``./cache``, 07 §7).
        timeouts, max_retries: the rows' clients' (``AutoLLMClient``; ``None``: its defaults).

    Raises:
        ConfigError: the document is invalid, or a row's client cannot be built (unknown
            client type, unroutable model id, key rules); the message names the row (07 §2);
            or telemetry is enabled without opentelemetry-api (the message names the extra);
            or the limits cannot be kept (a key with a budget may use a row without a price,
            a store without the Redis client: ``limits.limiter_for``).
    """

    def __init__(
        self,
        config: ServerConfig | Mapping[str, Any],
        *,
        keepalive: float = DEFAULT_KEEPALIVE,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        trace_dir: str | os.PathLike[str] | None = None,
        timeouts: Timeouts | None = None,
        max_retries: int = 2,
    ) -> None:
        self.config = config if isinstance(config, ServerConfig) else resolve_config(config)
        self.keepalive = keepalive
        self.idle_timeout = idle_timeout
        self._http: list[httpx.AsyncClient] = []
        self._clients: dict[ModelRow, AutoLLMClient] = {}
        #: The rows of each served model, the order of a request's attempts (08 D77).
        self.groups: dict[str, Group] = groups(self.config.models)
        #: What logs and spans call each row: ``models[<i>]`` (``failover.places``).
        self.places = places(self.config.models)
        try:  # the rows' clients take it as it is, MMSP_OTEL read once here
            self.telemetry = telemetry_setting(self.config.telemetry, "mmsp gateway")
        except MMSPError as exc:
            raise ConfigError(f"telemetry: {exc}") from exc
        for index, row in enumerate(self.config.models):
            self._clients[row] = self._client(
                index, row, trace_dir=trace_dir, timeouts=timeouts, max_retries=max_retries)
        #: The SERVER span of each served model's requests, described by its group's first row
        #: (``mmsp_io._telemetry``); none when off.
        self._spans: dict[str, Spans] = {}
        for served, group in self.groups.items():
            first = self._clients[group.rows[0]]
            if self.telemetry is not None:
                self._spans[served] = Spans(
                    self.telemetry, client=first.client_type, model=first.model,
                    base_url=first.base_url, api_key=group.rows[0].api_key, served_as=served)
        base_urls = {row: client.base_url for row, client in self._clients.items()}
        self.limits = limiter_for(self.config, base_urls)
        #: ``GET /metrics``'s counts; ``None`` without prometheus-client (``health``).
        self.prometheus = prometheus_for(self.config, base_urls)
        #: Set when the server begins to shut down: ``GET /readyz`` answers 503 (``health``).
        self.draining = False
        self.metrics = Metrics([row.server_model_id for row in self.config.models],
                               wall=time.time, monotonic=time.monotonic,
                               show_errors=self.config.show_errors)
        self._signals: set[AbortSignal] = set()
        self.access = AccessLog(self.places, base_urls, wall=time.time, monotonic=time.monotonic)

    def _client(
        self,
        index: int,
        row: ModelRow,
        *,
        trace_dir: str | os.PathLike[str] | None,
        timeouts: Timeouts | None,
        max_retries: int,
    ) -> AutoLLMClient:
        """The client of row ``index`` (07 §2, the last check at start), over an HTTP client
        of the library's fast transport (``fast_http_client``, 08 D79).

        Raises:
            ConfigError: the client cannot be built; the message names the row.
        """
        http = fast_http_client(max_connections=None)
        try:
            client = AutoLLMClient(row.model_id, api_key=row.api_key, base_url=row.base_url,
                                   client_type=row.client_type, http_client=http,
                                   trace_dir=trace_dir, timeouts=timeouts,
                                   max_retries=max_retries,
                                   remote_images=self.config.remote_images,
                                   telemetry=self.telemetry or False)
        except (MMSPError, TypeError, ValueError) as exc:
            where = f"{self.config.source}: " if self.config.source else ""
            message = redact(str(exc), row.api_key)
            raise ConfigError(f"{where}models[{index}] ({row.server_model_id!r}): "
                              f"{type(exc).__name__}: {message}") from exc
        self._http.append(http)
        return client

    @property
    def models(self) -> tuple[str, ...]:
        """The served model ids, in table order (a group's at its first row)."""
        return tuple(self.groups)

    async def aclose(self) -> None:
        """Close the rows' HTTP clients and the limits' store."""
        for http in self._http:
            await http.aclose()
        await self.limits.aclose()
        if self.prometheus is not None:
            self.prometheus.close()

    # -- step 1: decide ----------------------------------------------------------------------

    def authorised(self, request: Request) -> bool:
        """Whether ``request`` may go on (07 §3): an open server, a path outside ``/v1/``, or
        a key (``key_of``)."""
        if self.config.open or not request.path.startswith("/v1/"):
            return True
        return self.key_of(request) is not None

    def key_of(self, request: Request) -> KeyRow | None:
        """The key of ``api_keys`` or ``keys`` that ``request`` carries as ``Authorization:
        Bearer <key>`` or as Anthropic's ``x-api-key: <key>`` (08 D73), looked up by its
        SHA-256 digest (``Limiter.identify``), else ``None``."""
        scheme, _, bearer = (request.header("authorization") or "").partition(" ")
        presented = [bearer] if scheme.lower() == "bearer" else []
        presented.extend(value for value in [request.header("x-api-key")] if value is not None)
        keys = (self.limits.identify(token.strip()) for token in presented)
        return next((key for key in keys if key is not None), None)

    def host_allowed(self, request: Request, local_host: str | None) -> bool:
        """Whether ``request`` passes the ``Host`` rule of an open server (module docstring):
        a server with ``api_keys``, one listening at a non-loopback ``local_host``, or a
        ``Host`` header that names a loopback host (``None``: the address is not known, the
        rule applies)."""
        if not self.config.open or (local_host is not None and not is_loopback_host(local_host)):
            return True
        return names_loopback_host(request.header("host"))

    def decide(
        self, request: Request, *, local_host: str | None = None
    ) -> Answer | StreamCall | FrontCall:
        """Route ``request`` and apply the ``Host`` rule of an open server (``host_allowed``),
        then the refusals of 07 §3 and §4, in their order. A refusal at a front door is in
        its protocol's error body (08 D73)."""
        doors = front_doors()
        door = doors.get(request.path) if request.method == "POST" else None
        if not self.host_allowed(request, local_host):
            self.metrics.refused("unauthorized")
            return _refusal(door, 403, "PermissionDeniedError",
                            "The Host header names no loopback host: this server has no "
                            "api_keys and answers only requests addressed to a loopback host.")
        if not self.authorised(request):
            self.metrics.refused("unauthorized")
            return _refusal(door, 401, "AuthenticationError", "Invalid or missing API key.")
        if door is not None:
            return self._front_call(request, door)
        route = (request.method, request.path)
        if route == ("POST", "/v1/stream"):
            return self._stream_call(request)
        if route == ("GET", "/v1/models"):
            anthropic = request.header("anthropic-version") is not None
            return json_answer(200, model_list(self.groups, self.metrics.started_at,
                                               anthropic=anthropic))
        if route == ("GET", "/v1/metrics"):
            return json_answer(200, self.metrics.snapshot())
        routes = ["POST /v1/stream", *(f"POST {path}" for path in doors), "GET /v1/models"]
        return refusal(404, "NotFoundError",
                       f"No route for {request.method} {request.path}; the server serves "
                       f"{', '.join(routes)} and GET /v1/metrics.")

    def _invalid(self, door: FrontDoor | None, message: str, param: str | None = None) -> Answer:
        """A 400 refusal of a request, counted as ``invalid_request``."""
        self.metrics.refused("invalid_request")
        return _refusal(door, 400, "InvalidRequestError", message, param=param)

    def _unknown_model(self, door: FrontDoor | None, model: str) -> Answer:
        """The 404 of a model this server does not serve (07 §4), counted as ``unknown_model``."""
        self.metrics.refused("unknown_model")
        return _refusal(door, 404, "NotFoundError",
                        f"The model '{model}' does not exist; GET /v1/models lists the "
                        f"models this server serves.")

    def _front_call(self, request: Request, door: FrontDoor) -> Answer | FrontCall:
        """The refusals of a front door (08 D73), else the call to answer: a body that is no
        JSON object, or one the door's reader refuses (400, ``param`` naming a refused field),
        and an unknown model (404), each in the protocol's error body."""
        body = _json_body(request)
        if body is None:
            return self._invalid(door, "Request body must be a JSON object.")
        try:
            read = door.read_request(body)
        except MMSPError as exc:
            param = exc.parameter if isinstance(exc, UnsupportedParameterError) else None
            return self._invalid(door, str(exc), param)
        key = self.key_of(request)
        if read.model not in self.groups or (key is not None and not key.allows(read.model)):
            return self._unknown_model(door, read.model)
        return FrontCall(door, self.groups[read.model].rows[0], read, key)

    def _stream_call(self, request: Request) -> Answer | StreamCall:
        """The refusals of 07 §4's table, in order, else the call to stream."""

        def invalid(message: str) -> Answer:
            return self._invalid(None, message)

        body = _json_body(request)
        if body is None:
            return invalid("Request body must be a JSON object.")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return invalid("model must be a non-empty string.")
        messages = body.get("messages")
        if not isinstance(messages, list):
            return invalid("messages must be a list of messages.")
        config = body.get("config")
        if config is not None and not isinstance(config, dict):
            return invalid("config must be an object.")
        key = self.key_of(request)
        if model not in self.groups or (key is not None and not key.allows(model)):
            return self._unknown_model(None, model)
        return StreamCall(self.groups[model].rows[0], messages, config, key)

    # -- step 2: answer ----------------------------------------------------------------------

    async def handle(
        self, request: Request, out: Output, *, local_host: str | None = None
    ) -> None:
        """Answer ``request`` through ``out`` (module docstring); ``local_host`` is the address
        the server listens on or the request came in at (``None``: not known). With telemetry,
        the caller's trace context (its ``traceparent``) is the current one meanwhile, the
        parent of the request's span (``mmsp_io._telemetry``).

        Raises:
            anyio.BrokenResourceError, anyio.ClosedResourceError: the caller went away while
                a whole answer was being sent.
        """
        if self.telemetry is None:
            await self._handle(request, out, local_host)
            return
        with caller_context(request.headers):
            await self._handle(request, out, local_host)

    async def _handle(self, request: Request, out: Output, local_host: str | None) -> None:
        """``handle`` without telemetry's context; a request answered whole writes its
        access-log line here, a call in ``_flight``."""
        started = time.monotonic()
        decision = (await operational_answer(self, request, local_host)
                    or self.decide(request, local_host=local_host))
        if not isinstance(decision, Answer):
            refused = await self.limits.admit(decision.key)  # 08 D75, before any upstream call
            if refused is not None:
                if self.prometheus is not None:
                    self.prometheus.refused(refused.reason, decision.key)
                door = decision.door if isinstance(decision, FrontCall) else None
                answer = _refusal(door, refused.status, refused.error_type, refused.message)
                decision = attrs.evolve(answer, headers=answer.headers + refused.headers)
        if isinstance(decision, Answer):
            await out.respond(decision.status, decision.headers, decision.body)
            self.access.answered(request, self.key_of(request), decision.status, started)
        elif isinstance(decision, StreamCall):
            await stream(self, decision.row, decision.messages, decision.config, out,
                         MMSPStream(decision.row.api_key), decision.key, request)
        elif decision.request.stream:
            row, read = decision.row, decision.request
            client_type = self._clients[row].client_type
            encoding = DoorStream(decision.door, row.server_model_id, read.ignored,
                                  client=client_type, secret=row.api_key)
            await stream(self, row, read.messages, read.config, out, encoding, decision.key,
                         request)
        else:
            await whole(self, decision, out, request)

    @contextlib.asynccontextmanager
    async def _flight(
        self, row: ModelRow, out: Output, key: KeyRow | None, request: Request
    ) -> AsyncIterator[Flight]:
        """Track one call to ``row`` (step 4): its signal is aborted when the call ends, with
        ``"client disconnected"`` first when the caller left before it had the whole answer,
        its tally ends with the outcome (counted for Prometheus too, ``prometheus``, with the
        rows it tried), and the usage of its stop, if one was sent, counts against ``key``'s
        limits at the price of the row that served it (08 D75, D77; shielded, within the
        store's timeout)."""
        flight = Flight(AbortSignal(), self.metrics.begin(row.server_model_id), row,
                        route=(request.method, request.path))
        self._signals.add(flight.signal)
        if self.prometheus is not None:
            self.prometheus.began(row)
        try:
            yield flight
        finally:
            # A caller may close as soon as it has the end of the stream (08 D56), before the
            # end of the body is written: that is no disconnect.
            gone = out.client_gone and not flight.delivered
            if gone:
                flight.signal.abort("client disconnected")
            flight.signal.abort("request ended")
            self._signals.discard(flight.signal)
            outcome = flight.tally.end(client_gone=gone)
            self.access.called(flight, key, outcome)
            if self.prometheus is not None:
                self.prometheus.ended(flight.row, key, flight.tally, outcome, flight.failed_over)
            with anyio.CancelScope(shield=True):
                await self.limits.settle(key, flight.row, flight.tally.usage)

    def _call(
        self,
        row: ModelRow,
        messages: Sequence[UniMessage | Mapping[str, Any]],
        config: UniConfig | Mapping[str, Any] | None,
        flight: Flight,
        *,
        each_wait: bool = True,
    ) -> AsyncGenerator[UniEvent, None]:
        """The stateless call of ``row``'s group (``_failover``), the one upstream path of
        every route. A caller's ``trace_id`` is made a label, one file name in the gateway's
        trace directory, never a path the caller chooses (``tracer.trace_label``, 08 D78).
        With telemetry, the call runs in the request's SERVER span (``mmsp_io._telemetry``).
        ``flight.signal`` aborts the call: the client makes each of its waits abortable
        (``each_wait``), or the caller runs the whole call under one ``abort.abortable``
        scope (``relay``: no scope per event).

        Raises:
            UnsupportedParameterError: an ``extra_body`` key the serving row does not forward
                (module docstring), before any provider request.
            Exception: what the serving row's client raises.
        """
        events = self._failover(self.groups[row.server_model_id], messages,
                                with_trace_label(config), flight, each_wait)
        spans = self._spans.get(row.server_model_id)
        return events if spans is None else spans.observe(events)

    async def _failover(
        self,
        group: Group,
        messages: Sequence[UniMessage | Mapping[str, Any]],
        config: UniConfig | Mapping[str, Any] | None,
        flight: Flight,
        each_wait: bool,
    ) -> AsyncGenerator[UniEvent, None]:
        """The events of the first row of ``group`` that gives one (08 D77, ``failover``):
        a row whose call fails before its first event with an error that ``fails_over`` is
        noted in ``group`` and ``flight.failed_over``, and the next row of ``group.attempts``
        is called, while there is one; ``flight.row`` is the row called. Once the serving row
        is known (its first event, or the error the caller gets) it is named in the request's
        span (``_serving``). An error that is no MMSP error has its key redacted.

        Raises:
            UnsupportedParameterError: as ``_call``.
            Exception: the error of the last row tried, or of the serving row after its
                first event.
        """
        attempts = group.attempts()
        flight.row = next(attempts)  # the first one always comes
        try:
            while True:
                client = self._clients[flight.row]
                _check_extra_body(flight.row, config, client.client_type)
                events = client.streaming_response(messages, config,
                                                   flight.signal if each_wait else None)
                async with contextlib.aclosing(events):
                    try:
                        first = await anext(events, None)
                    except Exception as exc:
                        if not fails_over(exc):
                            raise
                        group.failed(flight.row)  # before the next row is chosen
                        following = next(attempts, None)
                        if following is None:
                            raise
                        self._fail_over(flight, following, exc)
                        continue
                    group.served(flight.row)
                    self._serving(flight)
                    if first is not None:
                        yield first
                    async for event in events:
                        yield event
                return
        except Exception as exc:
            self._serving(flight)
            if not isinstance(exc, MMSPError):
                redact_error(exc, flight.row.api_key)
            raise

    def _serving(self, flight: Flight) -> None:
        """With telemetry, name the row serving ``flight`` and count the rows it tried in the
        request's span: ``mmsp.gateway.row`` (``models[<i>]``) and ``mmsp.gateway.attempts``
        (08 D77)."""
        if self.telemetry is not None:
            annotate_current_span({"mmsp.gateway.row": self.places[flight.row],
                                   "mmsp.gateway.attempts": len(flight.failed_over) + 1})

    def _fail_over(self, flight: Flight, following: ModelRow, exc: Exception) -> None:
        """Move ``flight`` from its row, which failed with ``exc``, to ``following``: the row
        counts as failed over, and the move is logged."""
        failed = flight.row
        flight.failed_over.append(failed)
        flight.row = following
        _logger.warning("%s: %s failed before its first event (%s); trying %s",
                        failed.server_model_id, self.places[failed], type(exc).__name__,
                        self.places[following])

    def _failed(self, row: ModelRow, exc: Exception, flight: Flight) -> None:
        """Count the call as failed with ``exc``; one that is no MMSP error (a bug) is logged,
        without the row's key."""
        error = wire_error(exc, row.api_key)["error"]
        if not isinstance(exc, MMSPError):
            _logger.error("%s: the row's client failed: %s: %s", row.server_model_id,
                          error["type"], error["message"])
        flight.error_type = error["type"]
        flight.tally.failed(error["message"])

    def abort_streams(self, reason: str) -> None:
        """Abort the upstream call of every stream in flight (module docstring, step 5)."""
        for signal in tuple(self._signals):
            signal.abort(reason)


def _check_extra_body(
    row: ModelRow, config: UniConfig | Mapping[str, Any] | None, client_type: str
) -> None:
    """Refuse the keys of the call's ``extra_body`` that its row does not list in
    ``extra_body_keys`` (module docstring).

    Raises:
        UnsupportedParameterError: ``parameter="extra_body"``, the refused keys in ``detail``.
    """
    extra = (config.extra_body if isinstance(config, UniConfig)
             else (config or {}).get("extra_body"))
    if not isinstance(extra, Mapping):  # anything else is the row's client's to refuse
        return
    refused = [str(key) for key in extra if key not in row.extra_body_keys]
    if refused:
        raise UnsupportedParameterError(
            client_type, "extra_body",
            detail=f"this server does not forward the extra_body keys {preview(repr(refused))} "
                   f"for this model (its configuration lists the keys a row forwards in "
                   f"extra_body_keys)",
        )
