"""OpenTelemetry spans of calls and gateway requests, opt-in (issue 25).

Spans are off unless turned on: ``AutoLLMClient(..., telemetry=True)`` (or a ``Telemetry``),
``MMSP_OTEL=1`` when the argument is left out, or the gateway's ``telemetry`` setting
(``mmsp_io.server.config``). ``opentelemetry-api`` (the extra ``otel``) is imported only then;
without it, turning spans on raises ``UnsupportedOperationError`` naming
``pip install 'mmsp-sansio[otel]'``. Nothing is patched: spans go to the tracer provider a
``Telemetry`` names, else to the global one the application set up (without one, the API's
no-op provider records nothing), and trace context crosses processes through the global
propagator (W3C ``traceparent`` by default).

Each span is fed by the public event stream (``Spans``), following the OpenTelemetry GenAI
conventions for an inference or embeddings span:

- name ``{gen_ai.operation.name} {gen_ai.request.model}``; kind CLIENT for a call of
  ``AutoLLMClient``, SERVER for the gateway's span of a request (``served_as``), whose
  requested model is the ``server_model_id`` the caller named;
- at the start: ``gen_ai.operation.name`` (``chat``, or ``embeddings`` on an embedding
  protocol: ``Traits.telemetry_operation``), ``gen_ai.provider.name`` (the client row's, a
  cloud's or Azure's: ``adapters.clients.telemetry_provider``), ``gen_ai.request.model``,
  and on a client span ``server.address`` and ``server.port`` of an http(s) base URL;
- at the first public event, the span event ``mmsp.first_event`` with
  ``mmsp.time_to_first_event_s``, the seconds since the span started;
- at the stop: ``gen_ai.response.model`` (the public stream names no model of its own: the
  model requested answered), ``gen_ai.response.finish_reasons`` and the token counts the
  stop reports: ``gen_ai.usage.input_tokens`` (prompt, the cached among them),
  ``gen_ai.usage.cache_read.input_tokens`` (cached), ``gen_ai.usage.output_tokens``
  (response and thoughts) and ``gen_ai.usage.reasoning.output_tokens`` (thoughts);
- on an error: ``error.type``, the error's class (``ProviderHTTPError``, ``AbortedError``,
  ...), and the status ERROR described by that name only (an error's text may quote content);
  a stream cancelled from outside (the gateway stops the calls it aborts so) is an
  ``AbortedError`` too;
- at the end of a client span: ``mmsp.attempts``, the attempts the attempt loop made
  (``mmsp_io._attempts``; retries and a renewed credential each count);
- on a gateway span, once the row serving the request is known: ``mmsp.gateway.row``, its
  place in the configuration (``models[<i>]``), and ``mmsp.gateway.attempts``, the rows of its
  group the request tried (08 D77; set by the gateway, ``annotate_current_span``).

The span starts when the call is first iterated and ends when the stream ends, fails, or is
closed or cancelled by its consumer. While the call runs (never across a ``yield``) the span
is the current one, so the upstream request of a client span carries the span's trace context
(the propagator's headers, added over the request's own), and the client span of a gateway
request is a child of the gateway's span. The gateway makes the caller's trace context, taken
from its request headers (``caller_context``), the current one while it answers, so its span
is a child of the caller's.

Message content is never recorded unless ``Telemetry.record_content`` is set; then a client
span carries ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
``gen_ai.output.messages`` as JSON in the conventions' shape: text, thinking (``reasoning``),
tool calls and tool results with their content, any other item named by its type only (media
bytes and vectors are left out).
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import aclosing, contextmanager
from typing import TYPE_CHECKING, Any, Final, final

import anyio
import attrs

from adapters import protocol_traits
from adapters.clients import client_spec, telemetry_provider
from mmsp_core.errors import AbortedError, UnsupportedOperationError
from mmsp_core.messages import concat_uni_events_to_uni_message
from mmsp_core.model import (
    DoneItem,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    ToolResultDone,
    UniEvent,
    UniMessage,
    UsageMetadata,
)

from ._attempts import Call
from ._settings import _FALSE_WORDS

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["OTEL_EXTRA", "OTEL_VARIABLE", "Spans", "Telemetry", "annotate_current_span",
           "caller_context", "telemetry_setting"]

#: The variable that turns spans on when ``telemetry`` is left out (module doc).
OTEL_VARIABLE: Final = "MMSP_OTEL"
#: What installs the package spans need.
OTEL_EXTRA: Final = "pip install 'mmsp-sansio[otel]'"
#: The instrumentation scope of every span.
_SCOPE: Final = "mmsp_io"
_FIRST_EVENT: Final = "mmsp.first_event"
#: The port of a base URL that names none.
_PORTS: Final = {"http": 80, "https": 443}

#: A call's stream, given what prepares it (``Sender.stream``).
Stream = Callable[[Callable[[], Awaitable[Call]]], AsyncGenerator[UniEvent, None]]


@final
@attrs.frozen
class Telemetry:
    """OpenTelemetry spans turned on (module doc): where they go and what they record.

    Args:
        record_content: record the system prompt, the messages sent and the answer on each
            call's span (off: no content is ever recorded).
        tracer_provider: an ``opentelemetry.trace.TracerProvider``; ``None``: the global one.
    """

    record_content: bool = False
    tracer_provider: Any = attrs.field(default=None, eq=False)


def telemetry_setting(telemetry: bool | Telemetry | None, client: str) -> Telemetry | None:
    """The spans setting of a ``client`` given ``telemetry`` (``None``: on when ``MMSP_OTEL``
    is set to anything but ``""``, 0, false, no, off), or ``None`` when spans are off.

    Raises:
        UnsupportedOperationError: spans are on but ``opentelemetry-api`` is not installed;
            the message names ``pip install 'mmsp-sansio[otel]'``.
        TypeError: ``telemetry`` is not a bool, a ``Telemetry`` or ``None``.
    """
    if telemetry is None:
        telemetry = os.environ.get(OTEL_VARIABLE, "").strip().lower() not in _FALSE_WORDS
    if isinstance(telemetry, bool):
        if not telemetry:
            return None
        telemetry = Telemetry()
    elif not isinstance(telemetry, Telemetry):
        raise TypeError(f"telemetry must be a bool or a mmsp_io.Telemetry (or None), "
                        f"not {type(telemetry).__name__}")
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        raise UnsupportedOperationError(
            client, "telemetry",
            detail=f"OpenTelemetry spans need opentelemetry-api: {OTEL_EXTRA}") from None
    return telemetry


@contextmanager
def caller_context(headers: Sequence[tuple[str, str]]) -> Iterator[None]:
    """Make the trace context that ``headers`` (a request's, names lower-cased) carry the
    current one within the block: the caller's ``traceparent``, read by the global
    propagator; without one, the current context stays."""
    from opentelemetry import context, propagate

    token = context.attach(propagate.extract(dict(headers)))
    try:
        yield
    finally:
        context.detach(token)


def annotate_current_span(attributes: Mapping[str, str | int]) -> None:
    """Set ``attributes`` on the current span: within a gateway request's call, its SERVER
    span (the serving row, 08 D77). Only with spans on: it imports opentelemetry."""
    from opentelemetry import trace

    trace.get_current_span().set_attributes(attributes)


@final
class Spans:
    """The spans of one client's calls, or of the gateway's requests to one row (module doc).

    Args:
        setting: spans are on, with these settings.
        client: the client type; ``model``: the model id it sends; ``base_url`` and
            ``api_key``: where and with what (they tell Azure and Vertex AI apart).
        served_as: the gateway's ``server_model_id`` for a SERVER span of a request;
            ``None``: CLIENT spans of the client's calls.

    Raises:
        RoutingError: an unknown client type.
    """

    def __init__(
        self, setting: Telemetry, *, client: str, model: str, base_url: str,
        api_key: str | None, served_as: str | None = None,
    ) -> None:
        from opentelemetry import trace

        self._record_content = setting.record_content
        self._tracer = trace.get_tracer(_SCOPE, tracer_provider=setting.tracer_provider)
        self._kind = trace.SpanKind.CLIENT if served_as is None else trace.SpanKind.SERVER
        self._model = model if served_as is None else served_as
        protocol = client_spec(client).speaks(model, base_url)[0]
        operation = protocol_traits(protocol).telemetry_operation
        self._name = f"{operation} {self._model}"
        self._attributes: dict[str, str | int] = {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": telemetry_provider(client, base_url, api_key),
            "gen_ai.request.model": self._model,
        }
        if served_as is None:
            self._attributes.update(_server_address(base_url))

    def observe_call(self, stream: Stream, prepare: Callable[[], Awaitable[Call]]
                     ) -> AsyncGenerator[UniEvent, None]:
        """``stream(prepare)`` in a CLIENT span, its upstream request carrying the span's
        trace context (module doc).

        Raises:
            MMSPError: what the stream raises, recorded on the span first.
        """
        calls: list[Call] = []

        async def prepared() -> Call:
            call = await prepare()
            request = attrs.evolve(call.request, headers=_with_trace_context(call.request.headers))
            calls.append(attrs.evolve(call, request=request))
            return calls[-1]

        return self._observe(stream(prepared), calls)

    def observe(self, events: AsyncGenerator[UniEvent, None]) -> AsyncGenerator[UniEvent, None]:
        """``events`` in a span (the gateway's SERVER span of a request, module doc).

        Raises:
            Exception: what ``events`` raises, recorded on the span first.
        """
        return self._observe(events, [])

    async def _observe(
        self, events: AsyncGenerator[UniEvent, None], calls: list[Call]
    ) -> AsyncGenerator[UniEvent, None]:
        """``events`` in a span that is current while the next event is awaited; ``calls``
        receives the call once prepared (attempts and content come from it)."""
        from opentelemetry import context, trace

        span = self._tracer.start_span(self._name, kind=self._kind, attributes=self._attributes)
        current = trace.set_span_in_context(span)
        started = anyio.current_time()
        done: list[UniEvent] = []  # the done items' events, kept only to record content
        first = True
        try:
            async with aclosing(events):
                while True:
                    token = context.attach(current)
                    try:
                        event = await anext(events, None)
                    finally:
                        context.detach(token)
                    if event is None:
                        break
                    if first:
                        first = False
                        span.add_event(_FIRST_EVENT, {"mmsp.time_to_first_event_s":
                                                      round(anyio.current_time() - started, 6)})
                    if event.event_type == "stop":
                        self._stopped(span, event, done)
                    elif self._record_content and isinstance(event.content_items[0], DoneItem):
                        done.append(event)
                    yield event
        except anyio.get_cancelled_exc_class():
            # Stopped from outside (a cancel scope, as the gateway stops a call it aborts):
            # named as the library names an abort.
            _failed(span, AbortedError.__name__)
            raise
        except Exception as exc:
            _failed(span, type(exc).__name__)
            raise
        finally:
            if calls:
                self._called(span, calls[0])
            span.end()

    def _stopped(self, span: Span, stop: UniEvent, done: list[UniEvent]) -> None:
        """Record the stop: the model, the finish reason, the usage, the answer (module doc)."""
        span.set_attribute("gen_ai.response.model", self._model)
        if stop.finish_reason is not None:
            span.set_attribute("gen_ai.response.finish_reasons", (stop.finish_reason.value,))
        if stop.usage_metadata is not None:
            span.set_attributes(_usage_attributes(stop.usage_metadata))
        if self._record_content:
            answer = concat_uni_events_to_uni_message([*done, stop])
            span.set_attribute("gen_ai.output.messages", _content([answer]))

    def _called(self, span: Span, call: Call) -> None:
        """Record what the call tells at its end: its attempts and, if asked, its input."""
        span.set_attribute("mmsp.attempts", len(call.log.attempts))
        if self._record_content:
            span.set_attribute("gen_ai.input.messages", _content(call.plan.messages))
            if call.plan.config.system_prompt is not None:
                span.set_attribute("gen_ai.system_instructions", _json(
                    [{"type": "text", "content": call.plan.config.system_prompt}]))


def _failed(span: Span, error_type: str) -> None:
    """Mark ``span`` as ended by an error of class ``error_type`` (``error.type``)."""
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, error_type))


def _with_trace_context(headers: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """``headers`` with the current trace context's (``traceparent``, ...) over their own."""
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    kept = [(name, value) for name, value in headers if name.lower() not in carrier]
    return (*kept, *carrier.items())


def _server_address(base_url: str) -> dict[str, str | int]:
    """``server.address`` and ``server.port`` of an http(s) ``base_url`` (the scheme's port
    when it names none); nothing for another one (``bedrock://<region>`` names a cloud)."""
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in _PORTS or parts.hostname is None:
        return {}
    return {"server.address": parts.hostname, "server.port": parts.port or _PORTS[parts.scheme]}


def _usage_attributes(usage: UsageMetadata) -> dict[str, int]:
    """The ``gen_ai.usage.*`` attributes of the counts ``usage`` reports (module doc)."""
    counts = {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cached_tokens,
        "gen_ai.usage.reasoning.output_tokens": usage.thoughts_tokens,
        "gen_ai.usage.output_tokens": (
            None if usage.response_tokens is None and usage.thoughts_tokens is None
            else (usage.response_tokens or 0) + (usage.thoughts_tokens or 0)),
    }
    return {name: count for name, count in counts.items() if count is not None}


def _content(messages: Sequence[UniMessage]) -> str:
    """``messages`` as the GenAI conventions' message list, in JSON (module doc)."""
    return _json([{"role": message.role, "parts": [_part(item) for item in message.content_items]}
                  for message in messages])


def _json(value: Any) -> str:
    """``value`` in JSON, a mapping of another type as an object; a value nested too deeply
    to write is recorded as a string saying so (08 D59: recording never fails a call)."""
    try:
        return json.dumps(value, ensure_ascii=False,
                          default=lambda other: dict(other) if isinstance(other, Mapping)
                          else repr(other))
    except RecursionError:
        return json.dumps("(content nested too deeply to record)")


def _part(item: DoneItem) -> dict[str, Any]:
    """One item as a part of a message of the GenAI conventions (module doc)."""
    if isinstance(item, TextDone):
        return {"type": "text", "content": item.text}
    if isinstance(item, ThinkingDone):
        return {"type": "reasoning", "content": item.thinking}
    if isinstance(item, ToolCallDone):
        return {"type": "tool_call", "id": item.tool_call_id, "name": item.name,
                "arguments": item.arguments}
    if isinstance(item, ToolResultDone):
        return {"type": "tool_call_response", "id": item.tool_call_id, "response": item.text}
    return {"type": item.type}
