"""``AutoLLMClient``: one client for every client type, streaming through ``open_stream`` (09).

What happens on a call (spec 02 §8-§9, 08 D20-D22, D24, D27, D37, D38, D47, D79):

1. One pure call, ``adapters.prepare``, reads and checks the messages and the config into a
   ``CallPlan``: messages are legacy-normalised and read, ``created_at`` is stamped from the
   real clock where missing, a message without items is refused, then the config is read.
2. An already aborted signal raises ``AbortedError`` without any request.
3. The ``trace_id`` is checked for containment (08 D24); with ``trace_dir`` given explicitly
   (the argument or ``MMSP_TRACE_DIR``) a call without one is traced under a made id (08
   D78, ``tracer.new_trace_id``), but on a gateway's client, which the gateway traces. The
   plan's remote images are fetched (``mmsp_io._images``, 08 D37), and the request built with
   the credentials and ``default_headers`` (``CallPlan.request``). Steps 1-3 are
   ``mmsp_io._calls.CallMaker``'s, with the client's settings.
4. The attempt loop (``mmsp_io._attempts``) streams it, retrying what fails before the first
   event as the retry policy says (``mmsp_io._retry``, 08 D21, D60); at the stop, before it is
   yielded, the trace is written and the stateful turn recorded (its stop steps); a traced
   call that fails writes its trace with the error. With ``record_to`` (or
   ``MMSP_RECORD_DIR``) each exchange is saved as a cassette (``mmsp_io._cassettes``, 08 D78).

``list_models`` follows every page (``mmsp_io._listing``, spec 04 §5); the constructor's
arguments are checked by ``mmsp_io._settings`` (08 D69).

The key-safety rule (spec 04 §3, 08 D16, D25): the environment's key goes only to the
environment's endpoint or the vendor default; a ``base_url`` given in code needs its
``api_key`` given in code (else ``ApiKeyRequiredError`` at construction). Keys never appear in
an exception message, a ``repr``, a log line or a trace file, neither whole nor as any run of
12 characters after its first 8 (08 D61): provider text that echoes a key is redacted from the
errors raised here (every field, ``args`` and the exception chain) after the pure layers built
and shortened it, which removes the pieces of a key that shortening cut as well.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any

import attrs
import httpx

import adapters
from adapters.clients import (
    check_endpoint,
    client_spec,
    credentials,
    list_models_headers,
    same_family,
)
from mmsp_core.errors import (
    ConcurrentCallError,
    MalformedEventError,
    UnsupportedOperationError,
    UpstreamError,
)
from mmsp_core.model import UniConfig, UniEvent, UniMessage

from . import tracer
from ._attempts import Call, Sender, redacting
from ._bedrock import bedrock_auth
from ._calls import CallMaker
from ._cassettes import Recorder
from ._listing import model_ids
from ._settings import check_argument_types, check_base_url, debug_from_environment, env
from ._telemetry import Spans, Telemetry, telemetry_setting
from ._transport import fast_http_client
from ._vertex import vertex_auth
from .abort import AbortSignal
from .driver import Timeouts
from .remote_images import IMAGE_LIMIT, RemoteImages

__all__ = ["IMAGE_LIMIT", "AutoLLMClient"]


def _gateway_error(
    client: str, status: int, headers: Mapping[str, str], body: bytes
) -> UpstreamError:
    """A gateway's refusal as its own ``UpstreamError`` (spec 03 §5, 08 D13): the pure
    ``adapters.upstream_http_error`` (the body says everything; no header is read)."""
    return adapters.upstream_http_error(client, status, body)


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
        trace_dir: where traces go; ``None`` means ``MMSP_TRACE_DIR``, else ``MMSP_CACHE_DIR``
            or ``./cache``. Given (here or as ``MMSP_TRACE_DIR``), every call is traced, failed
            ones too, one without a ``trace_id`` under a made id (08 D78); else only calls
            with a ``trace_id``.
        record_to: a directory where each HTTP exchange is saved as a cassette, without
            secrets (``mmsp_io._cassettes``, 08 D78); ``None`` means ``MMSP_RECORD_DIR``, and
            nothing is recorded without either.
        remote_images: which http(s) images are fetched for a client type that sends images
            as bytes, and how many bytes (08 D37); ``None`` means ``RemoteImages()``: any host,
            at most ``IMAGE_LIMIT`` bytes an image.
        telemetry: an OpenTelemetry span per call (``mmsp_io._telemetry``, issue 25): ``True``
            or a ``Telemetry`` (content recorded, the tracer provider); ``None`` means on when
            ``MMSP_OTEL`` is set. Needs the extra ``otel``.

    Raises:
        RoutingError: no client type can be chosen, or a service-account key on
            google-official.
        ApiKeyRequiredError: the client needs a key and has none it may use (08 D25), or
            Bedrock credentials that cannot be read, or a Vertex client without any credential
            source (08 D72).
        UnsupportedOperationError: telemetry on without opentelemetry-api (the extra
            ``otel``); a Bedrock base URL on a client other than
            anthropic-official, or one that needs AWS's credential chain without botocore (the
            extra ``aws``); a Vertex AI host on google-official, or a Vertex client on
            google-genai without google-auth (the extra ``vertex``) or with an API key
            (08 D66, D72).
        UnsupportedParameterError: ``parameter="base_url"`` for a base URL no request can go
            to: not http(s), no host or a malformed one, a port outside 1-65535; on Bedrock,
            ``bedrock://`` without a region, or an endpoint variable that is no such URL
            (08 D69, D72; checked after the Bedrock and Vertex rules).
        TypeError: ``http_client`` is not an ``httpx.AsyncClient``, ``timeouts`` not a
            ``Timeouts``, ``max_retries`` not an int, ``default_headers`` not a mapping of
            strings (08 D69), ``remote_images`` not a ``RemoteImages``, ``telemetry`` not a
            bool or a ``Telemetry``.
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
        record_to: str | os.PathLike[str] | None = None,
        telemetry: bool | Telemetry | None = None,
    ) -> None:
        check_argument_types(http_client, timeouts, max_retries, default_headers, remote_images)
        named = client_type or env("CLIENT_TYPE")
        self._model = model
        self._client_type = adapters.route(model, named)
        self._named = named is not None
        # The key-safety rule of spec 04 §3 (08 D25), given the environment.
        self._api_key, self._base_url = credentials(
            self._client_type, api_key or None, base_url or None, os.environ
        )
        check_endpoint(self._client_type, model, self._base_url, self._api_key)
        # Bedrock (bedrock://<region>) authorizes each attempt at its own endpoint (08 D72).
        self._cloud = bedrock_auth(self._client_type, self._base_url, self._api_key, os.environ)
        endpoint = self._cloud.base_url if self._cloud is not None else self._base_url
        check_base_url(self._client_type, endpoint, self._api_key)
        spec = client_spec(self._client_type)
        traits = adapters.protocol_traits(spec.speaks(model, self._base_url)[0])
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else fast_http_client()
        self._timeouts = timeouts if timeouts is not None else Timeouts()
        # Vertex AI (a Vertex host or a service-account key) adds its OAuth token (08 D72).
        self._vertex = vertex_auth(self._client_type, self._base_url, self._api_key, os.environ,
                                   http=self._http, timeouts=self._timeouts)
        self._sender = self._new_sender(max_retries, traits.upstream_errors, record_to)
        self._calls = CallMaker(
            client=self._client_type, model=model, base_url=self._base_url,
            endpoint=endpoint, api_key=self._api_key,
            auth=adapters.auth_headers(self._client_type, self._api_key, self._base_url),
            default_headers=tuple((default_headers or {}).items()),
            key_wins=traits.key_wins_over_default_headers,
            strict=strict if strict is not None else debug_from_environment(),
            http=self._http, timeouts=self._timeouts,
            remote_images=remote_images if remote_images is not None else RemoteImages(),
            trace_root=tracer.trace_dir(trace_dir),
            trace_every_call=tracer.traces_every_call(trace_dir),
            vertex=self._vertex, authorizer=self._sender.authorizer,
        )
        self._history: list[UniMessage] = []
        self._in_flight: _StatefulCall | None = None
        setting = telemetry_setting(telemetry, self._client_type)
        self._spans = None if setting is None else Spans(
            setting, client=self._client_type, model=model, base_url=self._base_url,
            api_key=self._api_key)

    def _new_sender(
        self, max_retries: int, upstream_errors: bool, record_to: str | os.PathLike[str] | None
    ) -> Sender:
        """The attempt loop's settings: retries, a gateway's own error for a non-2xx answer,
        the secrets to hide, the cloud route's authorizer and the cassette recorder."""
        record_dir = record_to if record_to is not None else env("MMSP_RECORD_DIR")
        return Sender(
            self._client_type, self._http, max_retries,
            functools.partial(_gateway_error, self._client_type) if upstream_errors else None,
            self._api_key,
            self._cloud or self._vertex,
            None if record_dir is None
            else Recorder(Path(record_dir).absolute(), self._client_type, self._base_url),
        )

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
        return self._stream(
            functools.partial(self._calls.make, messages, config, signal, timeouts, ())
        )

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
            MalformedEventError: the answer holds a value nested too deeply to keep (08 D59).
            MMSPError: as ``streaming_response``.
        """
        if self._in_flight is not None and self._in_flight.blocking:
            raise ConcurrentCallError(self._client_type)
        in_flight = _StatefulCall(signal)
        self._in_flight = in_flight

        async def record(call: Call, assistant: UniMessage) -> None:
            try:
                turn = copy.deepcopy([call.plan.messages[-1], assistant])
            except RecursionError:
                # A provider's value (tool-call arguments) nested too deeply to copy is
                # malformed, as the pipeline says of one too deep to finalize (08 D59).
                raise MalformedEventError(
                    self._client_type, "(the assistant message)",
                    detail="a value is nested too deeply to keep in the history",
                ) from None
            self._history.extend(turn)
            self._in_flight = None

        prepare = functools.partial(self._calls.make, [*self._history, message], config, signal,
                                    timeouts, (record,))
        try:
            async with aclosing(self._stream(prepare)) as events:
                async for event in events:
                    yield event
        finally:
            if self._in_flight is in_flight:
                self._in_flight = None

    def _stream(self, prepare: Callable[[], Awaitable[Call]]) -> AsyncGenerator[UniEvent, None]:
        """The attempt loop's generator itself, not one wrapped in another (a layer less per
        event), or, with telemetry, that generator in the call's span."""
        if self._spans is None:
            return self._sender.stream(prepare)
        return self._spans.observe_call(self._sender.stream, prepare)

    # -- list_models (spec 04 §5) ------------------------------------------------------------

    async def list_models(self) -> list[str]:
        """The model ids the endpoint serves, all pages (spec 04 §5).

        When the client type was deduced from the model id (not named), only ids whose own
        family routes to the same official client are kept.

        Raises:
            ProviderHTTPError, ProviderConnectionError, StreamTimeoutError: the request failed
                (``UpstreamError`` on ``mmsp``).
            MalformedEventError: the answer is not a model list.
            UnsupportedOperationError: on Bedrock or Vertex AI, which have no model list here
                (04 §5).
        """
        client = self._client_type
        if self._cloud is not None or self._vertex is not None:
            cloud = "Amazon Bedrock" if self._cloud is not None else "Vertex AI"
            raise UnsupportedOperationError(client, "list_models",
                                            detail=f"{cloud} lists no models here")
        headers = self._calls.with_credentials(list_models_headers(client))
        with redacting(self._api_key):
            ids = await model_ids(self._http, client, self._base_url, headers=headers,
                                  timeouts=self._timeouts,
                                  error_for_status=self._sender.error_for_status)
        return ids if self._named else same_family(ids, client)
