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
   bearer authentication for every ``/v1/`` path (07 §3, ``hmac.compare_digest`` against every
   key), the routes, and the refusals of 07 §4 in table order. It returns either a whole
   ``Answer`` (a refusal, the model list, the metrics) or a ``StreamCall`` (the row and the
   request's messages and config, forwarded as sent).
2. A ``StreamCall`` is streamed by two tasks joined by a buffer of at most ``_BUFFERED_BYTES``
   bytes of SSE frames (``_Frames``; a larger frame waits for the buffer to empty and is then
   held alone). The *producer* first refuses the ``extra_body`` keys the row does not forward
   (below), then runs the row client's stateless ``streaming_response(messages, config,
   signal)`` and puts each public event, as ``data: <json>``, in the buffer; the stream ends
   with ``data: [DONE]``. Every error the client raises, those raised before any provider
   request included, becomes one ``data: {"error": <wire error>}`` frame under status 200
   (07 §4, 03 §3). The *writer* takes frames out and sends them; while no frame is ready it
   sends ``: keep-alive`` every ``keepalive`` seconds.
3. A caller that reads nothing blocks only its own writer: the buffer fills, then the producer
   waits, and no other stream is touched. A send that makes no progress for ``idle_timeout``
   seconds (frames go out in pieces of at most ``_PIECE`` bytes, each timed) aborts the
   upstream call and cuts the connection.
4. A caller that leaves cancels the handler (the front end does it): the producer's
   ``aclosing`` closes the upstream response at once, and the signal is aborted with
   ``"client disconnected"``. Cleanup aborts every request's signal with ``"request ended"``
   (03 §4).
5. ``abort_streams(reason)`` (graceful shutdown) aborts the upstream call of every stream in
   flight: each writes ``data: [DONE]`` only, as a cancelled call does (07 §4).

Whether a refused request reached a provider: it did not; nothing before step 2 sends
anything upstream.

What a caller may make the gateway do is bounded by the operator's configuration
(``config``):

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

import collections
import hmac
import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from contextlib import aclosing
from typing import Any, Final, Protocol, final

import anyio
import anyio.abc
import attrs
import httpx

from mmsp_core.errors import AbortedError, MMSPError, UnsupportedParameterError, preview, redact
from mmsp_core.model import UniEvent
from mmsp_core.wire import to_wire

from .._transport import fast_http_client
from ..abort import AbortSignal
from ..client import AutoLLMClient
from ..driver import Timeouts
from ..httpserver import Request, is_loopback_host, names_loopback_host
from .config import ConfigError, ModelRow, ServerConfig, resolve_config
from .metrics import Metrics, Tally

__all__ = ["MAX_BODY_BYTES", "Answer", "Gateway", "Output", "StreamCall"]

_logger = logging.getLogger("mmsp_io")

#: The largest request body (07 §1); more is answered 413 by the front end.
MAX_BODY_BYTES: Final = 50 * 1024 * 1024
DEFAULT_KEEPALIVE: Final = 15.0
DEFAULT_IDLE_TIMEOUT: Final = 120.0
#: Bytes of frames a stream holds between its upstream call and its caller (module doc,
#: steps 2 and 3).
_BUFFERED_BYTES: Final = 1024 * 1024
#: The largest piece of a frame sent at once, so that a slow caller's progress is seen.
_PIECE: Final = 64 * 1024
#: Idle connections each row's HTTP client keeps to its provider, 30 s each; the requests in
#: flight are not capped.
_UPSTREAM_KEEPALIVE: Final = 64

_JSON: Final = "application/json"
_SSE_HEADERS: Final = (
    ("content-type", "text/event-stream; charset=utf-8"),
    ("cache-control", "no-cache"),
)
_DONE: Final = b"data: [DONE]\n\n"
_KEEPALIVE: Final = b": keep-alive\n\n"
_ROUTES: Final = "POST /v1/stream, GET /v1/models and GET /v1/metrics"
#: What a send to a caller who went away raises.
_GONE: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError)


class Output(Protocol):
    """Where a response goes: the h11 core's ``Response``, or the ASGI front end's twin."""

    @property
    def client_gone(self) -> bool: ...

    async def start(self, status: int, headers: Sequence[tuple[str, str]] = ()) -> None: ...

    async def send(self, data: bytes) -> None: ...

    async def respond(
        self, status: int, headers: Sequence[tuple[str, str]] = (), body: bytes = b""
    ) -> None: ...

    async def cut(self) -> None: ...


@final
@attrs.frozen
class Answer:
    """A whole response: status, headers and body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


@final
@attrs.frozen
class StreamCall:
    """An accepted ``POST /v1/stream``: the row and what is forwarded to its client."""

    row: ModelRow
    messages: list[Any]
    config: Mapping[str, Any] | None


def _json_answer(status: int, document: Mapping[str, Any]) -> Answer:
    body = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    return Answer(status, (("content-type", _JSON),), body)


def refusal(status: int, error_type: str, message: str) -> Answer:
    """The answer ``{"error": {"type", "message"}}`` of a refusal (07 §3, §4; 03 §3)."""
    return _json_answer(status, {"error": {"type": error_type, "message": message}})


def _frame(document: Mapping[str, Any]) -> bytes:
    """One SSE event ``data: <json>`` (non-ASCII kept; the JSON holds no line break)."""
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    return b"data: " + text.encode() + b"\n\n"


def wire_error(exc: Exception, secret: str) -> dict[str, Any]:
    """The wire form of ``exc`` (03 §3): an MMSP error with its fields (the row's client has
    redacted its key from them); any other exception as its class name and message, ``secret``
    redacted (08 D16), plus ``status`` when it has an integer ``status_code``."""
    if isinstance(exc, MMSPError):
        return to_wire(exc)
    message = redact(str(exc), secret) or type(exc).__name__
    error: dict[str, Any] = {"type": type(exc).__name__, "message": message}
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        error["status"] = status
    return {"error": error}


def _media_type(value: str | None) -> str:
    return (value or "").partition(";")[0].strip().lower()


@final
class _Frames:
    """The frames between a stream's producer and its writer: at most ``limit`` bytes, but a
    frame larger than that is held alone (module docstring, step 2). One producer, one writer.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._frames: collections.deque[bytes] = collections.deque()
        self._held = 0
        self._closed = False
        #: The event a waiting side waits on (the producer for room, the writer for a frame,
        #: never both at once); made only when one waits.
        self._changed: anyio.Event | None = None

    async def _wait(self) -> None:
        if self._changed is None:
            self._changed = anyio.Event()
        await self._changed.wait()

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def put(self, frame: bytes) -> None:
        """Queue ``frame`` once there is room for it (or nothing else is held)."""
        while self._frames and self._held + len(frame) > self._limit:
            await self._wait()
        self._frames.append(frame)
        self._held += len(frame)
        self._notify()

    def close(self) -> None:
        """No more frames: ``get`` returns ``None`` once the queued ones are taken."""
        self._closed = True
        self._notify()

    async def get(self) -> bytes | None:
        """The next frame, waiting for one; ``None`` after the last one (``close``)."""
        while not self._frames:
            if self._closed:
                return None
            await self._wait()
        frame = self._frames.popleft()
        self._held -= len(frame)
        self._notify()
        return frame


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
            client type, unroutable model id, key rules); the message names the row (07 §2).
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
        self._tokens = tuple(key.encode() for key in self.config.api_keys)
        self._http: list[httpx.AsyncClient] = []
        self._clients: dict[str, AutoLLMClient] = {}
        self._rows = {row.server_model_id: row for row in self.config.models}
        for index, row in enumerate(self.config.models):
            self._clients[row.server_model_id] = self._client(
                index, row, trace_dir=trace_dir, timeouts=timeouts, max_retries=max_retries)
        self.metrics = Metrics([row.server_model_id for row in self.config.models],
                               wall=time.time, monotonic=time.monotonic,
                               show_errors=self.config.show_errors)
        self._signals: set[AbortSignal] = set()

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
        http = fast_http_client(max_connections=None, max_keepalive=_UPSTREAM_KEEPALIVE)
        try:
            client = AutoLLMClient(row.model_id, api_key=row.api_key, base_url=row.base_url,
                                   client_type=row.client_type, http_client=http,
                                   trace_dir=trace_dir, timeouts=timeouts,
                                   max_retries=max_retries,
                                   remote_images=self.config.remote_images)
        except (MMSPError, TypeError, ValueError) as exc:
            where = f"{self.config.source}: " if self.config.source else ""
            message = redact(str(exc), row.api_key)
            raise ConfigError(f"{where}models[{index}] ({row.server_model_id!r}): "
                              f"{type(exc).__name__}: {message}") from exc
        self._http.append(http)
        return client

    @property
    def models(self) -> tuple[str, ...]:
        """The served model ids, in table order."""
        return tuple(self._clients)

    async def aclose(self) -> None:
        """Close the rows' HTTP clients."""
        for http in self._http:
            await http.aclose()

    # -- step 1: decide ----------------------------------------------------------------------

    def authorised(self, request: Request) -> bool:
        """Whether ``request`` may go on (07 §3): an open server, a path outside ``/v1/``, or
        ``Authorization: Bearer <one of the keys>``, compared in constant time with every key."""
        if not self._tokens or not request.path.startswith("/v1/"):
            return True
        scheme, _, token = (request.header("authorization") or "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        presented = token.strip().encode("latin-1")
        matches = [hmac.compare_digest(presented, key) for key in self._tokens]
        return any(matches)

    def host_allowed(self, request: Request, local_host: str | None) -> bool:
        """Whether ``request`` passes the ``Host`` rule of an open server (module docstring):
        a server with ``api_keys``, one listening at a non-loopback ``local_host``, or a
        ``Host`` header that names a loopback host (``None``: the address is not known, the
        rule applies)."""
        if not self.config.open or (local_host is not None and not is_loopback_host(local_host)):
            return True
        return names_loopback_host(request.header("host"))

    def decide(self, request: Request, *, local_host: str | None = None) -> Answer | StreamCall:
        """Route ``request`` and apply the ``Host`` rule of an open server (``host_allowed``),
        then the refusals of 07 §3 and §4, in their order."""
        if not self.host_allowed(request, local_host):
            self.metrics.refused("unauthorized")
            return refusal(403, "PermissionDeniedError",
                           "The Host header names no loopback host: this server has no "
                           "api_keys and answers only requests addressed to a loopback host.")
        if not self.authorised(request):
            self.metrics.refused("unauthorized")
            return refusal(401, "AuthenticationError", "Invalid or missing API key.")
        route = (request.method, request.path)
        if route == ("POST", "/v1/stream"):
            return self._stream_call(request)
        if route == ("GET", "/v1/models"):
            created = int(self.metrics.started_at)
            data = [{"id": model, "object": "model", "created": created, "owned_by": "mmsp"}
                    for model in self._clients]
            return _json_answer(200, {"object": "list", "data": data})
        if route == ("GET", "/v1/metrics"):
            return _json_answer(200, self.metrics.snapshot())
        return refusal(404, "NotFoundError",
                       f"No route for {request.method} {request.path}; the server serves "
                       f"{_ROUTES}.")

    def _stream_call(self, request: Request) -> Answer | StreamCall:
        """The refusals of 07 §4's table, in order, else the call to stream."""

        def invalid(message: str) -> Answer:
            self.metrics.refused("invalid_request")
            return refusal(400, "InvalidRequestError", message)

        body: Any = None
        if _media_type(request.header("content-type")) == _JSON:
            try:
                body = json.loads(request.body)
            except (ValueError, RecursionError):
                body = None
        if not isinstance(body, dict):
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
        if model not in self._clients:
            self.metrics.refused("unknown_model")
            return refusal(404, "NotFoundError",
                           f"The model '{model}' does not exist; GET /v1/models lists the "
                           f"models this server serves.")
        return StreamCall(self._rows[model], messages, config)

    # -- step 2: answer ----------------------------------------------------------------------

    async def handle(
        self, request: Request, out: Output, *, local_host: str | None = None
    ) -> None:
        """Answer ``request`` through ``out`` (module docstring); ``local_host`` is the address
        the server listens on or the request came in at (``None``: not known).

        Raises:
            anyio.BrokenResourceError, anyio.ClosedResourceError: the caller went away while
                a whole answer or the stream's head was being sent.
        """
        decision = self.decide(request, local_host=local_host)
        if isinstance(decision, Answer):
            await out.respond(decision.status, decision.headers, decision.body)
            return
        await self._stream(decision, out)

    async def _stream(self, call: StreamCall, out: Output) -> None:
        """Steps 2-4 of the module docstring for one accepted call."""
        signal = AbortSignal()
        tally = self.metrics.begin(call.row.server_model_id)
        self._signals.add(signal)
        delivered = False
        try:
            await out.start(200, _SSE_HEADERS)
            frames = _Frames(_BUFFERED_BYTES)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._produce, call, signal, frames, tally)
                delivered = await self._write(frames, out, signal, tally)
                tasks.cancel_scope.cancel()
        finally:
            # A caller may close as soon as it has ``[DONE]`` (08 D56), before the end of the
            # body is written: that is no disconnect.
            gone = out.client_gone and not delivered
            if gone:
                signal.abort("client disconnected")
            signal.abort("request ended")
            self._signals.discard(signal)
            tally.end(client_gone=gone)

    async def _produce(
        self, call: StreamCall, signal: AbortSignal, frames: _Frames, tally: Tally
    ) -> None:
        """Refuse the ``extra_body`` keys the row does not forward, run the row's call and
        queue its frames, an error as one error frame, then ``[DONE]`` (07 §4). An abort
        (shutdown, an idle caller) queues ``[DONE]`` only."""
        client = self._clients[call.row.server_model_id]
        try:
            _check_extra_body(call, client.client_type)
            stream = client.streaming_response(call.messages, call.config, signal)
            async with aclosing(stream) as events:
                async for event in events:
                    tally.event(stop=event.event_type == "stop", usage=event.usage_metadata)
                    await frames.put(_event_frame(event))
        except AbortedError as exc:
            tally.failed(str(exc))
        except Exception as exc:  # every error is one event under status 200 (07 §4)
            error = wire_error(exc, call.row.api_key)
            if not isinstance(exc, MMSPError):  # a bug: logged, without the row's key
                _logger.error("%s: the row's client failed: %s: %s",
                              call.row.server_model_id, error["error"]["type"],
                              error["error"]["message"])
            tally.failed(error["error"]["message"])
            await frames.put(_frame(error))
        await frames.put(_DONE)
        frames.close()

    async def _write(
        self, frames: _Frames, out: Output, signal: AbortSignal, tally: Tally
    ) -> bool:
        """Send the queued frames, keep-alives while none is ready (steps 2 and 3); return
        at the end of the stream (``True``: every frame was sent), once the caller is gone, or
        after cutting an idle caller."""
        while True:
            frame: bytes | None = _KEEPALIVE
            with anyio.move_on_after(self.keepalive):
                frame = await frames.get()
            if frame is None:
                return True
            for start in range(0, len(frame), _PIECE):
                with anyio.move_on_after(self.idle_timeout) as timer:
                    try:
                        await out.send(frame[start : start + _PIECE])
                    except _GONE:  # the front end has seen it: client_gone is set
                        return False
                if timer.cancelled_caught:
                    reason = f"the caller read nothing for {self.idle_timeout:g} s"
                    signal.abort(reason)
                    tally.failed(reason)
                    await out.cut()
                    return False
            if frame is _DONE:  # the last frame (``_produce``): the caller may close now
                return True

    def abort_streams(self, reason: str) -> None:
        """Abort the upstream call of every stream in flight (module docstring, step 5)."""
        for signal in tuple(self._signals):
            signal.abort(reason)


def _event_frame(event: UniEvent) -> bytes:
    return _frame(to_wire(event))


def _check_extra_body(call: StreamCall, client_type: str) -> None:
    """Refuse the keys of the call's ``extra_body`` that its row does not list in
    ``extra_body_keys`` (module docstring).

    Raises:
        UnsupportedParameterError: ``parameter="extra_body"``, the refused keys in ``detail``.
    """
    extra = (call.config or {}).get("extra_body")
    if not isinstance(extra, Mapping):  # anything else is the row's client's to refuse
        return
    refused = [str(key) for key in extra if key not in call.row.extra_body_keys]
    if refused:
        raise UnsupportedParameterError(
            client_type, "extra_body",
            detail=f"this server does not forward the extra_body keys {preview(repr(refused))} "
                   f"for this model (its configuration lists the keys a row forwards in "
                   f"extra_body_keys)",
        )
